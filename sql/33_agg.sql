--
-- 33_agg: GpuIndexAgg, aggregates answered from the index image.
-- Every aggregate it computes (count(*), count, sum, avg, min, max,
-- bool_and, bool_or, every) over the key and over an included column of
-- every type is compared, as text (so types, numeric scales and float
-- digits must match), with the same query on a btree twin with the same
-- INCLUDE, on the gpuidx table with gpuidx.enable_customagg off, and on
-- the gpuidx table through a sequential scan (acheck below).  The tables
-- are checked all-visible (the image), with deleted and updated rows not
-- vacuumed (the heap for those pages), inside a transaction that changes
-- rows (its own changes count), after its rollback, and after VACUUM.  Heap
-- fetches are read from EXPLAIN ANALYZE (FORMAT JSON) and shown only as
-- none / partly / all.  On a GPU image the entries are added up on the
-- device from gpuidx.gpu_min_agg_entries on, on the host below: both are
-- checked, and where each query added up (added_on).
--
\set schema gi_agg
\i sql/include/setup.sql
SET max_parallel_workers_per_gather = 0;
SET timezone = 'UTC';

-- t: int8 keys with duplicates (3 rows a key), negatives, both int8
-- extremes, NULL keys; an included column of every accepted type with
-- NULLs, NaN and infinities, and int8 values whose sums leave int8
CREATE TABLE t (id int, k int8, c_i2 int2, c_i4 int4, c_i8 int8, c_f4 float4,
                c_f8 float8, c_d date, c_ts timestamp, c_tz timestamptz,
                c_b bool, c_o oid, pad text)
  WITH (autovacuum_enabled = off);
INSERT INTO t
SELECT g, CASE WHEN g % 500 = 0 THEN NULL ELSE g % 2000 - 700 END,
       CASE WHEN g % 11 = 0 THEN NULL ELSE (g * 37 % 60000 - 30000)::int2 END,
       CASE WHEN g % 13 = 0 THEN NULL ELSE g * 104729 - 400000000 END,
       CASE WHEN g % 7 = 0 THEN NULL
            WHEN g % 3 = 0 THEN 9223372036854775807 - g
            WHEN g % 3 = 1 THEN -9223372036854775807 + g
            ELSE g::int8 * 1000000007 END,
       CASE WHEN g % 17 = 0 THEN NULL WHEN g = 1234 THEN 'NaN'
            WHEN g = 2345 THEN '-Infinity' ELSE g / 7.0 END,
       CASE WHEN g % 5 = 0 THEN NULL WHEN g = 4321 THEN 'Infinity'
            ELSE g * 1.25 - 3333.5 END,
       CASE WHEN g % 19 = 0 THEN NULL ELSE date '2000-01-01' + g END,
       CASE WHEN g % 23 = 0 THEN NULL ELSE timestamp '2000-01-01' + g * interval '77 minutes' END,
       CASE WHEN g % 29 = 0 THEN NULL ELSE timestamptz '1999-12-31 12:00+00' + g * interval '13 hours' END,
       CASE WHEN g % 31 = 0 THEN NULL ELSE g % 3 = 0 END,
       CASE WHEN g % 37 = 0 THEN NULL ELSE (g::int8 * 524287 % 4294967296)::oid END,
       'pad' || g
  FROM generate_series(1, 6000) g;
INSERT INTO t (id, k, c_i4, c_i8, c_b) VALUES
  (-1, -9223372036854775808, 1, -9223372036854775808, true),
  (-2, -9223372036854775808, 2, -9223372036854775807, true),
  (-3, 9223372036854775807, 3, 9223372036854775807, true),
  (-4, 9223372036854775806, NULL, 9223372036854775807, NULL);
CREATE TABLE tb (LIKE t) WITH (autovacuum_enabled = off);
INSERT INTO tb SELECT * FROM t;
CREATE INDEX t_gi ON t USING gpuidx (k)
  INCLUDE (c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o);
CREATE INDEX tb_bt ON tb USING btree (k)
  INCLUDE (c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o);
-- u: int4 key, w: int2 key (sums of the key are int8), one included column
CREATE TABLE u (id int, k int4, q int2) WITH (autovacuum_enabled = off);
INSERT INTO u SELECT g, CASE WHEN g % 400 = 0 THEN NULL ELSE (g * 7919) % 300001 - 150000 END,
       CASE WHEN g % 6 = 0 THEN NULL ELSE g % 32000 END
  FROM generate_series(1, 5000) g;
