# READ COMMITTED UPDATE ... FROM and DELETE ... USING through GpuIndexJoin
# while another session changes a matching row and holds its lock:
# EvalPlanQual rechecks the new row version against the join, so a row whose
# key moved away is left alone and a row whose key stayed is changed once.
# Each race runs twice on fresh tables, through GpuIndexJoin and through
# PostgreSQL's own plan (hash join over sequential scans); both must end in
# the same state, and in the state worked out here.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;
use IPC::Run;
use Time::HiRes qw(time);

my $node = gpuidx_node('join_epq', q{
jit = off
});
$node->safe_psql('postgres', 'CREATE EXTENSION gpuidx');

# The planner settings of each way: GpuIndexJoin forced, or PostgreSQL's
# own join over sequential scans.
my %settings = (
	join => 'SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off;',
	reference => 'SET gpuidx.enable_customjoin = off; SET gpuidx.enable_customscan = off; '
	  . 'SET enable_indexscan = off; SET enable_bitmapscan = off;');

# Fresh tables: ep has keys 0..99, 100 rows each (row id has key id % 100);
# o holds the outer keys of the race.
sub reset_tables
{
	my ($keys) = @_;
	$node->safe_psql('postgres', qq{
DROP TABLE IF EXISTS ep, o;
CREATE TABLE ep (id int, k int8, n int, pad text);
INSERT INTO ep SELECT g, g % 100, 0, 'x' FROM generate_series(1, 10000) g;
CREATE INDEX ep_k ON ep USING gpuidx (k);
CREATE TABLE o (x int8);
INSERT INTO o SELECT unnest('$keys'::int8[]);
VACUUM ANALYZE ep, o;
});
	return;
}

# The rows of ep that differ from the initial state, as text.
sub changed_rows
{
	return $node->safe_psql('postgres', q{
SELECT coalesce(string_agg(id || ':' || k || ':' || n || ':' || pad, ' ' ORDER BY id), 'none')
  FROM ep WHERE k <> id % 100 OR n <> 0 OR pad <> 'x'});
}

# One race, one way ($way: join or reference): session 1 runs $lock_sql in
# a transaction and sleeps holding the row lock; session 2 then runs $stmt
# (which returns a count) and waits for that lock.  Returns session 2's
# answer, the rows of ep that changed, and how many rows ep has.
sub race
{
	my ($label, $way, $keys, $lock_sql, $stmt) = @_;
	reset_tables($keys);
	my $set = $settings{$way};
	my $plan = $node->safe_psql('postgres', "$set EXPLAIN (COSTS OFF) $stmt");
	if ($way eq 'join')
	{
		like($plan, qr/Custom Scan \(GpuIndexJoin\)/, "$label: the statement runs through GpuIndexJoin");
	}
	else
	{
		unlike($plan, qr/GpuIndex/, "$label: the reference runs without gpuidx");
	}

	my ($out1, $err1) = ('', '');
	my $s1 = IPC::Run::start(
		[
			'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
			'-c', 'BEGIN', '-c', $lock_sql,
			'-c', 'SELECT pg_sleep(2)', '-c', 'COMMIT'
		],
		'>', \$out1, '2>', \$err1);
	$node->poll_query_until('postgres',
		q{SELECT count(*) > 0 FROM pg_stat_activity WHERE query = 'SELECT pg_sleep(2)'})
	  or die 'session 1 did not start';
	my $start = time();
	my $answer = $node->safe_psql('postgres', "$set $stmt");
	my $waited = time() - $start;
	ok($s1->finish, "$label ($way): session 1 committed") or diag($err1);
	cmp_ok($waited, '>', 0.5, "$label ($way): session 2 waited for the row lock");
	my $rows = $node->safe_psql('postgres', 'SELECT count(*) FROM ep');
	return ($answer, changed_rows(), $rows);
}

# The ids of the rows with key $k at the start.
sub ids_of
{
	my ($k) = @_;
	return map { $_ * 100 + $k } 0 .. 99;
}

