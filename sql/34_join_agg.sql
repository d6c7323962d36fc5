--
-- 34_join_agg: GpuIndexAgg over GpuIndexJoin, aggregates of an as-of
-- LATERAL join (LIMIT 1, predecessor or successor, inner or left, no GROUP
-- BY) added up from the join's answers.  Every aggregate it computes
-- (count(*), count, sum, avg, min, max, bool_and, bool_or, every) over the
-- key and over an included column of every type is compared, as text (so
-- types, numeric scales and float digits must match), with the same query
-- on a btree twin with the same INCLUDE (the reference) and on the gpuidx
-- table with gpuidx.enable_customagg off (Aggregate over GpuIndexJoin);
-- queries it must not take (an outer column, float sum and avg, DISTINCT,
-- FILTER, GROUP BY, LIMIT 2, a subquery filter, an expression argument) are
-- compared the same way and show that they stay a plain Aggregate.  Each
-- state of the table (all-visible after VACUUM; included columns updated
-- and rows deleted, not vacuumed, so answers on those pages walk the heap;
-- inside a transaction that changes rows; after its rollback; after VACUUM)
-- is checked four ways: the default engine adding up on the device where
-- the image is a GPU one (gpuidx.gpu_min_agg_entries = 0), the same with
-- the join's outer rows in chunks of 1024, the default engine adding up on
-- the host (gpuidx.gpu_min_agg_entries at its maximum), and gpuidx.engine =
-- cpu.  EXPLAIN ANALYZE is read as JSON and shown only as none / partly /
-- all, with whether it added up where it should (device or host).  The
-- tables and functions are sql/include/join_agg.sql's (35_join_agg_parallel
-- runs the same cases in parallel plans).
--
\set schema gi_join_agg
\i sql/include/setup.sql
SET max_parallel_workers_per_gather = 0;
SET timezone = 'UTC';

\i sql/include/join_agg.sql

-- 1. every page all-visible: the plans, the nodes, every case
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*), sum(s.c_i4), avg(s.c_i2), min(s.c_ts), max(s.k), count(s.c_f8), bool_or(s.c_b)
  FROM o CROSS JOIN LATERAL (SELECT t.k, t.c_i4, t.c_i2, t.c_ts, t.c_f8, t.c_b FROM t
  WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s;
EXPLAIN (COSTS OFF) SELECT count(*), min(s.k) FROM o LEFT JOIN LATERAL (SELECT t.k FROM t
  WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s ON true HAVING count(*) > 0;
-- not pushed: an outer column; LIMIT 2
EXPLAIN (COSTS OFF) SELECT count(*), sum(o.y), sum(s.c_i4) FROM o CROSS JOIN LATERAL
  (SELECT t.c_i4 FROM t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s;
EXPLAIN (COSTS OFF) SELECT count(*), sum(s.c_i4) FROM o CROSS JOIN LATERAL
  (SELECT t.c_i4 FROM t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 2) s;
-- gpuidx.enable_customagg off: Aggregate over GpuIndexJoin
SET gpuidx.enable_customagg = off;
EXPLAIN (COSTS OFF) SELECT count(*), sum(s.c_i4) FROM o CROSS JOIN LATERAL
  (SELECT t.c_i4 FROM t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s;
RESET gpuidx.enable_customagg;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
SELECT * FROM node_checks();
SELECT * FROM nodes($$SELECT count(*), sum(o.y), sum(s.c_i4) FROM o CROSS JOIN LATERAL
  (SELECT t.c_i4 FROM t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$);
SELECT * FROM state_checks();

-- 2. rows changed, not vacuumed (change_rows): answers on those pages walk
-- the heap, the others are added up from the image
SELECT change_rows();
SELECT * FROM node_checks();
SELECT * FROM state_checks();

-- 3. a transaction's own changes count (new keys 3m+2, updates, deletes);
-- after its rollback they don't
BEGIN;
INSERT INTO t (id, k, c_i2, c_i4, c_i8, c_b, c_d) SELECT -100 - g, g * 3 + 2, g, -g, 9223372036854775807, false, date '2100-01-01' + g
  FROM generate_series(-200, 700) g;
INSERT INTO tb (id, k, c_i2, c_i4, c_i8, c_b, c_d) SELECT -100 - g, g * 3 + 2, g, -g, 9223372036854775807, false, date '2100-01-01' + g
  FROM generate_series(-200, 700) g;
UPDATE t SET c_i4 = c_i4 + 1, c_f4 = 'NaN' WHERE k BETWEEN -600 AND -450;
UPDATE tb SET c_i4 = c_i4 + 1, c_f4 = 'NaN' WHERE k BETWEEN -600 AND -450;
DELETE FROM t WHERE k BETWEEN 5000 AND 5300;
DELETE FROM tb WHERE k BETWEEN 5000 AND 5300;
SELECT * FROM state_checks();
ROLLBACK;
SELECT * FROM state_checks();

-- 4. VACUUM: every page all-visible again
VACUUM t, tb;
SELECT * FROM node_checks();
SELECT * FROM state_checks();

-- 5. privileges: without SELECT on t the pushed query is refused; with it,
-- the answer is the reference's
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_gpuidx_join_agg_reader;
DROP ROLE IF EXISTS regress_gpuidx_join_agg_noselect;
RESET client_min_messages;
CREATE ROLE regress_gpuidx_join_agg_reader;
CREATE ROLE regress_gpuidx_join_agg_noselect;
GRANT USAGE ON SCHEMA gi_join_agg TO regress_gpuidx_join_agg_reader, regress_gpuidx_join_agg_noselect;
GRANT SELECT ON o TO regress_gpuidx_join_agg_reader, regress_gpuidx_join_agg_noselect;
GRANT SELECT ON t, tb TO regress_gpuidx_join_agg_reader;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SET ROLE regress_gpuidx_join_agg_noselect;
SELECT count(*), sum(s.c_i4) FROM o CROSS JOIN LATERAL
  (SELECT t.k, t.c_i4 FROM t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s;
RESET ROLE;
SET ROLE regress_gpuidx_join_agg_reader;
SELECT * FROM jacheck('reader', $$SELECT count(*), sum(s.c_i4) FROM o CROSS JOIN LATERAL
  (SELECT t.k, t.c_i4 FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$);
RESET ROLE;
-- row-level security on t and tb alike: the policy applies to the answers
ALTER TABLE t ENABLE ROW LEVEL SECURITY;
ALTER TABLE tb ENABLE ROW LEVEL SECURITY;
CREATE POLICY t_some ON t FOR SELECT USING (c_b);
CREATE POLICY tb_some ON tb FOR SELECT USING (c_b);
SET ROLE regress_gpuidx_join_agg_reader;
SELECT * FROM jacheck('row-level security', $$SELECT count(*), sum(s.c_i4), max(s.k), bool_and(s.c_b) FROM o CROSS JOIN LATERAL
  (SELECT t.k, t.c_i4, t.c_b FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$);
RESET ROLE;
ALTER TABLE t DISABLE ROW LEVEL SECURITY;
ALTER TABLE tb DISABLE ROW LEVEL SECURITY;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;

DROP SCHEMA gi_join_agg CASCADE;
DROP ROLE regress_gpuidx_join_agg_reader;
DROP ROLE regress_gpuidx_join_agg_noselect;