INSERT INTO u VALUES (-1, 2147483647, 32767), (-2, 2147483647, -32768), (-3, -2147483648, NULL);
CREATE TABLE ub (LIKE u) WITH (autovacuum_enabled = off);
INSERT INTO ub SELECT * FROM u;
CREATE INDEX u_gi ON u USING gpuidx (k) INCLUDE (q);
CREATE INDEX ub_bt ON ub USING btree (k) INCLUDE (q);
CREATE TABLE w (id int, k int2) WITH (autovacuum_enabled = off);
INSERT INTO w SELECT g, (g % 65536 - 32768)::int2 FROM generate_series(1, 4000) g;
INSERT INTO w VALUES (-1, 32767), (-2, 32767), (-3, -32768);
CREATE TABLE wb (LIKE w) WITH (autovacuum_enabled = off);
INSERT INTO wb SELECT * FROM w;
CREATE INDEX w_gi ON w USING gpuidx (k);
CREATE INDEX wb_bt ON wb USING btree (k);
VACUUM ANALYZE t, tb, u, ub, w, wb;

-- acheck(what, q, base): q (with @T@ for the table) run four ways: on the
-- btree twin base||'b' (the reference); on base with GpuIndexAgg forced
-- (other scans off; "node" says the plan has it, "result" is its answer as
-- text); on base with gpuidx.enable_customagg off (planner free); on base
-- through a sequential scan.  Each answer is compared with the reference
-- as text, IS NOT DISTINCT FROM.  Settings are put back, so it also runs
-- inside a transaction block.
CREATE FUNCTION acheck(label text, q text, base text DEFAULT 't')
RETURNS TABLE(what text, node boolean, result text, same_btree boolean,
              same_off boolean, same_seqscan boolean)
LANGUAGE plpgsql AS $f$
DECLARE
  names text[] := '{gpuidx.enable_customagg, gpuidx.enable_customscan, enable_seqscan, enable_indexscan, enable_bitmapscan, enable_indexonlyscan}';
  saved text[] := '{}';
  i int;
  line text;
  wrap text := 'SELECT coalesce(string_agg(x::text, '' | ''), ''(no row)'') FROM (%s) x';
  gi text := format(wrap, replace(q, '@T@', base));
  ref text;
  r_off text;
  r_seq text;
BEGIN
  FOR i IN 1 .. cardinality(names) LOOP
    saved := saved || current_setting(names[i]);
  END LOOP;
  what := label;
  EXECUTE format(wrap, replace(q, '@T@', base || 'b')) INTO ref;
  -- GpuIndexAgg forced
  PERFORM set_config('gpuidx.enable_customagg', 'on', true);
  PERFORM set_config('gpuidx.enable_customscan', 'off', true);
  FOR i IN 3 .. 6 LOOP
    PERFORM set_config(names[i], 'off', true);
  END LOOP;
  node := false;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || replace(q, '@T@', base) LOOP
    node := node OR line LIKE '%Custom Scan (GpuIndexAgg)%';
  END LOOP;
  EXECUTE gi INTO result;
  -- a sequential scan
  PERFORM set_config('gpuidx.enable_customagg', 'off', true);
  PERFORM set_config('enable_seqscan', 'on', true);
  EXECUTE gi INTO r_seq;
  -- GpuIndexAgg off, the planner free
  FOR i IN 2 .. 6 LOOP
    PERFORM set_config(names[i], 'on', true);
  END LOOP;
  EXECUTE gi INTO r_off;
  FOR i IN 1 .. cardinality(names) LOOP
    PERFORM set_config(names[i], saved[i], true);
  END LOOP;
  same_btree := result IS NOT DISTINCT FROM ref;
  same_off := r_off IS NOT DISTINCT FROM ref;
  same_seqscan := r_seq IS NOT DISTINCT FROM ref;
  RETURN NEXT;
END $f$;

-- forced_agg_plan(q): EXPLAIN (ANALYZE, FORMAT JSON) of q with every other
-- scan (and GpuIndexScan) disabled for the statement, so that GpuIndexAgg
-- answers it
CREATE FUNCTION forced_agg_plan(q text) RETURNS jsonb
LANGUAGE plpgsql AS $f$
DECLARE
  plan jsonb;
  names text[] := '{gpuidx.enable_customscan, enable_seqscan, enable_indexscan, enable_bitmapscan, enable_indexonlyscan}';
  i int;