# The text changed_rows() gives for rows @ids: $fn(id) makes each row's text.
sub rows_text
{
	my ($fn, @ids) = @_;
	return join(' ', map { $fn->($_) } sort { $a <=> $b } @ids);
}

# Run a race both ways; check the GpuIndexJoin way against the expected
# answer and state, and the reference way against the same.
sub check_race
{
	my ($label, $keys, $lock_sql, $stmt, $want_answer, $want_changed, $want_rows) = @_;
	for my $way ('reference', 'join')
	{
		my ($answer, $changed, $rows) = race($label, $way, $keys, $lock_sql, $stmt);
		is($answer, $want_answer, "$label ($way): rows changed by the statement");
		is($rows, $want_rows, "$label ($way): rows left in the table");
		is($changed, $want_changed, "$label ($way): the rows that differ from the start");
	}
	return;
}

# 1. Row 5's key moves from 5 to 999 under the update: it no longer joins,
# so it keeps its old pad; the 99 other rows with key 5 are updated.
check_race('update, key moved away', '{5}',
	'UPDATE ep SET k = 999 WHERE id = 5',
	q{WITH u AS (UPDATE ep SET pad = 'z' FROM o WHERE ep.k = o.x RETURNING ep.id) SELECT count(*) FROM u},
	'99',
	rows_text(sub { $_[0] == 5 ? '5:999:0:x' : "$_[0]:5:0:z" }, ids_of(5)),
	'10000');

# 2. Row 6 keeps its key; session 1 adds 100 to n: the update adds 1 on top
# of that, once (row 6 ends with n = 101), and every row with key 6 or 60
# is updated.
check_race('update, key kept', '{6,60}',
	'UPDATE ep SET n = n + 100 WHERE id = 6',
	q{WITH u AS (UPDATE ep SET n = n + 1 FROM o WHERE ep.k = o.x RETURNING ep.id) SELECT count(*) FROM u},
	'200',
	rows_text(sub { $_[0] == 6 ? '6:6:101:x' : "$_[0]:" . ($_[0] % 100) . ':1:x' }, ids_of(6), ids_of(60)),
	'10000');

# 3. Row 9's key moves from 9 to 90, another key of the join: EvalPlanQual
# rechecks the new version against the outer row it was joined with (x = 9),
# which no longer matches; the statement's snapshot never saw key 90 on
# row 9, so the row is not updated at all.
check_race('update, key moved to another outer key', '{9,90}',
	'UPDATE ep SET k = 90 WHERE id = 9',
	q{WITH u AS (UPDATE ep SET pad = 'z' FROM o WHERE ep.k = o.x RETURNING ep.id) SELECT count(*) FROM u},
	'199',
	rows_text(sub { $_[0] == 9 ? '9:90:0:x' : "$_[0]:" . ($_[0] % 100) . ':0:z' }, ids_of(9), ids_of(90)),
	'10000');

# 4. A range join (keys x .. x + 1) while row 5's key moves from 5 to 999:
# the rows with keys 5 and 6 but row 5 are updated.
check_race('range update, key moved away', '{5}',
	'UPDATE ep SET k = 999 WHERE id = 5',
	q{WITH u AS (UPDATE ep SET pad = 'z' FROM o WHERE ep.k BETWEEN o.x AND o.x + 1 RETURNING ep.id) SELECT count(*) FROM u},
	'199',
	rows_text(sub { $_[0] == 5 ? '5:999:0:x' : "$_[0]:" . ($_[0] % 100) . ':0:z' }, ids_of(5), ids_of(6)),
	'10000');

# 5. DELETE ... USING while row 7's key moves from 7 to 1000: row 7 stays,
# the 99 other rows with key 7 and the 100 with key 70 go.
check_race('delete, key moved away', '{7,70}',
	'UPDATE ep SET k = 1000 WHERE id = 7',
	q{WITH d AS (DELETE FROM ep USING o WHERE ep.k = o.x RETURNING ep.id) SELECT count(*) FROM d},
	'199', '7:1000:0:x', '9801');

