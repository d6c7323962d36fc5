# Readers compare, inside one REPEATABLE READ snapshot, every way gpuidx
# answers (gpuidx_lookup, a full index-only scan, an index-only scan with the
# probes as keys, GpuIndexScan with its key-only rows, GpuIndexAgg's count
# from the image) with a sequential scan,
# while a writer inserts, deletes, updates keys, vacuums, and (second phase)
# folds the pending lanes often and reindexes, plainly and concurrently.
#
# This caught the scan/VACUUM race of issue 11: a scan holding an image from
# before a VACUUM counted entries VACUUM had removed as live rows, once the
# heap had freed their TIDs and marked the pages all-visible (cache.c, "The
# scan interlock").  GPUIDX_STRESS_SECONDS sets each phase's length.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;
use IPC::Run;
use File::Temp qw(tempdir);

my $seconds = $ENV{GPUIDX_STRESS_SECONDS} // 40;
my $node = gpuidx_node('vacuum_interlock', q{
jit = off
autovacuum = off
max_connections = 20
});

$node->safe_psql('postgres', q{
CREATE EXTENSION gpuidx;
CREATE TABLE dc (id serial, k int8, v int);
INSERT INTO dc (k, v) SELECT i % 1000, i FROM generate_series(1, 100000) i;
CREATE INDEX dc_g ON dc USING gpuidx (k);
CREATE TABLE dv (id serial, k int8, v int);
INSERT INTO dv (k, v) SELECT i % 1000, i FROM generate_series(1, 100000) i;
CREATE INDEX dv_g ON dv USING gpuidx (k) WITH (structure = veb);

-- Every gpuidx answer for the probes, against a sequential scan, in the
-- caller's snapshot; raises an error naming the counts when one differs.
CREATE FUNCTION check_answers(idx regclass, tbl regclass, probes int8[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
  lookup bigint; full_ios bigint; ios bigint; custom bigint; agg bigint; seq bigint;
BEGIN
  BEGIN
    SELECT count(*) INTO lookup FROM gpuidx_lookup(idx, probes);
  EXCEPTION WHEN object_not_in_prerequisite_state OR undefined_table THEN
    -- REINDEX CONCURRENTLY swapped the name between its resolution and the
    -- call: the OID now names the old index, invalid, or dropped.
    INSERT INTO checks VALUES (idx, -1);
    RETURN;
  END;
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  PERFORM set_config('gpuidx.enable_customscan', 'off', true);
  PERFORM set_config('gpuidx.enable_customagg', 'off', true);
  EXECUTE format('SELECT count(*) FROM (SELECT k FROM %s OFFSET 0) s WHERE k = ANY($1)', tbl)
    INTO full_ios USING probes;
  EXECUTE format('SELECT count(*) FROM %s WHERE k = ANY($1)', tbl) INTO ios USING probes;
  PERFORM set_config('gpuidx.enable_customscan', 'on', true);
  PERFORM set_config('enable_indexonlyscan', 'off', true);
  PERFORM set_config('enable_indexscan', 'off', true);
  EXECUTE format('SELECT count(k) FROM %s WHERE k = ANY($1)', tbl) INTO custom USING probes;
  PERFORM set_config('gpuidx.enable_customscan', 'off', true);
  PERFORM set_config('gpuidx.enable_customagg', 'on', true);
  EXECUTE format('SELECT count(*) FROM %s WHERE k = ANY($1)', tbl) INTO agg USING probes;
  PERFORM set_config('gpuidx.enable_customagg', 'off', true);
  PERFORM set_config('enable_seqscan', 'on', true);
  EXECUTE format('SELECT count(*) FROM %s WHERE k = ANY($1)', tbl) INTO seq USING probes;
  IF lookup <> seq OR full_ios <> seq OR ios <> seq OR custom <> seq OR agg <> seq THEN
    RAISE EXCEPTION 'gpuidx answers differ on %: lookup %, full index-only scan %, index-only scan %, custom scan %, GpuIndexAgg %, sequential scan %',
      idx, lookup, full_ios, ios, custom, agg, seq;
  END IF;
  INSERT INTO checks VALUES (idx, seq);
END $$;
CREATE UNLOGGED TABLE checks (idx regclass, rows bigint);
});

# The plans the checker relies on.
my $plans = $node->safe_psql('postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off; SET gpuidx.enable_customscan = off;
SET gpuidx.enable_customagg = off;
EXPLAIN (COSTS OFF) SELECT count(*) FROM (SELECT k FROM dc OFFSET 0) s WHERE k = ANY('{1,2}');
EXPLAIN (COSTS OFF) SELECT count(*) FROM dv WHERE k = ANY('{1,2}');
SET gpuidx.enable_customscan = on; SET enable_indexonlyscan = off; SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT count(k) FROM dc WHERE k = ANY('{1,2}');
SET gpuidx.enable_customscan = off; SET gpuidx.enable_customagg = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM dv WHERE k = ANY('{1,2}');
});
like($plans, qr/Index Only Scan using dc_g on dc\n.*Index Only Scan using dv_g on dv.*GpuIndexScan.*GpuIndexAgg/s,
	'the checker runs index-only scans, GpuIndexScan and GpuIndexAgg');

my $dir = tempdir(CLEANUP => 1);
my %script = (
	insert => q{INSERT INTO TBL (k, v) SELECT (random() * 1000)::int, 1 FROM generate_series(1, 500);},
	delete => q{DELETE FROM TBL WHERE id IN (SELECT id FROM TBL ORDER BY random() LIMIT 200);},
	vacuum => q{VACUUM TBL;},
	up => q{UPDATE TBL SET k = k + 1 WHERE k = 2;},
	down => q{UPDATE TBL SET k = 2 WHERE k = 3;},
	reindex => q{REINDEX INDEX IDX;},
	reindex_cc => q{REINDEX INDEX CONCURRENTLY IDX;},
	check => q{BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT check_answers('IDX', 'TBL', '{1,2,3,500}');
COMMIT;},
);

# Write one pgbench script per table; returns its -f arguments.
sub scripts
{
	my ($names, $weights) = @_;
	my @args;
	for my $t (['dc', 'dc_g'], ['dv', 'dv_g'])
	{
		for my $i (0 .. $#$names)
		{
			my $file = "$dir/$names->[$i]_$t->[0].sql";
			(my $sql = $script{ $names->[$i] }) =~ s/TBL/$t->[0]/g;
			$sql =~ s/IDX/$t->[1]/g;
			open my $fh, '>', $file or die $!;
			print $fh "$sql\n";
			close $fh;
			push @args, '-f', "$file\@$weights->[$i]";
		}
	}
	return @args;
}

# One writer client and two checking clients for the given seconds.
sub run_phase
{
	my ($name, $writes, $weights) = @_;
	my @common = ('pgbench', '--no-vacuum', '-n', '-T', $seconds, '-h', $node->host,
		'-p', $node->port, 'postgres');
	my ($wout, $werr, $cout, $cerr) = ('', '', '', '');
	my $w = IPC::Run::start([ @common, '-c', '1', scripts($writes, $weights) ],
		'>', \$wout, '2>', \$werr);
	my $c = IPC::Run::start([ @common, '-c', '2', scripts(['check'], [1]) ],
		'>', \$cout, '2>', \$cerr);
	my $c_ok = $c->finish;
	my $w_ok = $w->finish;
	my ($bad) = $cerr =~ /(gpuidx answers differ[^\n]*)/;
	is($bad // '', '', "$name: every answer equals the sequential scan");
	ok($c_ok, "$name: checkers ran to the end") or diag($cerr);
	ok($w_ok, "$name: writer ran to the end") or diag($werr);
	my ($done) = $cout =~ /(number of transactions actually processed: \d+)/;
	note("$name, checkers: " . ($done // '?'));
}

run_phase('DML and VACUUM', [qw(insert delete vacuum up down)], [2, 2, 1, 1, 1]);

$node->append_conf('postgresql.conf', 'gpuidx.pending_limit = 700');
$node->reload;
run_phase('folds and reindex',
	[qw(insert delete vacuum up down reindex reindex_cc)], [3, 2, 1, 1, 1, 1, 1]);

my $checks = $node->safe_psql('postgres', q{SELECT count(*) FROM checks WHERE rows > 0});
cmp_ok($checks, '>', 20, "the checkers compared non-empty answers ($checks times)");
my $swapped = $node->safe_psql('postgres', q{SELECT count(*) FROM checks WHERE rows < 0});
cmp_ok($swapped, '<', $checks / 4, "few checks met a concurrent name swap ($swapped)");
for my $idx (qw(dc_g dv_g))
{
	is($node->safe_psql('postgres', "SELECT gpuidx_verify('$idx')"), 't', "$idx verifies");
}

$node->stop;
done_testing();