BEGIN
  FOR i IN 1 .. cardinality(names) LOOP
    PERFORM set_config(names[i], 'off', true);
  END LOOP;
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF, SUMMARY OFF) ' || q INTO plan;
  FOR i IN 1 .. cardinality(names) LOOP
    PERFORM set_config(names[i], 'on', true);
  END LOOP;
  RETURN plan;
END $f$;

-- fetches(q): q's GpuIndexAgg node, forced, under EXPLAIN ANALYZE: its
-- entries taken from the image and fetched from the heap, each as none,
-- partly or all of its entries
CREATE FUNCTION fetches(q text)
RETURNS TABLE(node text, entries boolean, from_image text, heap text)
LANGUAGE plpgsql AS $f$
DECLARE
  plan jsonb;
  n jsonb;
BEGIN
  plan := forced_agg_plan(q);
  FOR n IN SELECT jsonb_path_query(plan, 'strict $.** ? (@."Node Type" == "Custom Scan")') LOOP
    node := n->>'Custom Plan Provider';
    entries := (n->>'Entries')::bigint > 0;
    from_image := CASE WHEN (n->>'From Image')::bigint = 0 THEN 'none'
                       WHEN (n->>'From Image')::bigint < (n->>'Entries')::bigint THEN 'partly'
                       ELSE 'all' END;
    heap := CASE WHEN (n->>'Heap Fetches')::bigint = 0 THEN 'none'
                 WHEN (n->>'Heap Fetches')::bigint < (n->>'Entries')::bigint THEN 'partly'
                 ELSE 'all' END;
    RETURN NEXT;
  END LOOP;
END $f$;

-- added_on(q, idx, reads): whether q's GpuIndexAgg node (forced, under
-- EXPLAIN ANALYZE) added up where it should (Aggregated On): on the device
-- for a GPU image over at least gpuidx.gpu_min_agg_entries entries (in
-- service mode the service's image: gpuidx_info's engine is then the
-- service's, and the service adds up), unless q reads the key (reads
-- 'key') of a veb image (it holds no keys by position on the device); on
-- the host otherwise, and for a private image in service mode (the store
-- had no room: the service holds no engine image of it).  reads 'include':
-- q reads INCLUDE columns, not the key; where it added up on the device,
-- gpuidx_info must count the included columns' device bytes (columns_kept:
-- in service mode the service's)
CREATE FUNCTION added_on(q text, idx regclass, reads text)
RETURNS TABLE(node text, as_expected boolean, columns_kept boolean)
LANGUAGE plpgsql AS $f$
DECLARE
  plan jsonb;
  n jsonb;
  info jsonb := gpuidx_info(idx);
  private_in_service boolean := NOT (info->>'service')::boolean AND
    current_setting('shared_preload_libraries') LIKE '%gpuidx%' AND
    current_setting('gpuidx.service') = 'on';
  expected text;
BEGIN
  plan := forced_agg_plan(q);
  FOR n IN SELECT jsonb_path_query(plan, 'strict $.** ? (@."Node Type" == "Custom Scan")') LOOP
    node := n->>'Custom Plan Provider';
    expected := CASE WHEN info->>'engine' = 'gpu' AND NOT private_in_service
                       AND (reads <> 'key' OR info->>'structure' = 'btree')
                       AND (n->>'Entries')::bigint > 0
                       AND (n->>'Entries')::bigint >= current_setting('gpuidx.gpu_min_agg_entries')::bigint
                     THEN 'gpu' ELSE 'host' END;
    as_expected := n->>'Aggregated On' = expected;
    columns_kept := reads <> 'include' OR expected = 'host' OR
      (gpuidx_info(idx)->>'include_device_bytes')::bigint > 0;
    RETURN NEXT;
  END LOOP;
END $f$;

-- every check of one state of the tables
CREATE FUNCTION all_checks()
RETURNS TABLE(what text, node boolean, result text, same_btree boolean,
              same_off boolean, same_seqscan boolean)
