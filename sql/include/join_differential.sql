--
-- join_differential.sql: the differential test of GpuIndexJoin against
-- PostgreSQL's btree, run by the sql/27..29_join_*.sql drivers (not a test of
-- its own: pg_regress runs only sql/*.sql).  A driver sets these psql
-- variables and includes this file:
--   schema     schema the test runs in (dropped at the end)
--   type       key column type of the inner tables: int2, int4 or int8
--   structure  default (the indexes take gpuidx.default_structure, so the
--              suite's pass per structure covers both) or btree | veb
--   seed       setseed() value: the data and probes are reproducible
--   rows       rows in the inner table t
--   probes     outer rows whose key is drawn from t (half as many dense and
--              as many wide random ones follow, and a twentieth as many NULLs)
--   wide       a float expression drawing one random() in the type's wide
--              range (the random part of the keys beyond -1000..1000)
--   outside    int8[] literal: probe values beyond the type's range
--
-- Inner tables: t (duplicate keys, NULLs, negatives, the type's extremes)
-- and u (the distinct keys of t: as-of answers there are unique, so whole
-- rows are compared), each with a gpuidx index, and their twins tb and ub
-- with a btree index; every write goes to both.  The outer table o holds
-- the probes: x (int8: keys of t, repeated; random; extremes; values beyond
-- the type's range; NULL), x4 and x2 (x as int4 / int2 where it fits, else
-- NULL: cross-type comparisons in both directions) and a range lo..hi per row.
--
-- Every query goes through jcheck() (sql/include/join_check.sql): GpuIndexJoin
-- forced, nested loops over gpuidx index scans, and the planner's choice,
-- each against the btree twin; every missing/extra count must be 0.
-- As-of queries on t, where keys repeat and LIMIT may break ties either way,
-- return (outer id, key); on u they return whole rows.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuidx;
DROP SCHEMA IF EXISTS :schema CASCADE;
CREATE SCHEMA :schema;
RESET client_min_messages;
SET search_path = :schema, public;
SET max_parallel_workers_per_gather = 0;

-- the key type's least and greatest values, and whether the driver names
-- the structure
SELECT (-(2::numeric ^ (8 * typlen - 1)))::int8 AS kmin,
       (2::numeric ^ (8 * typlen - 1) - 1)::int8 AS kmax,
       :'structure' <> 'default' AS named_structure
  FROM pg_type WHERE oid = :'type'::regtype \gset

\i sql/include/join_check.sql

-- the data
SELECT setseed(:seed);
CREATE TABLE t (id int, k :type, pad text) WITH (autovacuum_enabled = off);
INSERT INTO t
SELECT g, CASE WHEN r < 0.02 THEN NULL
               WHEN r < 0.05 THEN (ARRAY[:'kmin'::int8, :'kmin'::int8 + 1, :'kmax'::int8 - 1, :'kmax'::int8]:::type[])[1 + (random() * 3)::int]
               WHEN r < 0.60 THEN (random() * 2000 - 1000)::int8
               ELSE :wide::int8 END,
       't' || g
  FROM (SELECT g, random() AS r FROM generate_series(1, :rows) g) s;
CREATE TABLE u (id int, k :type, pad text) WITH (autovacuum_enabled = off);
INSERT INTO u SELECT min(id), k, 'u' || min(id) FROM t WHERE k IS NOT NULL GROUP BY k;
INSERT INTO u VALUES (-1, NULL, 'null key'), (-2, NULL, 'null key');
CREATE TABLE tb (LIKE t) WITH (autovacuum_enabled = off);
INSERT INTO tb SELECT * FROM t;
CREATE TABLE ub (LIKE u) WITH (autovacuum_enabled = off);
INSERT INTO ub SELECT * FROM u;
\if :named_structure
CREATE INDEX t_gi ON t USING gpuidx (k) WITH (structure = :structure);
CREATE INDEX u_gi ON u USING gpuidx (k) WITH (structure = :structure);
SELECT gpuidx_info('t_gi')->>'structure' AS structure;
\else
CREATE INDEX t_gi ON t USING gpuidx (k);
CREATE INDEX u_gi ON u USING gpuidx (k);
\endif
CREATE INDEX tb_bt ON tb (k);
CREATE INDEX ub_bt ON ub (k);
SELECT count(*) AS rows, count(k) AS keys, count(DISTINCT k) AS distinct_keys,
       count(*) FILTER (WHERE k < 0) > 0 AS has_negatives,
       count(*) FILTER (WHERE k IN (:'kmin'::int8, :'kmax'::int8)) > 0 AS has_extremes
  FROM t;

-- the outer rows, in random order
CREATE TABLE o (id int, x int8, x4 int4, x2 int2, lo int8, hi int8);
INSERT INTO o (id, x)
SELECT row_number() OVER (ORDER BY random()), v FROM (
  (SELECT k::int8 AS v FROM t, generate_series(1, 2) r WHERE k IS NOT NULL ORDER BY random() LIMIT :probes)
  UNION ALL SELECT (random() * 2200 - 1100)::int8 FROM generate_series(1, :probes / 2)
  UNION ALL SELECT :wide::int8 FROM generate_series(1, :probes / 2)
  UNION ALL SELECT unnest(ARRAY[:'kmin'::int8, :'kmin'::int8 + 1, :'kmax'::int8 - 1, :'kmax'::int8]::int8[])
  UNION ALL SELECT unnest(:'outside'::int8[])
  UNION ALL SELECT NULL::int8 FROM generate_series(1, :probes / 20)) p;
UPDATE o SET x4 = CASE WHEN x BETWEEN -2147483648 AND 2147483647 THEN x END,
             x2 = CASE WHEN x BETWEEN -32768 AND 32767 THEN x END,
             lo = CASE WHEN id % 250 = 0 THEN least(x, -1099511627776) ELSE x END,
             hi = CASE WHEN id % 250 = 0 THEN least(x, -900)
                       WHEN id % 37 = 0 AND x > -9223372036854775808 THEN x - 1
                       WHEN x > 9223372036854775807 - 40 THEN x
                       ELSE x + id % 40 END;
ANALYZE t, tb, u, ub, o;
SELECT count(*) AS outer_rows, count(x) AS probes, count(DISTINCT x) AS distinct_probes,
       count(*) FILTER (WHERE x NOT BETWEEN :'kmin'::int8 AND :'kmax'::int8) AS outside_type,
       count(x4) AS int4_probes, count(x2) AS int2_probes, count(*) FILTER (WHERE lo > hi) AS empty_ranges
  FROM o;

-- each join kind's plan with GpuIndexJoin forced
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT o.id, t.id, t.k FROM o JOIN t ON t.k = o.x;
EXPLAIN (COSTS OFF) SELECT o.id, t.id, t.k FROM o LEFT JOIN t ON t.k = o.x2 * 2;
EXPLAIN (COSTS OFF) SELECT o.id FROM o WHERE o.x4 IN (SELECT k FROM t);
EXPLAIN (COSTS OFF) SELECT o.id FROM o WHERE NOT EXISTS (SELECT 1 FROM t WHERE t.k = o.x);
EXPLAIN (COSTS OFF) SELECT o.id, t.id, t.k FROM o JOIN t ON t.k BETWEEN o.lo AND o.hi;
EXPLAIN (COSTS OFF) SELECT o.id, t.id, t.k FROM o JOIN t ON t.k >= o.lo AND t.k < o.hi;
EXPLAIN (COSTS OFF) SELECT o.id, s.k FROM o JOIN LATERAL
  (SELECT t.id, t.k FROM t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true;
EXPLAIN (COSTS OFF) SELECT o.id, s.k FROM o LEFT JOIN LATERAL
  (SELECT t.id, t.k FROM t WHERE t.k > o.x2 AND t.id % 2 = 0 ORDER BY t.k LIMIT 3) s ON true;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;

-- every query, compared four ways (see the header)
CREATE FUNCTION compare_all()
RETURNS TABLE(what text, node boolean, rows bigint, missing bigint, extra bigint,
              nl_missing bigint, nl_extra bigint, pl_missing bigint, pl_extra bigint)
LANGUAGE plpgsql AS $f$
BEGIN
  -- equi: inner and left joins; semi- and anti-joins
  RETURN QUERY SELECT * FROM jcheck('inner int8 probe',
    $$SELECT o.id, t.id AS tid, t.k FROM o JOIN @T@ t ON t.k = o.x$$);
  RETURN QUERY SELECT * FROM jcheck('inner int4 probe',
    $$SELECT o.id, t.id AS tid, t.k FROM o JOIN @T@ t ON t.k = o.x4$$);
  RETURN QUERY SELECT * FROM jcheck('inner int2 probe',
    $$SELECT o.id, t.id AS tid, t.k FROM o JOIN @T@ t ON t.k = o.x2$$);
  RETURN QUERY SELECT * FROM jcheck('inner probe expression',
    $$SELECT o.id, t.id AS tid, t.k FROM o JOIN @T@ t ON t.k = o.x2 * 2$$);
  RETURN QUERY SELECT * FROM jcheck('inner other join clause',
    $$SELECT o.id, t.id AS tid, t.k FROM o JOIN @T@ t ON t.k = o.x AND t.id < o.id * 3$$);
  RETURN QUERY SELECT * FROM jcheck('inner qual on t',
    $$SELECT o.id, t.id AS tid, t.k FROM o JOIN @T@ t ON t.k = o.x WHERE t.id % 3 = 0$$);
  RETURN QUERY SELECT * FROM jcheck('inner whole rows',
    $$SELECT o.*, t.id AS tid, t.k, t.pad FROM o JOIN @T@ t ON t.k = o.x$$, 'u');
  RETURN QUERY SELECT * FROM jcheck('inner key only',
    $$SELECT o.id, t.k FROM o JOIN @T@ t ON t.k = o.x4$$);
  RETURN QUERY SELECT * FROM jcheck('left',
    $$SELECT o.id, t.id AS tid, t.k FROM o LEFT JOIN @T@ t ON t.k = o.x$$);
  RETURN QUERY SELECT * FROM jcheck('left probe expression',
    $$SELECT o.id, t.id AS tid, t.k FROM o LEFT JOIN @T@ t ON t.k = o.x2 * 2$$);
  RETURN QUERY SELECT * FROM jcheck('left qual on t',
    $$SELECT o.id, t.id AS tid, t.k FROM o LEFT JOIN @T@ t ON t.k = o.x4 AND t.id % 2 = 0$$);
  RETURN QUERY SELECT * FROM jcheck('semi IN',
    $$SELECT o.id, o.x FROM o WHERE o.x IN (SELECT k FROM @T@)$$);
  RETURN QUERY SELECT * FROM jcheck('semi EXISTS',
    $$SELECT o.id, o.x FROM o WHERE EXISTS (SELECT 1 FROM @T@ t WHERE t.k = o.x4 AND t.id % 5 <> 0)$$);
  RETURN QUERY SELECT * FROM jcheck('semi = ANY',
    $$SELECT o.id, o.x FROM o WHERE o.x2 = ANY (SELECT k FROM @T@)$$);
  RETURN QUERY SELECT * FROM jcheck('anti NOT EXISTS',
    $$SELECT o.id, o.x FROM o WHERE NOT EXISTS (SELECT 1 FROM @T@ t WHERE t.k = o.x)$$);
  RETURN QUERY SELECT * FROM jcheck('anti NOT EXISTS qual',
    $$SELECT o.id, o.x FROM o WHERE NOT EXISTS (SELECT 1 FROM @T@ t WHERE t.k = o.x4 AND t.id % 2 = 1)$$);
  RETURN QUERY SELECT * FROM jcheck('NOT IN',
    $$SELECT o.id, o.x FROM o WHERE o.x NOT IN (SELECT k FROM @T@ WHERE k IS NOT NULL)$$);
  -- range
  RETURN QUERY SELECT * FROM jcheck('range BETWEEN',
    $$SELECT o.id, t.id AS tid, t.k FROM o JOIN @T@ t ON t.k BETWEEN o.lo AND o.hi$$);
  RETURN QUERY SELECT * FROM jcheck('range half-open',
    $$SELECT o.id, t.id AS tid, t.k FROM o JOIN @T@ t ON t.k >= o.lo AND t.k < o.hi$$);
  RETURN QUERY SELECT * FROM jcheck('range int2 bounds',
    $$SELECT o.id, t.id AS tid, t.k FROM o JOIN @T@ t ON t.k > o.x2 AND t.k <= o.x2 + 7$$);
  RETURN QUERY SELECT * FROM jcheck('range key only',
    $$SELECT o.id, t.k FROM o JOIN @T@ t ON t.k BETWEEN o.lo AND o.hi$$);
  RETURN QUERY SELECT * FROM jcheck('range one-sided >',
    $$SELECT o.id, t.id AS tid, t.k FROM o JOIN @T@ t ON t.k > o.hi WHERE o.id % 250 = 1$$);
  RETURN QUERY SELECT * FROM jcheck('range one-sided <=',
    $$SELECT o.id, t.id AS tid, t.k FROM o JOIN @T@ t ON o.lo >= t.k WHERE o.id % 250 = 2$$);
  RETURN QUERY SELECT * FROM jcheck('range left, qual on t',
    $$SELECT o.id, t.id AS tid, t.k FROM o LEFT JOIN @T@ t ON t.k BETWEEN o.lo AND o.hi AND t.id % 3 <> 0$$);
  RETURN QUERY SELECT * FROM jcheck('range semi',
    $$SELECT o.id FROM o WHERE EXISTS (SELECT 1 FROM @T@ t WHERE t.k BETWEEN o.lo AND o.hi)$$);
  -- as-of on t: ties, so (outer id, key)
  RETURN QUERY SELECT * FROM jcheck('pred LIMIT 1',
    $$SELECT o.id, s.k FROM o JOIN LATERAL
        (SELECT t.id, t.k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true$$);
  RETURN QUERY SELECT * FROM jcheck('pred LIMIT 3',
    $$SELECT o.id, s.k FROM o JOIN LATERAL
        (SELECT t.id, t.k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 3) s ON true$$);
  RETURN QUERY SELECT * FROM jcheck('pred LIMIT 1 left',
    $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
        (SELECT t.id, t.k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true$$);
  RETURN QUERY SELECT * FROM jcheck('pred < int4 LIMIT 3 left',
    $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
        (SELECT t.id, t.k FROM @T@ t WHERE t.k < o.x4 ORDER BY t.k DESC LIMIT 3) s ON true$$);
  RETURN QUERY SELECT * FROM jcheck('pred qual on t LIMIT 1',
    $$SELECT o.id, s.k FROM o JOIN LATERAL
        (SELECT t.id, t.k FROM @T@ t WHERE t.k <= o.x AND t.id % 3 <> 0 ORDER BY t.k DESC LIMIT 1) s ON true$$);
  RETURN QUERY SELECT * FROM jcheck('pred qual on t LIMIT 3 left',
    $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
        (SELECT t.id, t.k FROM @T@ t WHERE t.k <= o.x2 * 2 AND t.pad LIKE '%7%' ORDER BY t.k DESC LIMIT 3) s ON true$$);
  RETURN QUERY SELECT * FROM jcheck('succ LIMIT 1',
    $$SELECT o.id, s.k FROM o JOIN LATERAL
        (SELECT t.id, t.k FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s ON true$$);
  RETURN QUERY SELECT * FROM jcheck('succ LIMIT 3 left',
    $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
        (SELECT t.id, t.k FROM @T@ t WHERE t.k >= o.x ORDER BY t.k ASC LIMIT 3) s ON true$$);
  RETURN QUERY SELECT * FROM jcheck('succ > int2 qual LIMIT 3 left',
    $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
        (SELECT t.id, t.k FROM @T@ t WHERE t.k > o.x2 AND t.id % 2 = 0 ORDER BY t.k LIMIT 3) s ON true$$);
  RETURN QUERY SELECT * FROM jcheck('succ comma LATERAL',
    $$SELECT o.id, s.k FROM o, LATERAL
        (SELECT t.k FROM @T@ t WHERE t.k > o.x ORDER BY t.k LIMIT 1) s$$);
  -- as-of on u: no ties, whole rows
  RETURN QUERY SELECT * FROM jcheck('rows pred LIMIT 1',
    $$SELECT o.id AS o_id, s.* FROM o JOIN LATERAL
        (SELECT * FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true$$, 'u');
  RETURN QUERY SELECT * FROM jcheck('rows pred LIMIT 3 left',
    $$SELECT o.id AS o_id, s.* FROM o LEFT JOIN LATERAL
        (SELECT * FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 3) s ON true$$, 'u');
  RETURN QUERY SELECT * FROM jcheck('rows pred < qual LIMIT 1 left',
    $$SELECT o.id AS o_id, s.* FROM o LEFT JOIN LATERAL
        (SELECT * FROM @T@ t WHERE t.k < o.x4 AND t.id % 4 <> 0 ORDER BY t.k DESC LIMIT 1) s ON true$$, 'u');
  RETURN QUERY SELECT * FROM jcheck('rows succ LIMIT 1',
    $$SELECT o.id AS o_id, s.* FROM o CROSS JOIN LATERAL
        (SELECT * FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s$$, 'u');
  RETURN QUERY SELECT * FROM jcheck('rows succ > qual LIMIT 3 left',
    $$SELECT o.id AS o_id, s.* FROM o LEFT JOIN LATERAL
        (SELECT * FROM @T@ t WHERE t.k > o.x2 AND t.id % 3 <> 1 ORDER BY t.k LIMIT 3) s ON true$$, 'u');
END $f$;

-- 1. right after the build
SELECT * FROM compare_all();

-- a prepared statement with a parameter in the probe expression, as a
-- generic and as a custom plan
PREPARE pj(int8) AS SELECT o.id, t.id AS tid, t.k FROM o JOIN t ON t.k = o.x4 + $1;
PREPARE pjb(int8) AS SELECT o.id, t.id AS tid, t.k FROM o JOIN tb t ON t.k = o.x4 + $1;
PREPARE pa(int8) AS SELECT o.id, s.k FROM o LEFT JOIN LATERAL
  (SELECT t.k FROM t WHERE t.k <= o.x4 - $1 ORDER BY t.k DESC LIMIT 2) s ON true;
PREPARE pab(int8) AS SELECT o.id, s.k FROM o LEFT JOIN LATERAL
  (SELECT t.k FROM tb t WHERE t.k <= o.x4 - $1 ORDER BY t.k DESC LIMIT 2) s ON true;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SET plan_cache_mode = force_generic_plan;
EXPLAIN (COSTS OFF) EXECUTE pj(1);
EXPLAIN (COSTS OFF) EXECUTE pa(1);
CREATE TEMP TABLE p_gi AS EXECUTE pj(1);
CREATE TEMP TABLE p_gi2 AS EXECUTE pj(-3);
CREATE TEMP TABLE pa_gi AS EXECUTE pa(1);
SET plan_cache_mode = force_custom_plan;
CREATE TEMP TABLE p_gi3 AS EXECUTE pj(2);
CREATE TEMP TABLE pa_gi3 AS EXECUTE pa(-2);
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
SET gpuidx.enable_customjoin = off;
CREATE TEMP TABLE p_ref AS EXECUTE pjb(1);
CREATE TEMP TABLE p_ref2 AS EXECUTE pjb(-3);
CREATE TEMP TABLE pa_ref AS EXECUTE pab(1);
CREATE TEMP TABLE p_ref3 AS EXECUTE pjb(2);
CREATE TEMP TABLE pa_ref3 AS EXECUTE pab(-2);
RESET gpuidx.enable_customjoin;
RESET plan_cache_mode;
SELECT 'generic $1 = 1' AS what, * FROM tdiff('p_gi', 'p_ref')
UNION ALL SELECT 'generic $1 = -3', * FROM tdiff('p_gi2', 'p_ref2')
UNION ALL SELECT 'generic as-of $1 = 1', * FROM tdiff('pa_gi', 'pa_ref')
UNION ALL SELECT 'custom $1 = 2', * FROM tdiff('p_gi3', 'p_ref3')
UNION ALL SELECT 'custom as-of $1 = -2', * FROM tdiff('pa_gi3', 'pa_ref3');
DROP TABLE p_gi, p_gi2, pa_gi, p_gi3, pa_gi3, p_ref, p_ref2, pa_ref, p_ref3, pa_ref3;
DEALLOCATE ALL;

-- 2. after writes on both tables (deletes, key updates, NULLs, new rows in
-- batches smaller and larger than the pending limit, rolled-back inserts,
-- updates and deletes), with batches of 1024 outer rows answered on the host
SET gpuidx.pending_limit = 1000;
DELETE FROM t WHERE id % 10 = 3;
DELETE FROM tb WHERE id % 10 = 3;
UPDATE t SET k = k / 2 WHERE id % 10 = 4;
UPDATE tb SET k = k / 2 WHERE id % 10 = 4;
UPDATE t SET k = NULL WHERE id % 50 = 5;
UPDATE tb SET k = NULL WHERE id % 50 = 5;
UPDATE t SET k = :'kmax'::int8 WHERE id % 500 = 6;
UPDATE tb SET k = :'kmax'::int8 WHERE id % 500 = 6;
UPDATE t SET pad = pad || '7' WHERE id % 10 = 8;
UPDATE tb SET pad = pad || '7' WHERE id % 10 = 8;
CREATE TABLE newrows AS
SELECT :rows + g AS id, CASE WHEN g % 3 = 0 THEN (random() * 2000 - 1000):::type ELSE :wide::int8:::type END AS k, 'n' || g AS pad
  FROM generate_series(1, 2500) g;
INSERT INTO t SELECT * FROM newrows WHERE id % 5 = 0;
INSERT INTO tb SELECT * FROM newrows WHERE id % 5 = 0;
INSERT INTO t SELECT * FROM newrows WHERE id % 5 <> 0;
INSERT INTO tb SELECT * FROM newrows WHERE id % 5 <> 0;
-- u keeps its keys distinct: deletes, moves to a free key, new free keys
DELETE FROM u WHERE id % 10 = 3;
DELETE FROM ub WHERE id % 10 = 3;
UPDATE u SET k = k + 1, pad = pad || '+' WHERE id % 10 = 4 AND k < :'kmax'::int8
   AND NOT EXISTS (SELECT 1 FROM u u2 WHERE u2.k = u.k + 1);
UPDATE ub SET k = k + 1, pad = pad || '+' WHERE id % 10 = 4 AND k < :'kmax'::int8
   AND NOT EXISTS (SELECT 1 FROM ub u2 WHERE u2.k = ub.k + 1);
INSERT INTO u SELECT min(id), k, 'n' || min(id) FROM newrows n
  WHERE k IS NOT NULL AND NOT EXISTS (SELECT 1 FROM u WHERE u.k = n.k) GROUP BY k;
INSERT INTO ub SELECT min(id), k, 'n' || min(id) FROM newrows n
  WHERE k IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ub WHERE ub.k = n.k) GROUP BY k;
BEGIN;
INSERT INTO t SELECT id + 100000, k, pad FROM newrows;
INSERT INTO u SELECT id + 100000, k, pad FROM newrows;
UPDATE t SET k = k + 1 WHERE id % 10 = 9 AND k < 1000;
DELETE FROM t WHERE id % 10 = 1;
DELETE FROM u WHERE id % 10 = 1;
ROLLBACK;
SELECT (SELECT count(*) FROM t) = (SELECT count(*) FROM tb) AS same_rows,
       (SELECT count(*) FROM u) = (SELECT count(*) FROM ub) AS same_u_rows,
       (SELECT count(k) = count(DISTINCT k) FROM u) AS u_keys_distinct;
SET gpuidx.batch_chunk = 1024;
SET gpuidx.gpu_min_batch = 1000000;
SELECT * FROM compare_all();
RESET gpuidx.batch_chunk;
RESET gpuidx.gpu_min_batch;
RESET gpuidx.pending_limit;

-- 3. inside a transaction: its own inserts, updates and deletes are seen;
-- cursors declared before the writes see the rows as they were
BEGIN;
SET LOCAL enable_hashjoin = off;
SET LOCAL enable_mergejoin = off;
SET LOCAL enable_nestloop = off;
SELECT uses_join('SELECT o.id, t.id, t.k FROM o JOIN t ON t.k = o.x') AS equi_node,
       uses_join('SELECT o.id, s.* FROM o LEFT JOIN LATERAL (SELECT * FROM u WHERE u.k <= o.x ORDER BY u.k DESC LIMIT 1) s ON true') AS asof_node;
DECLARE c_eq NO SCROLL CURSOR FOR SELECT o.id, t.id, t.k FROM o JOIN t ON t.k = o.x;
DECLARE c_as NO SCROLL CURSOR FOR SELECT o.id, s.* FROM o LEFT JOIN LATERAL (SELECT * FROM u WHERE u.k <= o.x ORDER BY u.k DESC LIMIT 1) s ON true;
SET LOCAL enable_hashjoin = on;
SET LOCAL enable_mergejoin = on;
SET LOCAL enable_nestloop = on;
SET LOCAL gpuidx.enable_customjoin = off;
DECLARE r_eq NO SCROLL CURSOR FOR SELECT o.id, t.id, t.k FROM o JOIN tb t ON t.k = o.x;
DECLARE r_as NO SCROLL CURSOR FOR SELECT o.id, s.* FROM o LEFT JOIN LATERAL (SELECT * FROM ub u WHERE u.k <= o.x ORDER BY u.k DESC LIMIT 1) s ON true;
SET LOCAL gpuidx.enable_customjoin = on;
INSERT INTO t SELECT id + 300000, x, 'in transaction' FROM o WHERE id % 7 = 0 AND x BETWEEN :'kmin'::int8 AND :'kmax'::int8;
INSERT INTO tb SELECT id + 300000, x, 'in transaction' FROM o WHERE id % 7 = 0 AND x BETWEEN :'kmin'::int8 AND :'kmax'::int8;
UPDATE t SET k = k / 3 WHERE id % 10 = 2;
UPDATE tb SET k = k / 3 WHERE id % 10 = 2;
DELETE FROM t WHERE id % 10 = 5;
DELETE FROM tb WHERE id % 10 = 5;
DELETE FROM u WHERE id % 10 = 5;
DELETE FROM ub WHERE id % 10 = 5;
UPDATE u SET pad = 'updated in transaction' WHERE id % 10 = 6;
UPDATE ub SET pad = 'updated in transaction' WHERE id % 10 = 6;
INSERT INTO u SELECT min(id) + 300000, x, 'in transaction' FROM o
  WHERE id % 7 = 0 AND x BETWEEN :'kmin'::int8 AND :'kmax'::int8 AND NOT EXISTS (SELECT 1 FROM u WHERE u.k = o.x) GROUP BY x;
INSERT INTO ub SELECT min(id) + 300000, x, 'in transaction' FROM o
  WHERE id % 7 = 0 AND x BETWEEN :'kmin'::int8 AND :'kmax'::int8 AND NOT EXISTS (SELECT 1 FROM ub WHERE ub.k = o.x) GROUP BY x;
SELECT 'cursor equi' AS what, * FROM cursor_diff('c_eq', 'r_eq')
UNION ALL SELECT 'cursor as-of', * FROM cursor_diff('c_as', 'r_as');
SELECT (SELECT count(k) = count(DISTINCT k) FROM u) AS u_keys_distinct;
SELECT * FROM compare_all();
ROLLBACK;

-- 4. after VACUUM (dead entries removed, TIDs then reused by new rows),
-- with no batch too small for the GPU
VACUUM (INDEX_CLEANUP ON) t;
VACUUM (INDEX_CLEANUP ON) tb;
VACUUM (INDEX_CLEANUP ON) u;
VACUUM (INDEX_CLEANUP ON) ub;
INSERT INTO t SELECT id + 200000, k, pad FROM newrows WHERE id % 2 = 0;
INSERT INTO tb SELECT id + 200000, k, pad FROM newrows WHERE id % 2 = 0;
INSERT INTO u SELECT min(id) + 200000, k, 'v' || min(id) FROM t n
  WHERE id > 200000 AND k IS NOT NULL AND NOT EXISTS (SELECT 1 FROM u WHERE u.k = n.k) GROUP BY k;
INSERT INTO ub SELECT min(id) + 200000, k, 'v' || min(id) FROM tb n
  WHERE id > 200000 AND k IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ub WHERE ub.k = n.k) GROUP BY k;
SELECT (SELECT count(*) FROM u) = (SELECT count(*) FROM ub) AS same_u_rows,
       (SELECT count(k) = count(DISTINCT k) FROM u) AS u_keys_distinct;
SET gpuidx.gpu_min_batch = 0;
SELECT * FROM compare_all();
RESET gpuidx.gpu_min_batch;

SET client_min_messages = warning;
DROP SCHEMA :schema CASCADE;
