# Pending lanes: sessions inserting at once append to different lanes (and
# more sessions than lanes share some).  Every entry of every lane is found:
# by a long-lived session whose image takes each lane's new entries
# incrementally, by fresh sessions, by gpuidx_verify and against a btree.
# gpuidx.pending_limit counts all lanes together; a fold after multi-lane
# appends keeps every entry; a crash after them loses none.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;

my $node = gpuidx_node('lanes', q{
gpuidx.pending_limit = 1000000
autovacuum = off
max_connections = 30
wal_consistency_checking = 'generic'
});
$node->safe_psql('postgres', $setup_sql . $check_sql . $btree_sql);

my $long = $node->background_psql('postgres', on_error_stop => 0);
my $checks = "SELECT fn || '|' || ref_rows || '|' || missing || '|' || extra FROM gi_check('t_gi', "
  . "(SELECT keys FROM probes), (SELECT lo FROM probes), (SELECT hi FROM probes));";

# The long-lived session's answers against sequential scans in that session.
sub check_long
{
	my ($label) = @_;
	verify_session($long, $checks, 5, $label);
	return;
}

# Ten clients at once: eight lanes, so some lanes take two sessions.
my $round = 0;
sub insert_from_many
{
	my ($label, $transactions) = @_;
	my $total = 10 * $transactions;
	$round++;
	$node->pgbench(
		"--no-vacuum --client=10 --jobs=10 --transactions=$transactions",
		0,
		[qr{processed: $total/$total}],
		[qr{^$}],
		$label,
		{
			"gpuidx_lanes_$round" => q{
\set k random(-2000, 2000)
INSERT INTO t (k) VALUES (:k), (:k + 1), (CASE WHEN :k % 7 = 0 THEN NULL ELSE 0 - :k END);
}
		});
	return;
}

# gpuidx_info of a fresh session, and the table's own count.
sub info
{
	return $node->safe_psql('postgres', q{
SELECT (j->>'entries')::bigint = (SELECT count(k) FROM t), (j->>'pending_entries')::bigint,
       (j->>'pending_lanes')::int, (j->>'generation')::bigint
  FROM gpuidx_info('t_gi') j});
}

check_long('before the concurrent inserts');

insert_from_many('ten clients insert (round 1)', 200);
my ($match, $pending, $lanes, $gen0) = split /\|/, info();
is($match, 't', 'a fresh session finds every entry of every lane');
cmp_ok($pending, '>=', 10 * 200 * 2, 'the inserts are pending');
cmp_ok($lanes, '>', 1, 'the inserts went to several lanes');
is($node->safe_psql('postgres', "SELECT gpuidx_verify('t_gi')"), 't', 'gpuidx_verify passes (round 1)');
check_long('after multi-lane inserts (incremental per lane)');

insert_from_many('ten clients insert (round 2)', 200);
check_long('after more multi-lane inserts (incremental past each lane\'s position)');
is( $long->query_safe(q{SELECT (j->>'entries')::bigint = (SELECT count(k) FROM t) FROM gpuidx_info('t_gi') j}),
	't', 'the long-lived session\'s image holds every entry');
verify_btree($node, 'multi-lane pending entries');

# A fold after multi-lane appends keeps every entry.
$node->safe_psql('postgres', 'SET gpuidx.pending_limit = 10; INSERT INTO t (k) VALUES (12345);');
my ($match2, $pending2, $lanes2, $gen1) = split /\|/, info();
is($match2, 't', 'the fold kept every entry');
is($pending2, '0', 'the fold emptied every lane');
cmp_ok($gen1, '>', $gen0, 'the fold made a new generation');
is($node->safe_psql('postgres', "SELECT gpuidx_verify('t_gi')"), 't', 'gpuidx_verify passes after the fold');
check_long('after a fold of multi-lane entries');
verify($node, 'after the fold');

# The limit counts all lanes: 10 clients x 100 x 3 rows cross 1500 in total
# while no lane alone gets near it.
$node->safe_psql('postgres', 'ALTER SYSTEM SET gpuidx.pending_limit = 1500; SELECT pg_reload_conf();');
insert_from_many('ten clients insert past the limit in total', 100);
my ($match3, $pending3, $lanes3, $gen2) = split /\|/, info();
is($match3, 't', 'every entry after folds by the total');
cmp_ok($gen2, '>', $gen1, 'the total pending count triggered a fold');
cmp_ok($pending3, '<', 1500, 'the pending lanes are below the limit again');
is($node->safe_psql('postgres', "SELECT gpuidx_verify('t_gi')"), 't', 'gpuidx_verify passes after folds by the total');
check_long('after folds by the total');

# A crash with entries pending in several lanes: WAL replay keeps them all.
$node->safe_psql('postgres', 'ALTER SYSTEM SET gpuidx.pending_limit = 1000000; SELECT pg_reload_conf();');
insert_from_many('ten clients insert before a crash', 150);
my ($match4, $pending4, $lanes4) = split /\|/, info();
cmp_ok($lanes4, '>', 1, 'several lanes hold entries before the crash');
$long->quit;
$node->stop('immediate');
$node->start;
my ($match5, $pending5, $lanes5) = split /\|/, info();
is($match5, 't', 'every entry survives the crash');
is($pending5, $pending4, 'the pending lanes are as before the crash');
is($node->safe_psql('postgres', "SELECT gpuidx_verify('t_gi')"), 't', 'gpuidx_verify passes after the crash');
verify($node, 'after the crash');
verify_btree($node, 'after the crash');

$node->stop;
done_testing();