LANGUAGE sql AS $f$
SELECT * FROM acheck('key', $$SELECT count(*), count(k), sum(k), avg(k), min(k), max(k)
    FROM @T@ WHERE k BETWEEN -300 AND 900$$)
UNION ALL SELECT * FROM acheck('int2', $$SELECT count(c_i2), sum(c_i2), avg(c_i2), min(c_i2), max(c_i2)
    FROM @T@ WHERE k BETWEEN -300 AND 900$$)
UNION ALL SELECT * FROM acheck('int4', $$SELECT count(c_i4), sum(c_i4), avg(c_i4), min(c_i4), max(c_i4)
    FROM @T@ WHERE k BETWEEN -300 AND 900$$)
UNION ALL SELECT * FROM acheck('int8 sums past int8', $$SELECT count(c_i8), sum(c_i8), avg(c_i8), min(c_i8), max(c_i8)
    FROM @T@ WHERE k BETWEEN -300 AND 900$$)
UNION ALL SELECT * FROM acheck('floats NaN inf', $$SELECT count(c_f4), min(c_f4), max(c_f4), count(c_f8), min(c_f8), max(c_f8)
    FROM @T@ WHERE k BETWEEN -700 AND 1299$$)
UNION ALL SELECT * FROM acheck('floats no NaN', $$SELECT min(c_f4), max(c_f4), min(c_f8), max(c_f8)
    FROM @T@ WHERE k < 500 AND k > 300$$)
UNION ALL SELECT * FROM acheck('date timestamps', $$SELECT count(c_d), min(c_d), max(c_d), count(c_ts), min(c_ts), max(c_ts),
    count(c_tz), min(c_tz), max(c_tz) FROM @T@ WHERE k BETWEEN -300 AND 900$$)
UNION ALL SELECT * FROM acheck('bool oid', $$SELECT count(c_b), bool_and(c_b), bool_or(c_b), every(c_b),
    count(c_o), min(c_o), max(c_o) FROM @T@ WHERE k BETWEEN -300 AND 900$$)
UNION ALL SELECT * FROM acheck('bool all true', $$SELECT bool_and(c_b), bool_or(c_b) FROM @T@ WHERE k IN (-699, -696, 9223372036854775807)$$)
UNION ALL SELECT * FROM acheck('= ANY dups misses NULL', $$SELECT count(*), sum(c_i4), min(c_ts), max(c_o)
    FROM @T@ WHERE k = ANY ('{5, 5, -700, 1299, 1300, 77777, NULL, -3}'::int8[])$$)
UNION ALL SELECT * FROM acheck('OR of ranges', $$SELECT count(*), sum(c_i2), avg(c_i8), max(c_f8)
    FROM @T@ WHERE k BETWEEN -650 AND -600 OR k BETWEEN 100 AND 120 OR k = 1000 OR (k > 1250 AND k <= 1260)$$)
UNION ALL SELECT * FROM acheck('empty range', $$SELECT count(*), count(c_i4), sum(c_i4), sum(c_i8), avg(k), min(c_d), bool_or(c_b)
    FROM @T@ WHERE k BETWEEN 5000 AND 6000$$)
UNION ALL SELECT * FROM acheck('contradiction', $$SELECT count(*), sum(k) FROM @T@ WHERE k > 10 AND k < 5$$)
UNION ALL SELECT * FROM acheck('int8 extremes', $$SELECT count(*), sum(k), avg(k), min(k), max(k), sum(c_i8), count(c_b)
    FROM @T@ WHERE k <= -9223372036854775000 OR k >= 9223372036854775000$$)
UNION ALL SELECT * FROM acheck('int8 min key only', $$SELECT count(*), sum(k), min(c_i8) FROM @T@ WHERE k < -9223372036854775807$$)
UNION ALL SELECT * FROM acheck('negatives', $$SELECT count(*), sum(k), avg(k), sum(c_i4), avg(c_i2) FROM @T@ WHERE k < -100$$)
UNION ALL SELECT * FROM acheck('expressions of aggregates', $$SELECT sum(c_i4) * 2 + count(*), max(k) - min(k), avg(c_i4)::int
    FROM @T@ WHERE k >= 0 AND k < 250$$)
