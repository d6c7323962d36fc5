# The per-backend image cache: a long-lived session keeps its cached image
# while other sessions insert (pending list), delete, VACUUM (fold), fold by
# the pending limit, REINDEX, TRUNCATE, and drop and recreate the index under
# the same name; after each change the long-lived session's answers are
# checked at once (every batch function and index scan against sequential
# scans, computed in that same session).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;

my $node = gpuidx_node('cache', q{
autovacuum = off
});
$node->safe_psql('postgres', $setup_sql . $check_sql);

my $long = $node->background_psql('postgres', on_error_stop => 0);
my $checks = "SELECT fn || '|' || ref_rows || '|' || missing || '|' || extra FROM gi_check('t_gi', "
  . "(SELECT keys FROM probes), (SELECT lo FROM probes), (SELECT hi FROM probes)) "
  . "UNION ALL SELECT fn || '|' || ref_rows || '|' || missing || '|' || extra FROM plan_check('t', (SELECT keys FROM probes));";

sub check_long
{
	my ($label) = @_;
	verify_session($long, $checks, 10, $label);
	return;
}

# the long-lived session loads and caches the image
check_long('first use');

$node->safe_psql('postgres', 'SET gpuidx.pending_limit = 1000000; '
	  . 'INSERT INTO t (k) SELECT (random() * 4000 - 2000)::int8 FROM generate_series(1, 500);');
ok($node->safe_psql('postgres', "SELECT (gpuidx_info('t_gi')->>'pending_entries')::int >= 500") eq 't',
	'another session added pending entries');
check_long('after inserts by another session');

$node->safe_psql('postgres', 'DELETE FROM t WHERE id % 3 = 0; UPDATE t SET k = -k WHERE id % 5 = 0 AND k > -9223372036854775808;');
check_long('after deletes and key updates by another session');

$node->safe_psql('postgres', 'VACUUM t');
check_long('after VACUUM (fold) by another session');

# TIDs freed by VACUUM are reused by new rows with other keys
$node->safe_psql('postgres', 'INSERT INTO t (k) SELECT (random() * 4000 - 2000)::int8 FROM generate_series(1, 2000);');
check_long('after TIDs were reused');

$node->safe_psql('postgres', 'SET gpuidx.pending_limit = 100; '
	  . 'INSERT INTO t (k) SELECT (random() * 4000 - 2000)::int8 FROM generate_series(1, 150);');
check_long('after a fold by the pending limit in another session');

$node->safe_psql('postgres', 'REINDEX INDEX t_gi');
check_long('after REINDEX by another session');

$node->safe_psql('postgres', 'TRUNCATE t; INSERT INTO t (k) SELECT (random() * 400 - 200)::int8 FROM generate_series(1, 3000);');
check_long('after TRUNCATE and refill by another session');

$node->safe_psql('postgres', 'DROP INDEX t_gi; DELETE FROM t WHERE k < 0; CREATE INDEX t_gi ON t USING gpuidx (k);');
check_long('after the index was dropped and created again under its name');

# the long-lived session's own writes, in and out of a transaction
my ($out, $err) = $long->query("BEGIN; INSERT INTO t (k) SELECT 7777 FROM generate_series(1, 10); "
	  . "SELECT count(*) FROM gpuidx_lookup('t_gi', '{7777}');");
is($out, '10', 'own uncommitted rows are seen');
($out, $err) = $long->query("ROLLBACK; SELECT count(*) FROM gpuidx_lookup('t_gi', '{7777}');");
is($out, '0', 'rolled-back rows are not');
check_long('after a rolled-back transaction of its own');

$long->quit;
$node->stop;
done_testing();
