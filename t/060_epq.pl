# READ COMMITTED update through GpuIndexScan while another session changes
# the key of a matching row: EvalPlanQual rechecks the new row version
# against the batch, so the row that no longer matches is left alone.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;
use IPC::Run;

my $node = gpuidx_node('epq', q{
jit = off
});
$node->safe_psql('postgres', q{
CREATE EXTENSION gpuidx;
CREATE TABLE ep (id int, k int8, pad text);
INSERT INTO ep SELECT g, g % 100, 'x' FROM generate_series(1, 10000) g;
CREATE INDEX ep_k ON ep USING gpuidx (k);
VACUUM ANALYZE ep;
});

# Session 1 moves row 5 from key 5 to key 999 and holds its lock a while.
my ($out1, $err1) = ('', '');
my $s1 = IPC::Run::start(
	[
		'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		'-c', 'BEGIN', '-c', 'UPDATE ep SET k = 999 WHERE id = 5',
		'-c', 'SELECT pg_sleep(2)', '-c', 'COMMIT'
	],
	'>', \$out1, '2>', \$err1);
$node->poll_query_until('postgres',
	q{SELECT count(*) > 0 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(2)'})
  or die 'session 1 did not start';

# Session 2 updates key 5 through GpuIndexScan; it waits on row 5's lock.
my $plan = $node->safe_psql('postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexscan = off;
EXPLAIN (COSTS OFF) UPDATE ep SET pad = 'z' WHERE k = ANY('{5}')});
like($plan, qr/GpuIndexScan/, 'the update runs through GpuIndexScan');
is( $node->safe_psql('postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off; SET enable_indexscan = off;
WITH u AS (UPDATE ep SET pad = 'z' WHERE k = ANY('{5}') RETURNING id) SELECT count(*) FROM u}),
	'99', 'the row whose key moved away is not updated');
ok($s1->finish, 'session 1 committed') or diag($err1);
is($node->safe_psql('postgres', q{SELECT k || ' ' || pad FROM ep WHERE id = 5}),
	'999 x', 'row 5 carries the new key and its old pad');

$node->stop;
done_testing();