UNION ALL SELECT * FROM acheck('HAVING kept', $$SELECT count(*), sum(c_i4) FROM @T@ WHERE k BETWEEN 0 AND 99 HAVING count(*) > 10$$)
UNION ALL SELECT * FROM acheck('HAVING rejects', $$SELECT count(*) FROM @T@ WHERE k BETWEEN 0 AND 99 HAVING sum(c_i2) > 100000000$$)
UNION ALL SELECT * FROM acheck('int4 key', $$SELECT count(*), sum(k), avg(k), min(k), max(k), count(q), sum(q), avg(q), min(q), max(q)
    FROM @T@ WHERE k > -100000 AND k < 120000 OR k >= 2147483647$$, 'u')
UNION ALL SELECT * FROM acheck('int4 key extremes', $$SELECT count(*), sum(k), avg(k), sum(q) FROM @T@
    WHERE k = ANY ('{2147483647, -2147483648}')$$, 'u')
UNION ALL SELECT * FROM acheck('int2 key', $$SELECT count(*), count(k), sum(k), avg(k), min(k), max(k)
    FROM @T@ WHERE k >= -32768$$, 'w')
UNION ALL SELECT * FROM acheck('int2 key, int8 bound', $$SELECT count(*), sum(k) FROM @T@ WHERE k > 30000::int8 AND k < 99999::int8$$, 'w')
$f$;

-- Sections 1 to 7 add up on the device whatever the entry count where the
-- image is a GPU one (a CPU image adds up on the host either way); section
-- 8 goes back to the default crossover, then runs its checks under both.
SET gpuidx.gpu_min_agg_entries = 0;

-- 1. every page all-visible: the plan, and every entry from the image
EXPLAIN (COSTS OFF) SELECT count(*), sum(c_i4), avg(c_i8), min(c_ts), max(k)
  FROM t WHERE k BETWEEN 100 AND 400;
EXPLAIN (COSTS OFF) SELECT sum(q) FROM u WHERE k = ANY ('{1, 2, 3}') OR k < -149000;
SELECT * FROM fetches($$SELECT count(*), sum(c_i4) FROM t WHERE k BETWEEN 100 AND 400$$);
SELECT * FROM all_checks();

-- 2. not offered: GROUP BY, a qual the batch does not answer, float sum
-- and avg, DISTINCT or FILTER in an aggregate, a column the index does
-- not hold, an expression argument, no WHERE, a NULL test
EXPLAIN (COSTS OFF) SELECT k, count(*) FROM t WHERE k BETWEEN 1 AND 5 GROUP BY k;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE k BETWEEN 1 AND 5 AND id > 0;
EXPLAIN (COSTS OFF) SELECT sum(c_f8) FROM t WHERE k BETWEEN 1 AND 5;
EXPLAIN (COSTS OFF) SELECT avg(c_f4) FROM t WHERE k BETWEEN 1 AND 5;
EXPLAIN (COSTS OFF) SELECT count(DISTINCT c_i4) FROM t WHERE k BETWEEN 1 AND 5;
EXPLAIN (COSTS OFF) SELECT count(*) FILTER (WHERE c_b) FROM t WHERE k BETWEEN 1 AND 5;
EXPLAIN (COSTS OFF) SELECT sum(id) FROM t WHERE k BETWEEN 1 AND 5;
EXPLAIN (COSTS OFF) SELECT sum(c_i4 + 1) FROM t WHERE k BETWEEN 1 AND 5;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t;
EXPLAIN (COSTS OFF) SELECT count(*) FROM t WHERE k IS NULL;
SET gpuidx.enable_customagg = off;
EXPLAIN (COSTS OFF) SELECT count(*), sum(c_i4) FROM t WHERE k BETWEEN 100 AND 400;
RESET gpuidx.enable_customagg;

-- 3. parameters: a prepared statement (generic plan) and a correlated
-- subquery (a rescan per outer row)
PREPARE p(int8, int8) AS SELECT count(*), sum(c_i4), max(c_d) FROM t WHERE k BETWEEN $1 AND $2;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE p(1, 2);
EXECUTE p(-100, 100);
SELECT count(*), sum(c_i4), max(c_d) FROM tb WHERE k BETWEEN -100 AND 100;
EXECUTE p(100, -100);
RESET plan_cache_mode;
DEALLOCATE p;
CREATE TABLE o (x int8);
INSERT INTO o VALUES (-700), (0), (5), (640), (NULL), (9223372036854775806);
SELECT * FROM acheck('correlated subquery', $$SELECT o.x, (SELECT sum(c_i4) FROM @T@ WHERE k BETWEEN o.x AND o.x + 10) AS s,
    (SELECT count(*) FROM @T@ WHERE k = o.x) AS c FROM o$$);

