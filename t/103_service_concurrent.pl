# Several backends' batches at once in the gpuidx service (service mode
# only): pgbench clients run batches (= ANY, also summed by the service,
# gpuidx_lookup, gpuidx_predecessor, gpuidx_range_count) on a 10^5-row B+ tree index and a
# vEB index while writers insert, update and delete rows and VACUUM runs
# (new versions: deltas, batch insertion in the service, folds), each batch
# checked against a btree twin under
# one REPEATABLE READ snapshot; a mismatch raises an error, which aborts its
# pgbench client and fails the run.  Then cancels (statement_timeout) of
# backends whose batch a query thread is answering, and the same load with
# the query threads off (gpuidx.service_workers = 0: one request at a time).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(gettimeofday tv_interval);

use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;

plan skip_all => 'runs in the service-mode pass (GPUIDX_SERVICE=1)' if !service_mode();

my $node = gpuidx_node('service_concurrent', q{
jit = off
autovacuum = off
gpuidx.service_workers = 4
});

$node->safe_psql('postgres', q{
CREATE EXTENSION gpuidx;
CREATE SEQUENCE ids START 1000001;
-- a B+ tree index and a vEB index, each with a btree twin of the same rows
CREATE TABLE t (id bigint, k int8);
INSERT INTO t SELECT g, CASE WHEN g % 101 = 0 THEN NULL
                             ELSE (abs(hashint4(g)) % 200000)::int8 END
  FROM generate_series(1, 100000) g;
CREATE TABLE tb AS TABLE t;
CREATE TABLE u (id bigint, k int8);
INSERT INTO u SELECT g, (abs(hashint4(g + 17)) % 80000)::int8 - 40000
  FROM generate_series(1, 50000) g;
CREATE TABLE ub AS TABLE u;
CREATE INDEX t_gi ON t USING gpuidx (k);
CREATE INDEX u_gi ON u USING gpuidx (k) WITH (structure = veb);
CREATE INDEX tb_k ON tb (k);
CREATE INDEX ub_k ON ub (k);
ANALYZE t; ANALYZE tb; ANALYZE u; ANALYZE ub;

-- Batches of n probes from seed on table tab (index idx) against its btree
-- twin; raises an error naming the first answer that differs.
CREATE FUNCTION check_batches(tab text, idx text, twin text, seed int8, n int)
RETURNS int LANGUAGE plpgsql SET enable_seqscan = off AS $f$
DECLARE
  a int8[];
  got text;
  want text;
BEGIN
  a := ARRAY(SELECT (abs(hashint8(seed * 100003 + i)) % 210000)::int8
                    - CASE WHEN tab = 'u' THEN 105000 ELSE 0 END
               FROM generate_series(1, n) i);
  EXECUTE format('SELECT count(*) || '','' || coalesce(sum(id), 0) || '','' || coalesce(sum(k), 0)
                    FROM %I WHERE k = ANY($1)', tab) INTO got USING a;
  EXECUTE format('SELECT count(*) || '','' || coalesce(sum(id), 0) || '','' || coalesce(sum(k), 0)
                    FROM %I WHERE k = ANY($1)', twin) INTO want USING a;
  IF got IS DISTINCT FROM want THEN
    RAISE EXCEPTION '= ANY on % (seed %): % against %', tab, seed, got, want;
  END IF;
  -- the same sums, and sums over a range, by GpuIndexAgg (every other
  -- scan off) with its runs added up by the service (every run sent to it,
  -- on the CPU engine too): its visibility map copy and fetch list under
  -- the writers and VACUUM
  PERFORM set_config('gpuidx.gpu_min_agg_entries', '0', true),
          set_config('gpuidx.service_test_agg_cpu', 'on', true),
          set_config('gpuidx.enable_customscan', 'off', true),
          set_config('enable_indexscan', 'off', true),
          set_config('enable_indexonlyscan', 'off', true),
          set_config('enable_bitmapscan', 'off', true);
  EXECUTE format('SELECT count(*) || '','' || coalesce(sum(id), 0) || '','' || coalesce(sum(k), 0)
                    FROM %I WHERE k = ANY($1)', tab) INTO got USING a;
  IF got IS DISTINCT FROM want THEN
    RAISE EXCEPTION '= ANY added up by the service on % (seed %): % against %',
      tab, seed, got, want;
  END IF;
  EXECUTE format('SELECT count(*) || '','' || coalesce(sum(id), 0) || '','' || coalesce(sum(k), 0)
                    FROM %I WHERE k BETWEEN $1 AND $1 + 20000', tab) INTO got USING a[1];
  EXECUTE format('SELECT count(*) || '','' || coalesce(sum(id), 0) || '','' || coalesce(sum(k), 0)
                    FROM %I WHERE k BETWEEN $1 AND $1 + 20000', twin) INTO want USING a[1];
  IF got IS DISTINCT FROM want THEN
    RAISE EXCEPTION 'range sum added up by the service on % (seed %): % against %',
      tab, seed, got, want;
  END IF;
  PERFORM set_config('gpuidx.gpu_min_agg_entries', '50000', true),
          set_config('gpuidx.service_test_agg_cpu', 'off', true),
          set_config('gpuidx.enable_customscan', 'on', true),
          set_config('enable_indexscan', 'on', true),
          set_config('enable_indexonlyscan', 'on', true),
          set_config('enable_bitmapscan', 'on', true);
  SELECT count(*) || ',' || coalesce(sum(key), 0) INTO got
    FROM gpuidx_lookup(idx::regclass, a);
  EXECUTE format('SELECT count(*) || '','' || coalesce(sum(b.k), 0)
                    FROM unnest($1) p JOIN %I b ON b.k = p', twin) INTO want USING a;
  IF got IS DISTINCT FROM want THEN
    RAISE EXCEPTION 'gpuidx_lookup on % (seed %): % against %', tab, seed, got, want;
  END IF;
  SELECT count(*) || ',' || coalesce(sum(key), 0) INTO got
    FROM gpuidx_predecessor(idx::regclass, a);
  EXECUTE format('SELECT count(*) || '','' || coalesce(sum(b.k), 0)
                    FROM unnest($1) p JOIN %I b
                      ON b.k = (SELECT max(k) FROM %I WHERE k <= p)', twin, twin)
    INTO want USING a;
  IF got IS DISTINCT FROM want THEN
    RAISE EXCEPTION 'gpuidx_predecessor on % (seed %): % against %', tab, seed, got, want;
  END IF;
  got := gpuidx_range_count(idx::regclass, a, ARRAY(SELECT x + 40 FROM unnest(a) x))::text;
  EXECUTE format('SELECT array_agg((SELECT count(*) FROM %I WHERE k BETWEEN p AND p + 40)
                                   ORDER BY o)::text
                    FROM unnest($1) WITH ORDINALITY x(p, o)', twin) INTO want USING a;
  IF got IS DISTINCT FROM want THEN
    RAISE EXCEPTION 'gpuidx_range_count on % (seed %): % against %', tab, seed, got, want;
  END IF;
  RETURN 1;
END $f$;
});

# The pgbench scripts, their file names ending in $suffix (each run needs
# new ones).
sub scripts
{
	my ($suffix) = @_;
	my %named = (
		'read_btree@6' => q{
\set s random(1, 1000000000)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT check_batches('t', 't_gi', 'tb', :s, 400);
COMMIT;
},
		'read_veb@3' => q{
\set s random(1, 1000000000)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT check_batches('u', 'u_gi', 'ub', :s, 300);
COMMIT;
},
		'write@1' => q{
\set k random(0, 210000)
\set id random(1, 100000)
\set id2 random(1, 50000)
BEGIN;
WITH n AS (SELECT nextval('ids') AS i1, nextval('ids') AS i2),
     a AS (INSERT INTO t SELECT i1, :k FROM n UNION ALL SELECT i2, :k + 1 FROM n)
INSERT INTO tb SELECT i1, :k FROM n UNION ALL SELECT i2, :k + 1 FROM n;
INSERT INTO u VALUES (nextval('ids'), :k - 105000);
INSERT INTO ub VALUES (currval('ids'), :k - 105000);
UPDATE t SET k = :k + 2 WHERE id = :id;
UPDATE tb SET k = :k + 2 WHERE id = :id;
DELETE FROM u WHERE id = :id2;
DELETE FROM ub WHERE id = :id2;
COMMIT;
},
		'vacuum@1' => q{
VACUUM t;
VACUUM u;
},
	);
	return { map { my ($n, $w) = split /@/; ("$n$suffix\@$w" => $named{$_}) } keys %named };
}

# GPUIDX_STRESS_SCALE (default 1) multiplies the transactions: a long run
# by hand, e.g. 20 for some minutes.
my $tx = 30 * ($ENV{GPUIDX_STRESS_SCALE} // 1);
$node->pgbench(
	"--no-vacuum --client=8 --jobs=2 --transactions=$tx",
	0,
	[qr{processed: ${\($tx * 8)}/${\($tx * 8)}}],
	[qr{^$}],
	'8 clients: every batch equals the btree twin (4 query threads)',
	scripts('_threads'));

like(slurp_file($node->logfile), qr/gpuidx service started \([^)]*, 4 query threads\)/,
	'the service runs 4 query threads');
like(
	$node->safe_psql('postgres',
		q{SELECT string_agg(DISTINCT engines, ',') FROM gpuidx_service_images
		   WHERE index IN ('t_gi'::regclass, 'u_gi'::regclass)}),
	qr/cpu|gpu/,
	'the service built the engine images (it answered the batches)');
cmp_ok($node->safe_psql('postgres', 'SELECT count(*) FROM t'), '>', 100000,
	'the writer inserted rows');
like(
	$node->safe_psql('postgres', q{
SET enable_seqscan = off;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
SET enable_bitmapscan = off;
SET gpuidx.enable_customscan = off;
SET gpuidx.gpu_min_agg_entries = 0;
SET gpuidx.service_test_agg_cpu = on;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) SELECT sum(k) FROM t WHERE k BETWEEN 1000 AND 21000}),
	qr/Aggregated On: (cpu|gpu)/,
	'the readers\' sums are added up by the service');

# Cancels while a query thread answers the batch: every later batch of the
# same backends is still right.
$node->safe_psql('postgres', q{
CREATE TABLE probes AS
  SELECT array_agg((abs(hashint4(g)) % 210000)::int8) a FROM generate_series(1, 300000) g});
my $lookup = "SELECT count(*) FROM probes, gpuidx_lookup('t_gi', probes.a)";
$node->safe_psql('postgres', $lookup);	# (the service builds the image)
my $t0 = [gettimeofday];
my $want = $node->safe_psql('postgres', $lookup);
my $lookup_ms = 1000 * tv_interval($t0);
# timeouts spread over the statement's length: cancelled in every phase.
# A timeout that fires as the last lookup ends cancels the next statement
# instead (PostgreSQL reports the timeout at its next interrupt check): a
# single RESET then fails and the check ran under the last timeout (GPU
# suite, 2026-11-27: "cancelled: 31 of 30"), so a second RESET follows.
my ($ret, $out, $err) = $node->psql('postgres', join('', map {
	"SET statement_timeout = '" . (1 + int($lookup_ms * $_ / 30)) . "ms';\n"
	  . "$lookup;\n"
	} 1 .. 30) . "RESET statement_timeout;\nRESET statement_timeout;\n"
	  . "SELECT sum(check_batches('t', 't_gi', 'tb', s, 2000)) FROM generate_series(1, 5) s;\n",
	on_error_stop => 0);
my @answers = split /\n/, $out;
is(pop(@answers), '5', 'batches after cancelled ones equal the btree twin');
is_deeply([ grep { $_ ne $want } @answers ], [],
	'every lookup that was not cancelled counted the same rows');
unlike($err, qr/ERROR:  (?!canceling statement due to statement timeout)/,
	'the only errors are the timeouts');
diag(sprintf('cancelled: %d of 30 (the lookup takes %.0f ms)',
		scalar(() = $err =~ /canceling statement/g), $lookup_ms));

# The same load with the query threads off: the main thread answers.
$node->append_conf('postgresql.conf', "gpuidx.service_workers = 0\n");
$node->restart;
$node->pgbench(
	'--no-vacuum --client=4 --jobs=2 --transactions=10',
	0,
	[qr{processed: 40/40}],
	[qr{^$}],
	'4 clients, one request at a time: every batch equals the btree twin',
	scripts('_serial'));
like(slurp_file($node->logfile), qr/gpuidx service started \([^)]*, one request at a time\)/,
	'with gpuidx.service_workers = 0 the service answers one request at a time');

$node->stop;
done_testing();
