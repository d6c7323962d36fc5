# Several pgbench clients insert, update, delete, vacuum and run batch
# queries at once; afterwards gpuidx_verify passes and every lookup, range
# count and index-scan answer equals the btree's on the same table.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;

my $node = gpuidx_node('concurrency', q{
jit = off
gpuidx.pending_limit = 300
});

$node->safe_psql('postgres', q{
CREATE EXTENSION gpuidx;
CREATE TABLE c (id bigserial PRIMARY KEY, k int8);
INSERT INTO c (k) SELECT (random() * 5000)::int8 - 2500 FROM generate_series(1, 20000);
CREATE INDEX c_g ON c USING gpuidx (k);
CREATE INDEX c_b ON c (k);
});

# Each statement commits on its own, so clients never wait on each other's
# row locks in a cycle; VACUUM runs now and then and folds the pending list.
$node->pgbench(
	'--no-vacuum --client=5 --jobs=1 --transactions=200',
	0,
	[qr{processed: 1000/1000}],
	[qr{^$}],
	'concurrent writers, vacuum and batch readers',
	{
		'gpuidx_write@8' => q{
\set k random(-2600, 2600)
INSERT INTO c (k) VALUES (:k), (:k + 1), (NULL);
UPDATE c SET k = :k WHERE id = (:k + 2600) * 4;
DELETE FROM c WHERE id = (:k + 2600) * 4 + 1;
},
		'gpuidx_read@8' => q{
\set k random(-2600, 2600)
SELECT count(*) FROM gpuidx_lookup('c_g', ARRAY[:k, :k + 1, :k + 2]::int8[]);
SELECT count(*) FROM gpuidx_predecessor('c_g', ARRAY[:k]::int8[]);
SELECT gpuidx_range_count('c_g', ARRAY[:k]::int8[], ARRAY[:k + 50]::int8[]);
SELECT count(*) FROM c WHERE k = ANY(ARRAY[:k, :k + 3]::int8[]);
},
		'gpuidx_vacuum@1' => q{
VACUUM c;
}
	});

is($node->safe_psql('postgres', "SELECT gpuidx_verify('c_g')"), 't', 'gpuidx_verify passes');

my $probes = "ARRAY(SELECT generate_series(-2700, 2700)::int8)";
is( $node->safe_psql(
		'postgres', qq{
SELECT count(*) FROM (
  (SELECT probe, ctid FROM gpuidx_lookup('c_g', $probes)
   EXCEPT ALL
   SELECT p.o::int, c.ctid FROM unnest($probes) WITH ORDINALITY p(v, o) JOIN c ON c.k = p.v)
  UNION ALL
  (SELECT p.o::int, c.ctid FROM unnest($probes) WITH ORDINALITY p(v, o) JOIN c ON c.k = p.v
   EXCEPT ALL
   SELECT probe, ctid FROM gpuidx_lookup('c_g', $probes))) d}),
	'0',
	'lookups equal the join through the btree');

cmp_ok(
	$node->safe_psql('postgres', "SELECT count(*) FROM gpuidx_lookup('c_g', $probes)"),
	'>', 20000, 'lookups return the table\'s rows (the comparison is not vacuous)');
cmp_ok($node->safe_psql('postgres', "SELECT count(*) FROM c"),
	'>', 20300, 'the writers inserted rows');

is( $node->safe_psql(
		'postgres', q{
SELECT gpuidx_range_count('c_g', ARRAY[-3000, -100, 0, 2000]::int8[], ARRAY[3000, 100, 0, 1999]::int8[])
  = ARRAY[(SELECT count(*) FROM c WHERE k BETWEEN -3000 AND 3000),
          (SELECT count(*) FROM c WHERE k BETWEEN -100 AND 100),
          (SELECT count(*) FROM c WHERE k = 0), 0]}),
	't',
	'range counts equal the btree');

is( $node->safe_psql(
		'postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM (SELECT id, k FROM c WHERE k BETWEEN -500 AND 500) g}),
	$node->safe_psql(
		'postgres', q{
SET enable_seqscan = on; SET gpuidx.enable_customscan = off; SET enable_indexscan = off; SET enable_bitmapscan = off;
SELECT count(*) FROM (SELECT id, k FROM c WHERE k BETWEEN -500 AND 500) g}),
	'range scans equal a seq scan');

$node->stop;
done_testing();