-- 4. a few pages changed (an UPDATE of included columns, not HOT, and a
-- DELETE of neighbouring rows), not vacuumed: entries on those pages come
-- from the heap, the others from the image
UPDATE t SET c_i2 = NULL, c_i8 = -c_i8 WHERE id BETWEEN 1000 AND 1300;
UPDATE tb SET c_i2 = NULL, c_i8 = -c_i8 WHERE id BETWEEN 1000 AND 1300;
DELETE FROM t WHERE id BETWEEN 1301 AND 1400;
DELETE FROM tb WHERE id BETWEEN 1301 AND 1400;
SELECT * FROM fetches($$SELECT count(*), sum(c_i2) FROM t WHERE k BETWEEN -700 AND 1299$$);
SELECT * FROM all_checks();

-- 5. rows deleted and updated all over, not vacuumed: their pages are read from
-- the heap (the old versions are invisible); an UPDATE of an included
-- column is not HOT (new entries), one of pad only is
DELETE FROM t WHERE id % 10 = 1;
DELETE FROM tb WHERE id % 10 = 1;
UPDATE t SET c_i4 = c_i4 + 1, c_f8 = -c_f8, c_b = NOT c_b WHERE id % 10 = 2;
UPDATE tb SET c_i4 = c_i4 + 1, c_f8 = -c_f8, c_b = NOT c_b WHERE id % 10 = 2;
UPDATE t SET pad = 'hot' WHERE id % 10 = 3;
UPDATE tb SET pad = 'hot' WHERE id % 10 = 3;
UPDATE t SET k = k + 1 WHERE id % 10 = 4;
UPDATE tb SET k = k + 1 WHERE id % 10 = 4;
DELETE FROM u WHERE id % 3 = 0;
DELETE FROM ub WHERE id % 3 = 0;
SELECT * FROM fetches($$SELECT count(*), sum(c_i4) FROM t WHERE k BETWEEN 100 AND 400$$);
SELECT * FROM all_checks();

-- 6. a transaction's own changes count; after rollback they don't
BEGIN;
INSERT INTO t (id, k, c_i4, c_i8, c_b) SELECT -g, g % 50, g, 9223372036854775807, false FROM generate_series(10, 300) g;
INSERT INTO tb (id, k, c_i4, c_i8, c_b) SELECT -g, g % 50, g, 9223372036854775807, false FROM generate_series(10, 300) g;
UPDATE t SET c_i2 = -1, c_ts = NULL WHERE id % 10 = 5 AND k < 500;
UPDATE tb SET c_i2 = -1, c_ts = NULL WHERE id % 10 = 5 AND k < 500;
DELETE FROM t WHERE id % 10 = 6 AND k > 0;
DELETE FROM tb WHERE id % 10 = 6 AND k > 0;
SELECT * FROM all_checks();
ROLLBACK;
SELECT * FROM all_checks();

-- 7. VACUUM: every page all-visible again, nothing from the heap
VACUUM t, tb, u, ub;
SELECT * FROM fetches($$SELECT count(*), sum(c_i4) FROM t WHERE k BETWEEN 100 AND 400$$);
SELECT * FROM all_checks();

RESET gpuidx.gpu_min_agg_entries;

