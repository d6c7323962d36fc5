# tools/demo's "plans" stage (gib_plans in tools/lib/gibench.sh) cuts each
# plan to its first lines: it must read psql's whole output, so psql is never
# killed by a broken pipe (the demo printed "Broken pipe" twice).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;

my $engine = $ENV{GPUIDX_ENGINE} // 'auto';
my $node = PostgreSQL::Test::Cluster->new('demo_plans');
$node->init;
$node->append_conf('postgresql.conf', qq{
gpuidx.engine = '$engine'
autovacuum = off
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION gpuidx');

my $root = "$FindBin::Bin/..";
my $connstr = $node->connstr('postgres');
# pgc_psql as tools/lib/pgcluster.sh has it, but reporting how psql ended.
my $script = <<"SH";
set -euo pipefail
source '$root/tools/lib/common.sh'
source '$root/tools/lib/gibench.sh'
pgc_psql() {
    local rc=0
    psql -X -v ON_ERROR_STOP=1 -q -d '$connstr' "\$@" || rc=\$?
    if [[ \$rc -ne 0 ]]; then echo "psql ended with status \$rc" >&2; fi
    return \$rc
}
export PGOPTIONS="-c client_min_messages=warning"
gib_load 20000 100000 >/dev/null
# the plans of the demo's big table: bitmap scans, whose later lines carry
# the whole probe array (the 10^5 probes on one line)
export PGOPTIONS="-c enable_seqscan=off -c enable_indexscan=off -c gpuidx.enable_customscan=off"
gib_plans "any lookup pred rcount" 100000
SH
my ($stdout, $stderr);
my $ok = IPC::Run::run([ 'bash', '-c', $script ], '>', \$stdout, '2>', \$stderr);
ok($ok, 'gib_plans ran');
is($stderr, '', 'no psql ended early, nothing on stderr');
like($stdout, qr/any via gpuidx:\n    \S/, 'the gpuidx plan of "any" is shown');
like($stdout, qr/rcount via btree:\n    \S/, 'the btree plan of "rcount" is shown');
like($stdout, qr/any via btree:\n    Aggregate\n.*Bitmap Heap Scan.*\n.*Recheck Cond.*\n.*Bitmap Index Scan.*\n  any via gpuidx/,
	'the first four lines of a long plan are shown');

$node->stop;
done_testing();
