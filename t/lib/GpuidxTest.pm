# GpuidxTest.pm - what the gpuidx TAP tests share: the SQL that checks every
# batch function and plan of an index against sequential scans and a btree,
# the test table and probes, and the Test::More wrappers around them.
package GpuidxTest;

use strict;
use warnings;
use Test::More;
use PostgreSQL::Test::Cluster;
use Exporter 'import';
use File::Basename qw(dirname);

our @EXPORT = qw($check_sql $btree_sql $setup_sql $include_sql gpuidx_node mode_conf service_mode verify verify_btree verify_include verify_rows verify_session);

# The gi_check() fixture the pg_regress suite uses too, read from
# sql/include/gi_check.sql: the SQL text of the file.
sub fixture_sql
{
	my $path = dirname(__FILE__) . "/../../sql/include/gi_check.sql";
	open(my $fh, '<', $path) or die "cannot read $path: $!";
	local $/;
	my $sql = <$fh>;
	close($fh);
	return $sql;
}

# gi_check(idx, probes, lo, hi) (the fixture): every batch function on idx
# against the same question answered by sequential scans (no index;
# read-only, so it also runs on a hot standby).  plan_check(tbl, probes):
# = ANY, range and ordered LIMIT 1 queries through forced gpuidx index,
# bitmap and custom scans against sequential scans.  Both return rows
# (what, ref_rows, missing, extra).
our $check_sql = fixture_sql() . <<'SQL';
CREATE FUNCTION plan_check(tbl regclass, probes bigint[])
RETURNS TABLE(fn text, ref_rows bigint, missing bigint, extra bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  qs text[] := ARRAY[
    format('SELECT ctid, k FROM %s WHERE k = ANY ($1)', tbl),
    format('SELECT ctid, k FROM %s WHERE k BETWEEN -1000 AND 1000 OR k < -9000000000000000000', tbl),
    format('SELECT u.i, x.k FROM unnest($1[1:300]) WITH ORDINALITY u(v, i) '
           'CROSS JOIN LATERAL (SELECT k FROM %s WHERE k <= u.v ORDER BY k DESC LIMIT 1) x', tbl),
    format('SELECT u.i, x.k FROM unnest($1[1:300]) WITH ORDINALITY u(v, i) '
           'CROSS JOIN LATERAL (SELECT k FROM %s WHERE k >= u.v ORDER BY k LIMIT 2) x', tbl),
    format('SELECT k FROM %s WHERE k = ANY ($1)', tbl)];
  modes text[] := ARRAY['index', 'bitmap', 'index', 'index', 'custom'];
  i int; a text; b text;
BEGIN
  FOR i IN 1 .. cardinality(qs) LOOP
    fn := modes[i] || ' ' || i;
    PERFORM set_config('enable_seqscan', 'off', true);
    PERFORM set_config('enable_indexscan', (modes[i] = 'index')::text, true);
    PERFORM set_config('enable_bitmapscan', (modes[i] = 'bitmap')::text, true);
    PERFORM set_config('gpuidx.enable_customscan', (modes[i] = 'custom')::text, true);
    EXECUTE format('SELECT string_agg(s::text, '';'' ORDER BY s::text) FROM (%s) s', qs[i]) INTO a USING probes;
    PERFORM set_config('enable_seqscan', 'on', true);
    PERFORM set_config('enable_indexscan', 'off', true);
    PERFORM set_config('enable_bitmapscan', 'off', true);
    PERFORM set_config('gpuidx.enable_customscan', 'off', true);
    EXECUTE format('SELECT count(*), string_agg(s::text, '';'' ORDER BY s::text) FROM (%s) s', qs[i]) INTO ref_rows, b USING probes;
    missing := CASE WHEN a IS NOT DISTINCT FROM b THEN 0 ELSE 1 END;
    extra := missing;
    RETURN NEXT;
  END LOOP;
END $f$;
SQL

# The postgresql.conf lines of the mode under test: gpuidx.engine from
# GPUIDX_ENGINE (default auto), and with GPUIDX_SERVICE=1 the gpuidx service
# (shared_preload_libraries).
sub mode_conf
{
	my $engine = $ENV{GPUIDX_ENGINE} // 'auto';
	my $conf = "gpuidx.engine = '$engine'\n";
	$conf .= "shared_preload_libraries = 'gpuidx'\n" if service_mode();
	return $conf;
}

# Do the tests run in service mode (GPUIDX_SERVICE=1)?
sub service_mode
{
	return ($ENV{GPUIDX_SERVICE} // '0') eq '1';
}

# A started node named $name whose postgresql.conf has mode_conf(), then
# the lines of $conf.
sub gpuidx_node
{
	my ($name, $conf) = @_;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	$node->append_conf('postgresql.conf', mode_conf() . ($conf // ''));
	$node->start;
	return $node;
}

# Check rows "what|ref_rows|missing|extra" (psql's unaligned output): one
# assertion per row that nothing is missing or extra, and one that all
# $expected rows came.
sub verify_rows
{
	my ($out, $expected, $label) = @_;
	my $n = 0;
	for my $line (split /\n/, $out)
	{
		my ($fn, $ref, $missing, $extra) = split /\|/, $line;
		is("$missing|$extra", "0|0", "$label: $fn ($ref reference rows)");
		$n++;
	}
	is($n, $expected, "$label: all checks ran");
	return;
}

# Run $sql (rows "what|ref_rows|missing|extra") in a background psql
# session: no error there, then verify_rows.
sub verify_session
{
	my ($session, $sql, $expected, $label) = @_;
	my ($out, $err) = $session->query($sql);
	is($err, 0, "$label: no error in the long-lived session");
	verify_rows($out, $expected, $label);
	return;
}

# Check every function and plan; one Test::More assertion per row.
sub verify
{
	my ($node, $label, $dbname) = @_;
	$dbname //= 'postgres';
	my $args = "(SELECT keys FROM probes), (SELECT lo FROM probes), (SELECT hi FROM probes)";
	my $out = $node->safe_psql($dbname,
		"SELECT fn, ref_rows, missing, extra FROM gi_check('t_gi', $args) "
		  . "UNION ALL SELECT * FROM plan_check('t', (SELECT keys FROM probes))");
	verify_rows($out, 10, $label);
	return;
}
# btree_check(probes, lo, hi): copy the visible rows of t with their ctids
# into ref (sequential scan), index ref with PostgreSQL's btree, and compare
# gpuidx's answers on t with the btree's on ref (writes: primary only).
our $btree_sql = <<'SQL';
CREATE FUNCTION btree_check(probes bigint[], lo bigint[], hi bigint[])
RETURNS TABLE(fn text, ref_rows bigint, missing bigint, extra bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  cmp constant text := 'SELECT (SELECT count(*) FROM r__), '
     '(SELECT count(*) FROM (SELECT * FROM r__ EXCEPT ALL SELECT * FROM g__) x), '
     '(SELECT count(*) FROM (SELECT * FROM g__ EXCEPT ALL SELECT * FROM r__) y)';
BEGIN
  DROP TABLE IF EXISTS ref;
  PERFORM set_config('enable_indexscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  PERFORM set_config('gpuidx.enable_customscan', 'off', true);
  CREATE TABLE ref AS SELECT ctid AS tid, k FROM t WHERE k IS NOT NULL;
  CREATE INDEX ref_k ON ref (k);
  ANALYZE ref;
  PERFORM set_config('enable_indexscan', 'on', true);
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_hashjoin', 'off', true);
  PERFORM set_config('enable_mergejoin', 'off', true);
  fn := 'btree lookup';
  EXECUTE 'WITH g__ AS (SELECT * FROM gpuidx_lookup(''t_gi'', $1)), '
          'r__ AS (SELECT u.i::int, ref.k, ref.tid FROM unnest($1) WITH ORDINALITY u(v, i) JOIN ref ON ref.k = u.v) ' || cmp
    INTO ref_rows, missing, extra USING probes;
  RETURN NEXT;
  fn := 'btree predecessor';
  EXECUTE 'WITH g__ AS (SELECT * FROM gpuidx_predecessor(''t_gi'', $1)), '
          'r__ AS (SELECT u.i::int, r2.k, r2.tid FROM unnest($1) WITH ORDINALITY u(v, i) '
          '        CROSS JOIN LATERAL (SELECT k FROM ref WHERE k <= u.v ORDER BY k DESC LIMIT 1) p '
          '        JOIN ref r2 ON r2.k = p.k) ' || cmp
    INTO ref_rows, missing, extra USING probes;
  RETURN NEXT;
  fn := 'btree successor';
  EXECUTE 'WITH g__ AS (SELECT * FROM gpuidx_successor(''t_gi'', $1)), '
          'r__ AS (SELECT u.i::int, r2.k, r2.tid FROM unnest($1) WITH ORDINALITY u(v, i) '
          '        CROSS JOIN LATERAL (SELECT k FROM ref WHERE k >= u.v ORDER BY k LIMIT 1) p '
          '        JOIN ref r2 ON r2.k = p.k) ' || cmp
    INTO ref_rows, missing, extra USING probes;
  RETURN NEXT;
  fn := 'btree range_count';
  EXECUTE 'WITH g__ AS (SELECT i, n FROM unnest(gpuidx_range_count(''t_gi'', $1, $2)) WITH ORDINALITY x(n, i)), '
          'r__ AS (SELECT u.i, (SELECT count(*) FROM ref WHERE ref.k >= u.l AND ref.k <= u.h) '
          '        FROM unnest($1, $2) WITH ORDINALITY u(l, h, i)) ' || cmp
    INTO ref_rows, missing, extra USING lo, hi;
  RETURN NEXT;
  fn := 'btree index scan';
  PERFORM set_config('enable_bitmapscan', 'off', true);
  EXECUTE 'WITH g__ AS MATERIALIZED (SELECT ctid, k FROM t WHERE k = ANY ($1)), '
          'r__ AS MATERIALIZED (SELECT tid, k FROM ref WHERE k = ANY ($1)) ' || cmp
    INTO ref_rows, missing, extra USING probes;
  RETURN NEXT;
END $f$;
SQL

sub verify_btree
{
	my ($node, $label) = @_;
	my $out = $node->safe_psql('postgres',
		"SELECT * FROM btree_check((SELECT keys FROM probes), (SELECT lo FROM probes), (SELECT hi FROM probes))");
	verify_rows($out, 5, $label);
	return;
}
our $setup_sql = <<'SQL';
CREATE EXTENSION gpuidx;
CREATE TABLE t (id bigserial, k int8) WITH (autovacuum_enabled = off);
SELECT setseed(0.5);
INSERT INTO t (k)
SELECT CASE WHEN r < 0.02 THEN NULL
            WHEN r < 0.04 THEN (ARRAY[-9223372036854775808, -9223372036854775807,
                                      9223372036854775806, 9223372036854775807]::int8[])[1 + (random() * 3)::int]
            WHEN r < 0.70 THEN (random() * 4000 - 2000)::int8
            ELSE ((random() * 2 - 1) * 9.2e18)::int8 END
  FROM (SELECT random() AS r FROM generate_series(1, 8000)) s;
CREATE INDEX t_gi ON t USING gpuidx (k);
CREATE TABLE probes (keys bigint[], lo bigint[], hi bigint[]);
INSERT INTO probes
SELECT (SELECT array_agg(v) FROM (SELECT (random() * 4400 - 2200)::int8 AS v FROM generate_series(1, 800)
                                  UNION ALL SELECT unnest('{-9223372036854775808, 9223372036854775807, 0, NULL}'::int8[])) a),
       array_agg(l), array_agg(l + (random() * 60)::int8)
  FROM (SELECT (random() * 4400 - 2200)::int8 AS l FROM generate_series(1, 300)) b;
SQL

# A table whose gpuidx index includes two columns.
our $include_sql = <<'SQL';
CREATE TABLE ti (id bigserial, k int8, v int4, f float8) WITH (autovacuum_enabled = off);
INSERT INTO ti (k, v, f)
  SELECT CASE WHEN g % 50 = 0 THEN NULL ELSE g % 400 END,
         CASE WHEN g % 7 = 0 THEN NULL ELSE g END, g / 3.0
    FROM generate_series(1, 3000) g;
CREATE INDEX ti_gi ON ti USING gpuidx (k) INCLUDE (v, f);
SQL

# The INCLUDE index's answers against a sequential scan of the heap (rows,
# missing, extra) and gpuidx_verify.  With $index_only (a primary), the
# answers come from index-only scans, that is from the index's values; a
# standby visits the heap, so there it checks the replayed pages and image.
sub verify_include
{
	my ($node, $index_only, $name) = @_;
	# ref: no index can answer "ctid IS NOT NULL", so it scans the heap
	my $result = $node->safe_psql('postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off; SET gpuidx.enable_customscan = off;
WITH ref AS MATERIALIZED (SELECT k, v, f FROM ti WHERE ctid IS NOT NULL),
     got AS MATERIALIZED (SELECT k, v, f FROM ti WHERE k >= -9223372036854775808
                          UNION ALL SELECT k, v, f FROM ti WHERE k IS NULL)
SELECT (SELECT count(*) FROM ref) >= 3000,
       (SELECT count(*) FROM (SELECT * FROM ref EXCEPT ALL SELECT * FROM got) x),
       (SELECT count(*) FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM ref) y),
       gpuidx_verify('ti_gi');
});
	is($result, "t|0|0|t", "$name: INCLUDE index-only scans return the heap's values");
	my $plan = $node->safe_psql('postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off; SET gpuidx.enable_customscan = off;
EXPLAIN (COSTS OFF) SELECT k, v, f FROM ti WHERE k >= -9223372036854775808;
});
	like($plan, qr/Index Only Scan using ti_gi/, "$name: the INCLUDE check ran index-only")
	  if $index_only;
	return;
}

1;