-- 8. a larger table: ranges of whole blocks of entries on all-visible pages
-- (the host loop's contiguous path), = ANY of more keys than the staging
-- buffer holds (65536), then a part of the pages changed and rows inserted
-- after the image was loaded (its delta), then VACUUM again
CREATE TABLE m (id int, k int4, v int8, s int2, f float8, d date)
  WITH (autovacuum_enabled = off);
INSERT INTO m
SELECT g, g % 90000 - 45000,
       CASE WHEN g % 9 = 0 THEN NULL WHEN g % 2 = 0 THEN 9223372036854775807 - g
            ELSE -9223372036854775807 + g * 3 END,
       CASE WHEN g % 4 = 0 THEN NULL ELSE (g % 65536 - 32768)::int2 END,
       CASE WHEN g % 6 = 0 THEN NULL ELSE g / 3.0 END,
       CASE WHEN g % 8 = 0 THEN NULL ELSE date '1990-01-01' + g % 20000 END
  FROM generate_series(1, 100000) g;
CREATE TABLE mb (LIKE m) WITH (autovacuum_enabled = off);
INSERT INTO mb SELECT * FROM m;
CREATE INDEX m_gi ON m USING gpuidx (k) INCLUDE (v, s, f, d);
CREATE INDEX mb_bt ON mb USING btree (k) INCLUDE (v, s, f, d);
VACUUM ANALYZE m, mb;
CREATE FUNCTION m_checks()
RETURNS TABLE(what text, node boolean, result text, same_btree boolean,
              same_off boolean, same_seqscan boolean)
LANGUAGE sql AS $f$
SELECT * FROM acheck('m wide range', $$SELECT count(*), count(v), sum(v), avg(v), min(v), max(v), sum(s), min(s),
    max(s), min(f), max(f), min(d), max(d), sum(k), min(k), max(k) FROM @T@ WHERE k BETWEEN -44000 AND 43000$$, 'm')
UNION ALL SELECT * FROM acheck('m = ANY of 70000 keys', format($$SELECT count(*), sum(v), avg(s), min(f), max(d), sum(k)
    FROM @T@ WHERE k = ANY (%L::int4[])$$, (SELECT array_agg(g * 13 % 91009 - 45500) FROM generate_series(1, 70000) g)), 'm')
UNION ALL SELECT * FROM acheck('m = ANY, count only', format($$SELECT count(*) FROM @T@ WHERE k = ANY (%L::int4[])$$,
    (SELECT array_agg(g * 17 % 91009 - 45500) FROM generate_series(1, 30000) g)), 'm')
UNION ALL SELECT * FROM acheck('m = ANY, key only', format($$SELECT count(*), sum(k), min(k), max(k) FROM @T@ WHERE k = ANY (%L::int4[])$$,
    (SELECT array_agg(g * 17 % 91009 - 45500) FROM generate_series(1, 30000) g)), 'm')
UNION ALL SELECT * FROM acheck('m empty', $$SELECT count(*), sum(v), min(s) FROM @T@ WHERE k > 50000$$, 'm')
$f$;
SELECT * FROM fetches($$SELECT count(*), sum(v) FROM m WHERE k BETWEEN -44000 AND 43000$$);
SELECT * FROM m_checks();
SELECT * FROM added_on($$SELECT count(*) FROM m WHERE k BETWEEN -44000 AND 43000$$, 'm_gi', 'count');
SELECT * FROM added_on($$SELECT sum(k), min(k) FROM m WHERE k BETWEEN -44000 AND 43000$$, 'm_gi', 'key');
SELECT * FROM added_on($$SELECT count(*), sum(v) FROM m WHERE k BETWEEN -44000 AND 43000$$, 'm_gi', 'include');
SET gpuidx.gpu_min_agg_entries = 0;
SELECT * FROM m_checks();
SELECT * FROM added_on($$SELECT count(*) FROM m WHERE k = ANY ('{1, 2, 3}')$$, 'm_gi', 'count');
SELECT * FROM added_on($$SELECT sum(k), min(k) FROM m WHERE k = ANY ('{1, 2, 3}')$$, 'm_gi', 'key');
SELECT * FROM added_on($$SELECT count(*), sum(v) FROM m WHERE k = ANY ('{1, 2, 3}')$$, 'm_gi', 'include');
RESET gpuidx.gpu_min_agg_entries;
UPDATE m SET v = -v WHERE id % 50 = 7 AND id < 20000;
UPDATE mb SET v = -v WHERE id % 50 = 7 AND id < 20000;
INSERT INTO m SELECT -g, g * 7 % 90000 - 45000, g, NULL, -g, NULL FROM generate_series(1, 3000) g;
INSERT INTO mb SELECT -g, g * 7 % 90000 - 45000, g, NULL, -g, NULL FROM generate_series(1, 3000) g;
SELECT * FROM fetches($$SELECT count(*), sum(v) FROM m WHERE k BETWEEN -44000 AND 43000$$);
SELECT * FROM m_checks();
SELECT * FROM added_on($$SELECT count(*) FROM m WHERE k BETWEEN -44000 AND 43000$$, 'm_gi', 'count');
SELECT * FROM added_on($$SELECT sum(k), min(k) FROM m WHERE k BETWEEN -44000 AND 43000$$, 'm_gi', 'key');
SELECT * FROM added_on($$SELECT count(*), sum(v) FROM m WHERE k BETWEEN -44000 AND 43000$$, 'm_gi', 'include');
SET gpuidx.gpu_min_agg_entries = 0;
SELECT * FROM m_checks();
SELECT * FROM added_on($$SELECT count(*) FROM m WHERE k = ANY ('{1, 2, 3}')$$, 'm_gi', 'count');
SELECT * FROM added_on($$SELECT sum(k), min(k) FROM m WHERE k = ANY ('{1, 2, 3}')$$, 'm_gi', 'key');
SELECT * FROM added_on($$SELECT count(*), sum(v) FROM m WHERE k = ANY ('{1, 2, 3}')$$, 'm_gi', 'include');
RESET gpuidx.gpu_min_agg_entries;
VACUUM m, mb;
SELECT * FROM fetches($$SELECT count(*), sum(v) FROM m WHERE k BETWEEN -44000 AND 43000$$);
SELECT * FROM m_checks();
SELECT * FROM added_on($$SELECT count(*) FROM m WHERE k BETWEEN -44000 AND 43000$$, 'm_gi', 'count');
SELECT * FROM added_on($$SELECT sum(k), min(k) FROM m WHERE k BETWEEN -44000 AND 43000$$, 'm_gi', 'key');
SELECT * FROM added_on($$SELECT count(*), sum(v) FROM m WHERE k BETWEEN -44000 AND 43000$$, 'm_gi', 'include');
SET gpuidx.gpu_min_agg_entries = 0;
SELECT * FROM m_checks();
SELECT * FROM added_on($$SELECT count(*) FROM m WHERE k = ANY ('{1, 2, 3}')$$, 'm_gi', 'count');
SELECT * FROM added_on($$SELECT sum(k), min(k) FROM m WHERE k = ANY ('{1, 2, 3}')$$, 'm_gi', 'key');
SELECT * FROM added_on($$SELECT count(*), sum(v) FROM m WHERE k = ANY ('{1, 2, 3}')$$, 'm_gi', 'include');
RESET gpuidx.gpu_min_agg_entries;

-- 9. security: no SELECT privilege is an error; with row-level security
-- enabled the path is not offered and the policy applies
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_gpuidx_agg_reader;
DROP ROLE IF EXISTS regress_gpuidx_agg_noselect;
RESET client_min_messages;
CREATE ROLE regress_gpuidx_agg_reader;
CREATE ROLE regress_gpuidx_agg_noselect;
GRANT USAGE ON SCHEMA gi_agg TO regress_gpuidx_agg_reader, regress_gpuidx_agg_noselect;
GRANT SELECT ON t TO regress_gpuidx_agg_reader;
SET ROLE regress_gpuidx_agg_noselect;
SELECT count(*) FROM t WHERE k BETWEEN 100 AND 400;
RESET ROLE;
SET ROLE regress_gpuidx_agg_reader;
SELECT count(*), sum(c_i4) FROM t WHERE k BETWEEN 100 AND 400;
RESET ROLE;
SELECT count(*), sum(c_i4) FROM tb WHERE k BETWEEN 100 AND 400;
ALTER TABLE t ENABLE ROW LEVEL SECURITY;
CREATE POLICY t_some ON t FOR SELECT USING (c_b);
SET ROLE regress_gpuidx_agg_reader;
EXPLAIN (COSTS OFF) SELECT count(*), sum(c_i4) FROM t WHERE k BETWEEN 100 AND 400;
SELECT count(*), sum(c_i4) FROM t WHERE k BETWEEN 100 AND 400;
RESET ROLE;
SELECT count(*), sum(c_i4) FROM tb WHERE k BETWEEN 100 AND 400 AND c_b;
-- the owner bypasses the policy, and still gets no GpuIndexAgg
EXPLAIN (COSTS OFF) SELECT count(*), sum(c_i4) FROM t WHERE k BETWEEN 100 AND 400;
ALTER TABLE t DISABLE ROW LEVEL SECURITY;

DROP SCHEMA gi_agg CASCADE;
DROP ROLE regress_gpuidx_agg_reader;
DROP ROLE regress_gpuidx_agg_noselect;
