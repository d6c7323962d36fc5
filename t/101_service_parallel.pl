# GpuIndexJoin under a Gather in service mode: each parallel worker joins its
# share of the outer rows against the shared image.  For inner, left, semi,
# anti, range and as-of joins (predecessor, successor, left), and an
# aggregate over an equi-join and over an as-of join, the plan
# must be a Gather over GpuIndexJoin with workers launched, and the rows
# must be the btree twin's (rows compared as sorted text).  Data: duplicate
# keys, negatives, NULL keys and probes, probes outside the key range, rows
# invisible to the snapshot (deleted, updated), pages not all-visible.  A
# node in per-backend mode never offers the partial path.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;

# It starts its own nodes in both modes: run it once, in the service pass.
plan skip_all => 'runs in the service-mode pass (GPUIDX_SERVICE=1)' if !service_mode();

my $engine = $ENV{GPUIDX_ENGINE} // 'auto';
my $parallel = q{
autovacuum = off
max_worker_processes = 8
max_parallel_workers = 4
max_parallel_workers_per_gather = 2
parallel_setup_cost = 0
parallel_tuple_cost = 0
min_parallel_table_scan_size = 0
};

my $node = PostgreSQL::Test::Cluster->new('service_parallel');
$node->init;
$node->append_conf('postgresql.conf',
	"gpuidx.engine = '$engine'\nshared_preload_libraries = 'gpuidx'\n" . $parallel);
$node->start;

my $setup = q{
CREATE EXTENSION gpuidx;
CREATE TABLE t (id int PRIMARY KEY, k int8, v int4, pad text);
INSERT INTO t SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE (hashint4(g) % 5000)::int8 END,
       g % 11, repeat('x', 20)
  FROM generate_series(1, 60000) g;
INSERT INTO t VALUES (60001, 9223372036854775807, 1, ''), (60002, -9223372036854775808, 2, '');
CREATE TABLE p (id int PRIMARY KEY, x int8);
INSERT INTO p SELECT g, CASE WHEN g % 53 = 0 THEN NULL ELSE (hashint4(g + 7) % 6000)::int8 END
  FROM generate_series(1, 40000) g;
INSERT INTO p VALUES (40001, 9223372036854775807), (40002, -9223372036854775808);
CREATE TABLE tb AS TABLE t;
CREATE INDEX t_gi ON t USING gpuidx (k) INCLUDE (v);
CREATE INDEX tb_k ON tb (k) INCLUDE (v);
VACUUM ANALYZE t;
VACUUM ANALYZE tb;
VACUUM ANALYZE p;
-- rows invisible to the snapshot, and pages no longer all-visible
DELETE FROM t WHERE id % 17 = 0;
DELETE FROM tb WHERE id % 17 = 0;
UPDATE t SET k = k + 1 WHERE id % 23 = 0;
UPDATE tb SET k = k + 1 WHERE id % 23 = 0;
};
$node->safe_psql('postgres', $setup);

my %queries = (
	inner => 'SELECT p.id, t.id, t.v FROM p JOIN @T@ t ON t.k = p.x',
	left => 'SELECT p.id, t.id FROM p LEFT JOIN @T@ t ON t.k = p.x',
	semi => 'SELECT p.id FROM p WHERE p.x IN (SELECT k FROM @T@)',
	anti => 'SELECT p.id FROM p WHERE NOT EXISTS (SELECT 1 FROM @T@ t WHERE t.k = p.x)',
	range => 'SELECT p.id, t.id FROM p JOIN @T@ t ON t.k BETWEEN p.x AND p.x + 3 WHERE p.id <= 40000',
	count => 'SELECT count(*), sum(t.v) FROM p JOIN @T@ t ON t.k = p.x',
	# (k only: with LIMIT 1 any of the tied rows is right)
	asof => 'SELECT p.id, s.k FROM p CROSS JOIN LATERAL '
	  . '(SELECT t.k FROM @T@ t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s',
	# the successor side, a LEFT join, a qual on t and LIMIT 2 (k only again)
	asof_succ_left => 'SELECT p.id, s.k FROM p LEFT JOIN LATERAL '
	  . '(SELECT t.k FROM @T@ t WHERE t.k >= p.x AND t.v % 3 <> 0 ORDER BY t.k LIMIT 2) s ON true',
	# an aggregate over the as-of join: partial aggregates in the workers
	asof_count => 'SELECT count(s.k), sum(s.k) FROM p CROSS JOIN LATERAL '
	  . '(SELECT t.k FROM @T@ t WHERE t.k < p.x ORDER BY t.k DESC LIMIT 1) s',
);

# GpuIndexJoin forced (no hash, merge or nested-loop join) on t.
my $force = 'SET enable_hashjoin = off; SET enable_mergejoin = off; SET enable_nestloop = off; ';

# The rows of a query: their count and the md5 of their sorted text.
sub rows_of
{
	my ($n, $settings, $q) = @_;
	return $n->safe_psql('postgres',
		$settings . "SELECT count(*) || ':' || md5(coalesce(string_agg(r::text, ';' ORDER BY r::text), '')) FROM ($q) r");
}

foreach my $what (sort keys %queries)
{
	my $q = $queries{$what};
	(my $gi = $q) =~ s/\@T\@/t/g;
	(my $bt = $q) =~ s/\@T\@/tb/g;
	my $plan = $node->safe_psql('postgres', $force . "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) $gi");
	# (as-of joins too: PostgreSQL keeps a LIMIT subquery's join serial, but
	# GpuIndexJoin never runs the subquery, so its rel may go parallel)
	like($plan, qr/Gather.*GpuIndexJoin/s, "$what: a Gather over GpuIndexJoin");
	like($plan, qr/Workers Launched: [1-9]/, "$what: workers launched");
	like($plan, qr/Gather.*Partial Aggregate.*GpuIndexJoin/s,
		"$what: partial aggregates in the workers")
	  if $what eq 'asof_count';
	my $want = rows_of($node, 'SET gpuidx.enable_customjoin = off; ', $bt);
	my $got = rows_of($node, $force, $gi);
	ok($want =~ /^[1-9]/ || $what eq 'anti', "$what: the reference has rows");
	is($got, $want, "$what: the btree twin's rows");
}

# In per-backend mode the partial path is not offered.
$node->stop;
my $backend = PostgreSQL::Test::Cluster->new('backend_parallel');
$backend->init;
$backend->append_conf('postgresql.conf', "gpuidx.engine = '$engine'\n" . $parallel);
$backend->start;
$backend->safe_psql('postgres', $setup);
my $plan = $backend->safe_psql('postgres',
	$force . 'EXPLAIN (COSTS OFF) SELECT count(*) FROM p JOIN t ON t.k = p.x');
like($plan, qr/GpuIndexJoin/, 'per-backend mode: GpuIndexJoin');
unlike($plan, qr/Gather.*GpuIndexJoin/s, 'per-backend mode: no Gather over it');
is(rows_of($backend, $force, 'SELECT count(*), sum(t.v) FROM p JOIN t ON t.k = p.x'),
	rows_of($backend, 'SET gpuidx.enable_customjoin = off; ',
		'SELECT count(*), sum(t.v) FROM p JOIN tb t ON t.k = p.x'),
	'per-backend mode: the btree twin\'s count');
$backend->stop;

done_testing();