# 6. DELETE ... USING while row 8 is updated with its key kept: row 8 is
# deleted with the rest of key 8.
check_race('delete, key kept', '{8}',
	q{UPDATE ep SET pad = 'locked' WHERE id = 8},
	q{WITH d AS (DELETE FROM ep USING o WHERE ep.k = o.x RETURNING ep.id) SELECT count(*) FROM d},
	'100', 'none', '9900');

# 7. UPDATE ... FROM and DELETE ... USING through GpuIndexJoin on a table
# whose HOT chains VACUUM pruned (the index points at redirect line
# pointers; the pages are all-visible, so a key-only join may skip the
# heap): the statements change the visible tuples, and the cluster still
# recovers from a crash afterwards (the WAL it wrote replays).
$node->safe_psql('postgres', q{
CREATE TABLE hot (id int, k int8, n int, pad text) WITH (fillfactor = 50, autovacuum_enabled = off);
INSERT INTO hot SELECT g, g % 100, 0, 'x' FROM generate_series(1, 2000) g;
CREATE INDEX hot_k ON hot USING gpuidx (k);
UPDATE hot SET pad = 'hot' WHERE id % 2 = 0;
VACUUM hot;
CREATE TABLE ho (x int8);
INSERT INTO ho VALUES (2), (3), (4);
ANALYZE hot, ho;
});
my $join = $settings{join};
like($node->safe_psql('postgres', "$join EXPLAIN (COSTS OFF) UPDATE hot SET pad = 'upd' FROM ho WHERE hot.k = ho.x"),
	qr/Custom Scan \(GpuIndexJoin\)/, 'HOT table: the update runs through GpuIndexJoin');
like($node->safe_psql('postgres', "$join EXPLAIN (COSTS OFF) DELETE FROM hot USING ho WHERE hot.k = ho.x"),
	qr/Custom Scan \(GpuIndexJoin\)/, 'HOT table: the delete runs through GpuIndexJoin');
my ($rc, $out, $err) = $node->psql('postgres',
	"$join WITH u AS (UPDATE hot SET pad = 'upd' FROM ho WHERE hot.k = ho.x AND ho.x = 2 RETURNING hot.id) SELECT count(*) FROM u");
is("$rc $out", '0 20', 'HOT table: UPDATE ... FROM changes the 20 rows of key 2') or diag($err);
is($node->safe_psql('postgres', q{SELECT count(*) FROM hot WHERE pad = 'upd'}), '20',
	'HOT table: 20 rows carry the new pad');
$node->safe_psql('postgres', 'VACUUM hot');
($rc, $out, $err) = $node->psql('postgres',
	"$join WITH d AS (DELETE FROM hot USING ho WHERE hot.k = ho.x AND ho.x = 3 RETURNING hot.id) SELECT count(*) FROM d");
is("$rc $out", '0 20', 'HOT table: DELETE ... USING removes the 20 rows of key 3') or diag($err);
$node->safe_psql('postgres', 'VACUUM hot');
($rc, $out, $err) = $node->psql('postgres', "$join DELETE FROM hot USING ho WHERE hot.k = ho.x");
is($rc, 0, 'HOT table: DELETE ... USING (keys 2 and 4) without RETURNING') or diag($err);
my $recovered = eval {
	$node->stop('immediate');
	$node->start;
	1;
};
ok($recovered, 'the cluster recovers from a crash after the writes') or diag($@);
if ($recovered)
{
	is( $node->safe_psql('postgres', q{
SELECT count(*) || ' ' || count(*) FILTER (WHERE pad = 'upd') || ' ' || count(*) FILTER (WHERE k IN (2, 3, 4)) FROM hot}),
		'1940 0 0', 'HOT table: 2000 rows less the 60 deleted, none updated left, none with a deleted key');
}

$node->stop if $recovered;
done_testing();
