--
-- 30_join_edge: GpuIndexJoin at its edges, each answer compared with the
-- btree twin's by jcheck() (sql/include/join_check.sql): several batches
-- (gpuidx.batch_chunk at its minimum), gpuidx.gpu_min_batch high and low,
-- empty outer and inner sides, LIMIT 0, rescans and correlated subqueries,
-- a join of joins, as-of shapes taken and left alone, outer sides that are
-- functions, parallel plans, UPDATE ... FROM, DELETE ... USING and a
-- data-modifying CTE, an error raised by the probe expression, row-level
-- security, gpuidx.enable_customjoin = off, and outer rows read in place
-- from their heap pages (gpuidx.outer_in_place on and off).
--
\set schema gi_join_edge
\i sql/include/setup.sql
SET max_parallel_workers_per_gather = 0;
\i sql/include/join_check.sql

-- t: keys -2500..2499, four rows each, a few NULLs; o: 5000 outer rows
CREATE TABLE t (id int, k int8, pad text) WITH (autovacuum_enabled = off);
INSERT INTO t SELECT g, CASE WHEN g % 1000 = 0 THEN NULL ELSE g % 5000 - 2500 END, 'p' || g
  FROM generate_series(1, 20000) g;
CREATE TABLE tb (LIKE t);
INSERT INTO tb SELECT * FROM t;
CREATE INDEX t_gi ON t USING gpuidx (k);
CREATE INDEX tb_bt ON tb (k);
CREATE TABLE o (id int, x int8, lo int8, hi int8);
INSERT INTO o SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE (g * 7919) % 6000 - 3000 END, 0, 0
  FROM generate_series(1, 5000) g;
UPDATE o SET lo = x - 2, hi = x + id % 5;
-- empty tables: an outer side, an inner side never written, an inner side
-- whose rows are all deleted (their index entries stay until VACUUM)
CREATE TABLE oe (LIKE o);
CREATE TABLE e (LIKE t);
CREATE TABLE eb (LIKE t);
CREATE INDEX e_gi ON e USING gpuidx (k);
CREATE INDEX eb_bt ON eb (k);
CREATE TABLE d (LIKE t) WITH (autovacuum_enabled = off);
CREATE TABLE db (LIKE t);
INSERT INTO d SELECT * FROM t WHERE id % 4 = 0;
INSERT INTO db SELECT * FROM t WHERE id % 4 = 0;
CREATE INDEX d_gi ON d USING gpuidx (k);
CREATE INDEX db_bt ON db (k);
DELETE FROM d;
DELETE FROM db;
ANALYZE t, tb, o, oe, e, eb, d, db;

-- 1. five batches of 1024 outer rows (the smallest chunk)
SET gpuidx.batch_chunk = 1024;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT o.id, t.id FROM o JOIN t ON t.k = o.x;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
SELECT * FROM jcheck('chunked inner', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k = o.x$$)
UNION ALL SELECT * FROM jcheck('chunked left', $$SELECT o.id, t.id AS tid FROM o LEFT JOIN @T@ t ON t.k = o.x$$)
UNION ALL SELECT * FROM jcheck('chunked semi', $$SELECT o.id FROM o WHERE o.x IN (SELECT k FROM @T@)$$)
UNION ALL SELECT * FROM jcheck('chunked anti', $$SELECT o.id FROM o WHERE NOT EXISTS (SELECT FROM @T@ t WHERE t.k = o.x)$$)
UNION ALL SELECT * FROM jcheck('chunked range', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k BETWEEN o.lo AND o.hi$$)
UNION ALL SELECT * FROM jcheck('chunked pred LIMIT 1', $$SELECT o.id, s.k FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true$$)
UNION ALL SELECT * FROM jcheck('chunked succ LIMIT 3 left', $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k > o.x ORDER BY t.k LIMIT 3) s ON true$$)
UNION ALL SELECT * FROM jcheck('chunked pred LIMIT 2 qual', $$SELECT o.id, s.k FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k < o.x AND t.id % 4 = 1 ORDER BY t.k DESC LIMIT 2) s ON true$$);
RESET gpuidx.batch_chunk;

-- 2. gpuidx.gpu_min_batch: every batch small enough for the host, and none
SET gpuidx.gpu_min_batch = 2147483647;
SELECT * FROM jcheck('host inner', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k = o.x$$)
UNION ALL SELECT * FROM jcheck('host range', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k BETWEEN o.lo AND o.hi$$)
UNION ALL SELECT * FROM jcheck('host pred LIMIT 3', $$SELECT o.id, s.k FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 3) s ON true$$);
SET gpuidx.gpu_min_batch = 0;
SELECT * FROM jcheck('device inner', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k = o.x$$)
UNION ALL SELECT * FROM jcheck('device range', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k BETWEEN o.lo AND o.hi$$)
UNION ALL SELECT * FROM jcheck('device succ LIMIT 3', $$SELECT o.id, s.k FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 3) s ON true$$);
RESET gpuidx.gpu_min_batch;

-- 3. empty sides: no outer rows; an inner table never written and one whose
-- rows are all deleted; LIMIT 0
SELECT * FROM jcheck('empty outer inner', $$SELECT oe.id, t.id AS tid FROM oe JOIN @T@ t ON t.k = oe.x$$)
UNION ALL SELECT * FROM jcheck('empty outer semi', $$SELECT oe.id FROM oe WHERE oe.x IN (SELECT k FROM @T@)$$)
UNION ALL SELECT * FROM jcheck('empty outer pred', $$SELECT oe.id, s.k FROM oe LEFT JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= oe.x ORDER BY t.k DESC LIMIT 1) s ON true$$)
UNION ALL SELECT * FROM jcheck('empty inner inner', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k = o.x$$, 'e')
UNION ALL SELECT * FROM jcheck('empty inner left', $$SELECT o.id, t.id AS tid FROM o LEFT JOIN @T@ t ON t.k = o.x$$, 'e')
UNION ALL SELECT * FROM jcheck('empty inner anti', $$SELECT o.id FROM o WHERE NOT EXISTS (SELECT FROM @T@ t WHERE t.k = o.x)$$, 'e')
UNION ALL SELECT * FROM jcheck('empty inner range', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k BETWEEN o.lo AND o.hi$$, 'e')
UNION ALL SELECT * FROM jcheck('empty inner pred left', $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true$$, 'e')
UNION ALL SELECT * FROM jcheck('deleted inner inner', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k = o.x$$, 'd')
UNION ALL SELECT * FROM jcheck('deleted inner left', $$SELECT o.id, t.id AS tid FROM o LEFT JOIN @T@ t ON t.k = o.x$$, 'd')
UNION ALL SELECT * FROM jcheck('deleted inner anti', $$SELECT o.id FROM o WHERE NOT EXISTS (SELECT FROM @T@ t WHERE t.k = o.x)$$, 'd')
UNION ALL SELECT * FROM jcheck('deleted inner range', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k BETWEEN o.lo AND o.hi$$, 'd')
UNION ALL SELECT * FROM jcheck('deleted inner succ left', $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 2) s ON true$$, 'd')
UNION ALL SELECT * FROM jcheck('pred LIMIT 0', $$SELECT o.id, s.k FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 0) s ON true$$)
UNION ALL SELECT * FROM jcheck('pred LIMIT 0 left', $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 0) s ON true$$)
UNION ALL SELECT * FROM jcheck('all probes NULL', $$SELECT o.id, t.id AS tid FROM o LEFT JOIN @T@ t ON t.k = NULLIF(o.x, o.x)$$);

-- 4. rescans: the join inside a correlated subquery, run once per outer
-- value; a GpuIndexJoin whose outer side is another join
SELECT * FROM jcheck('rescan equi', $$SELECT g, (SELECT count(*) FROM o JOIN @T@ t ON t.k = o.x WHERE o.id % 7 = g) AS n
    FROM generate_series(0, 6) g$$)
UNION ALL SELECT * FROM jcheck('join of joins', $$SELECT o.id, t.id AS tid, t2.id AS t2id
    FROM o JOIN @T@ t ON t.k = o.x JOIN @T@ t2 ON t2.k = t.id - 2500 WHERE o.id % 10 = 1$$)
UNION ALL SELECT * FROM jcheck('as-of of a join', $$SELECT o.id, t.id AS tid, s.k FROM o JOIN @T@ t ON t.k = o.x
    JOIN LATERAL (SELECT k FROM @T@ t2 WHERE t2.k < t.id - 12000 ORDER BY t2.k DESC LIMIT 1) s ON true WHERE o.id % 10 = 2$$);
-- the probe or a qual on t refers to the enclosing query's row (g); whether
-- GpuIndexJoin takes these is its choice, the answers must be right
SELECT what, rows, missing, extra, nl_missing, nl_extra, pl_missing, pl_extra
  FROM jcheck('correlated equi probe', $$SELECT g, (SELECT count(*) FROM o JOIN @T@ t ON t.k = o.x + g) AS n
    FROM generate_series(0, 6) g$$);
SELECT what, rows, missing, extra, nl_missing, nl_extra, pl_missing, pl_extra
  FROM jcheck('correlated as-of probe', $$SELECT g, (SELECT sum(s.k) FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x + g ORDER BY t.k DESC LIMIT 1) s ON true WHERE o.id % 7 = g) AS n
    FROM generate_series(0, 6) g$$);
SELECT what, rows, missing, extra, nl_missing, nl_extra, pl_missing, pl_extra
  FROM jcheck('correlated as-of qual on t', $$SELECT g, (SELECT sum(s.k) FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x AND t.id > g * 3000 ORDER BY t.k DESC LIMIT 1) s ON true WHERE o.id % 10 = 0) AS n
    FROM generate_series(0, 6) g$$);

-- 5. as-of shapes: the forms GpuIndexJoin takes (a second bound on t.k,
-- the comparison written the other way round, LIMIT NULL, expressions of
-- both sides in the subquery's output, a join condition other than true, an
-- as-of over an as-of, whole rows) ...
SELECT * FROM jcheck('as-of two bounds', $$SELECT o.id, s.k FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x AND t.k > o.lo ORDER BY t.k DESC LIMIT 2) s ON true$$)
UNION ALL SELECT * FROM jcheck('as-of commuted', $$SELECT o.id, s.k FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE o.x >= t.k ORDER BY t.k DESC LIMIT 1) s ON true$$)
UNION ALL SELECT * FROM jcheck('as-of LIMIT NULL', $$SELECT o.id, s.k FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x AND t.k > o.x - 3 ORDER BY t.k DESC LIMIT NULL) s ON true WHERE o.id % 10 = 0$$)
UNION ALL SELECT * FROM jcheck('as-of output expressions', $$SELECT o.id, s.* FROM o LEFT JOIN LATERAL
    (SELECT t.k * 2 AS kk, o.id + t.k AS c, 'lit' AS l, o.x AS ox FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 3) s ON true$$)
UNION ALL SELECT * FROM jcheck('as-of ON not true', $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 2) s ON s.k > o.lo$$)
UNION ALL SELECT * FROM jcheck('as-of then WHERE on it', $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 2) s ON true WHERE s.k IS NULL OR s.k % 2 = 0$$)
UNION ALL SELECT * FROM jcheck('as-of of an as-of', $$SELECT o.id, s.k, s2.k AS k2 FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s ON true JOIN LATERAL
    (SELECT k FROM @T@ t2 WHERE t2.k < s.k ORDER BY t2.k DESC LIMIT 1) s2 ON true$$)
UNION ALL SELECT * FROM jcheck('as-of whole row', $$SELECT o.id, (s.t).k, (s.t).pad IS NOT NULL AS p FROM o JOIN LATERAL
    (SELECT t, t.k FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s ON true$$);
-- ... and forms it may leave to PostgreSQL (a LIMIT from the outer row,
-- OFFSET, WITH TIES, the order against the comparison, a tie-breaking
-- column, an expression as the order; a tenth of the outer rows, as some
-- sort every candidate): the answers must be right
SELECT what, rows, missing, extra, nl_missing, nl_extra, pl_missing, pl_extra
  FROM jcheck('LIMIT of the outer row', $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT o.id % 4) s ON true WHERE o.id % 10 = 0$$)
UNION ALL SELECT what, rows, missing, extra, nl_missing, nl_extra, pl_missing, pl_extra
  FROM jcheck('OFFSET', $$SELECT o.id, s.k FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 2 OFFSET 1) s ON true WHERE o.id % 10 = 0$$)
UNION ALL SELECT what, rows, missing, extra, nl_missing, nl_extra, pl_missing, pl_extra
  FROM jcheck('WITH TIES', $$SELECT o.id, s.id AS sid FROM o JOIN LATERAL
    (SELECT id, k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC FETCH FIRST 1 ROWS WITH TIES) s ON true WHERE o.id % 10 = 0$$)
UNION ALL SELECT what, rows, missing, extra, nl_missing, nl_extra, pl_missing, pl_extra
  FROM jcheck('order against the comparison', $$SELECT o.id, s.k FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k LIMIT 2) s ON true WHERE o.id % 10 = 0$$)
UNION ALL SELECT what, rows, missing, extra, nl_missing, nl_extra, pl_missing, pl_extra
  FROM jcheck('tie-breaking column', $$SELECT o.id, s.id AS sid FROM o JOIN LATERAL
    (SELECT id, k FROM @T@ t WHERE t.k >= o.x ORDER BY t.k, t.id DESC LIMIT 2) s ON true WHERE o.id % 10 = 0$$)
UNION ALL SELECT what, rows, missing, extra, nl_missing, nl_extra, pl_missing, pl_extra
  FROM jcheck('order by an expression', $$SELECT o.id, s.k FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x ORDER BY -t.k LIMIT 2) s ON true WHERE o.id % 10 = 0$$);

-- 6. outer sides that are functions, not tables (an unnest of probes)
SELECT * FROM jcheck('unnest inner', $$SELECT p, t.id AS tid FROM unnest((SELECT array_agg(x) FROM o)) p JOIN @T@ t ON t.k = p$$)
UNION ALL SELECT * FROM jcheck('series pred', $$SELECT g, s.k FROM generate_series(-3000, 3000, 7) g CROSS JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= g ORDER BY t.k DESC LIMIT 1) s$$);

-- 7. parallel plans: forced parallel mode, and parallel workers allowed
SET force_parallel_mode = on;
SELECT * FROM jcheck('force_parallel_mode inner', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k = o.x$$)
UNION ALL SELECT * FROM jcheck('force_parallel_mode pred', $$SELECT o.id, s.k FROM o JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true$$);
RESET force_parallel_mode;
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SELECT * FROM jcheck('parallel inner', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k = o.x$$)
UNION ALL SELECT * FROM jcheck('parallel semi', $$SELECT o.id FROM o WHERE EXISTS (SELECT FROM @T@ t WHERE t.k = o.x)$$)
UNION ALL SELECT * FROM jcheck('parallel range', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k BETWEEN o.lo AND o.hi$$)
UNION ALL SELECT * FROM jcheck('parallel succ left', $$SELECT o.id, s.k FROM o LEFT JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s ON true$$);
RESET max_parallel_workers_per_gather;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;

-- 8. UPDATE ... FROM and DELETE ... USING through the join: the same rows
-- change in t as in its twin
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) UPDATE t SET pad = 'updated' FROM o WHERE t.k = o.x AND o.id % 3 = 0;
EXPLAIN (COSTS OFF) DELETE FROM t USING o WHERE t.k = o.x AND o.id % 5 = 0;
UPDATE t SET pad = 'updated' FROM o WHERE t.k = o.x AND o.id % 3 = 0;
DELETE FROM t USING o WHERE t.k = o.x AND o.id % 5 = 0;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
UPDATE tb SET pad = 'updated' FROM o WHERE tb.k = o.x AND o.id % 3 = 0;
DELETE FROM tb USING o WHERE tb.k = o.x AND o.id % 5 = 0;
SELECT (SELECT count(*) FROM t) AS rows, (SELECT count(*) FROM t WHERE pad = 'updated') AS updated,
       (SELECT count(*) FROM (SELECT * FROM t EXCEPT ALL SELECT * FROM tb) x) AS extra,
       (SELECT count(*) FROM (SELECT * FROM tb EXCEPT ALL SELECT * FROM t) y) AS missing;
SELECT * FROM jcheck('after UPDATE FROM', $$SELECT o.id, t.id AS tid, t.pad FROM o JOIN @T@ t ON t.k = o.x$$);
-- rows a data-modifying CTE inserts are not seen by the rest of its query
-- (the same snapshot), though the index holds them when the join runs
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SELECT uses_join($$SELECT o.id, t.id FROM o JOIN t ON t.k = o.x$$) AS node;
CREATE TEMP TABLE cte_gi AS
  WITH ins AS (INSERT INTO t SELECT id + 100000, x, 'cte' FROM o WHERE x IS NOT NULL RETURNING id)
  SELECT 'inserted' AS what, count(*) AS n FROM ins
  UNION ALL SELECT 'joined', count(*) FROM o JOIN t ON t.k = o.x
  UNION ALL SELECT 'as-of', count(*) FROM o JOIN LATERAL (SELECT id FROM t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true WHERE s.id > 100000;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
CREATE TEMP TABLE cte_ref AS
  WITH ins AS (INSERT INTO tb SELECT id + 100000, x, 'cte' FROM o WHERE x IS NOT NULL RETURNING id)
  SELECT 'inserted' AS what, count(*) AS n FROM ins
  UNION ALL SELECT 'joined', count(*) FROM o JOIN tb t ON t.k = o.x
  UNION ALL SELECT 'as-of', count(*) FROM o JOIN LATERAL (SELECT id FROM tb t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true WHERE s.id > 100000;
SELECT g.what, g.n, r.n AS ref_n FROM cte_gi g JOIN cte_ref r USING (what) ORDER BY what;
SELECT * FROM jcheck('after the CTE', $$SELECT o.id, t.id AS tid, t.pad FROM o JOIN @T@ t ON t.k = o.x$$);

-- ctid through the join where HOT updates left redirected line pointers
-- (VACUUM prunes the chains and marks the pages all-visible): the ctid of
-- the visible tuple, as PostgreSQL's own plan gives it on the same table
-- (every key has four rows, so LIMIT 4 has no ties to break).
-- (UPDATE ... FROM and DELETE ... USING on such a table: t/061_join_epq.pl,
-- since a wrong TID there can damage the table.)
CREATE TABLE hot (id int, k int8, pad text) WITH (fillfactor = 50, autovacuum_enabled = off);
INSERT INTO hot SELECT g, g % 1000, 'x' FROM generate_series(1, 4000) g;
CREATE INDEX hot_gi ON hot USING gpuidx (k);
UPDATE hot SET pad = 'hot' WHERE id % 3 = 0;
VACUUM hot;
SELECT count(*) AS hot_rows, count(*) FILTER (WHERE (ctid::text::point)[1] > 100) AS moved_on_page
  FROM hot WHERE pad = 'hot';
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SELECT uses_join($$SELECT o.id, t.ctid FROM o JOIN hot t ON t.k = o.x$$) AS node;
CREATE TEMP TABLE hot_gi AS SELECT 'equi' AS q, o.id, t.ctid::text AS tid FROM o JOIN hot t ON t.k = o.x
  UNION ALL SELECT 'equi with a column', o.id, t.ctid::text || t.pad FROM o JOIN hot t ON t.k = o.x
  UNION ALL SELECT 'range', o.id, t.ctid::text FROM o JOIN hot t ON t.k BETWEEN o.lo AND o.hi
  UNION ALL SELECT 'as-of', o.id, s.ctid::text FROM o JOIN LATERAL
    (SELECT ctid, k FROM hot t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 4) s ON true;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
SET gpuidx.enable_customjoin = off;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
SET gpuidx.enable_customscan = off;
CREATE TEMP TABLE hot_ref AS SELECT 'equi' AS q, o.id, t.ctid::text AS tid FROM o JOIN hot t ON t.k = o.x
  UNION ALL SELECT 'equi with a column', o.id, t.ctid::text || t.pad FROM o JOIN hot t ON t.k = o.x
  UNION ALL SELECT 'range', o.id, t.ctid::text FROM o JOIN hot t ON t.k BETWEEN o.lo AND o.hi
  UNION ALL SELECT 'as-of', o.id, s.ctid::text FROM o JOIN LATERAL
    (SELECT ctid, k FROM hot t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 4) s ON true;
RESET gpuidx.enable_customjoin;
RESET enable_indexscan;
RESET enable_bitmapscan;
RESET gpuidx.enable_customscan;
SELECT q, (SELECT count(*) FROM hot_ref r WHERE r.q = x.q) AS rows,
       (SELECT count(*) FROM (SELECT id, tid FROM hot_ref r WHERE r.q = x.q
                              EXCEPT ALL SELECT id, tid FROM hot_gi g WHERE g.q = x.q) m) AS missing,
       (SELECT count(*) FROM (SELECT id, tid FROM hot_gi g WHERE g.q = x.q
                              EXCEPT ALL SELECT id, tid FROM hot_ref r WHERE r.q = x.q) e) AS extra
  FROM (VALUES ('equi'), ('equi with a column'), ('range'), ('as-of')) x(q);

-- 9. an error in the probe expression in the middle of the outer rows;
-- the session goes on
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SELECT uses_join($$SELECT o.id, t.id FROM o JOIN t ON t.k = 1000000 / (o.id - 3000)$$) AS node;
SELECT count(*) FROM o JOIN t ON t.k = 1000000 / (o.id - 3000);
SELECT uses_join($$SELECT o.id, s.k FROM o JOIN LATERAL (SELECT k FROM t WHERE t.k <= 1000000 / (o.id - 3000) ORDER BY k DESC LIMIT 1) s ON true$$) AS node;
SELECT count(*) FROM o JOIN LATERAL (SELECT k FROM t WHERE t.k <= 1000000 / (o.id - 3000) ORDER BY k DESC LIMIT 1) s ON true;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
SELECT * FROM jcheck('after an error', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k = o.x$$);

-- 10. row-level security on the inner table (join_spec.md: PostgreSQL's own
-- plan then): the policy is applied before any other qual, so a function
-- that is not leakproof never sees a hidden row, and only the rows the
-- policy lets through come back
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_gpuidx_join_reader;
RESET client_min_messages;
CREATE ROLE regress_gpuidx_join_reader;
GRANT USAGE ON SCHEMA gi_join_edge TO regress_gpuidx_join_reader;
GRANT SELECT ON t, tb, o TO regress_gpuidx_join_reader;
ALTER TABLE t ENABLE ROW LEVEL SECURITY;
ALTER TABLE tb ENABLE ROW LEVEL SECURITY;
CREATE POLICY even_ids ON t FOR SELECT USING (id % 2 = 0);
CREATE POLICY even_ids ON tb FOR SELECT USING (id % 2 = 0);
-- seen_odd(id): true; counts in gi.odd_seen the odd ids (rows the policy
-- hides) it is called with
CREATE FUNCTION seen_odd(id int) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN
  IF id % 2 = 1 THEN
    PERFORM set_config('gi.odd_seen', (current_setting('gi.odd_seen')::int + 1)::text, false);
  END IF;
  RETURN true;
END $f$;
SET ROLE regress_gpuidx_join_reader;
SET gi.odd_seen = 0;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SELECT count(*) FROM o JOIN t ON t.k = o.x AND seen_odd(t.id);
SELECT count(*) FROM o JOIN t ON t.k BETWEEN o.lo AND o.hi WHERE seen_odd(t.id);
SELECT count(*) FROM o WHERE EXISTS (SELECT FROM t WHERE t.k = o.x AND seen_odd(t.id));
SELECT count(*) FROM o JOIN LATERAL (SELECT k FROM t WHERE t.k <= o.x AND seen_odd(t.id) ORDER BY k DESC LIMIT 1) s ON true;
SELECT current_setting('gi.odd_seen') AS hidden_rows_seen;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
SELECT what, rows, missing, extra, nl_missing, nl_extra, pl_missing, pl_extra
  FROM jcheck('RLS inner', $$SELECT o.id, t.id AS tid FROM o JOIN @T@ t ON t.k = o.x$$)
UNION ALL SELECT what, rows, missing, extra, nl_missing, nl_extra, pl_missing, pl_extra
  FROM jcheck('RLS pred', $$SELECT o.id, s.id AS sid FROM o JOIN LATERAL
    (SELECT id, k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC, t.id LIMIT 1) s ON true$$);
SELECT count(*) AS odd_ids_seen FROM o JOIN t ON t.k = o.x WHERE t.id % 2 = 1;
RESET ROLE;
ALTER TABLE t DISABLE ROW LEVEL SECURITY;
ALTER TABLE tb DISABLE ROW LEVEL SECURITY;

-- 11. gpuidx.enable_customjoin = off: never offered
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
SET gpuidx.enable_customjoin = off;
SELECT uses_join($$SELECT o.id, t.id FROM o JOIN t ON t.k = o.x$$) AS equi_node,
       uses_join($$SELECT o.id, s.k FROM o JOIN LATERAL (SELECT k FROM t WHERE t.k <= o.x ORDER BY k DESC LIMIT 1) s ON true$$) AS asof_node;
RESET gpuidx.enable_customjoin;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;

-- 12. outer rows read in place (src/outerpage.c): a plain SeqScan outer
-- side's rows are read from its pages, the rest of each page at once; each
-- answer against the twin with it on and off, in chunks of 1024 rows that
-- end inside pages, over an outer table with deleted, updated and aborted
-- rows, and with rows this transaction wrote; the outer scan's EXPLAIN
-- ANALYZE rows still count every row; a filtered outer scan is left alone
CREATE TABLE op (id int, x int8, pad text) WITH (autovacuum_enabled = off);
INSERT INTO op SELECT g, CASE WHEN g % 89 = 0 THEN NULL ELSE (g * 7919) % 6000 - 3000 END,
  repeat('o', g % 40) FROM generate_series(1, 6000) g;
DELETE FROM op WHERE id % 7 = 0;
UPDATE op SET x = x + 1 WHERE id % 11 = 0;
BEGIN;
INSERT INTO op SELECT g, g % 500, 'aborted' FROM generate_series(7000, 7500) g;
ROLLBACK;
ANALYZE op;
-- in_place(q): the GpuIndexJoin node's Outer Rows In Place (NULL: not read
-- in place) and its outer scan's actual rows, GpuIndexJoin forced
CREATE FUNCTION in_place(q text, OUT in_place bigint, OUT outer_rows bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  plan jsonb;
BEGIN
  PERFORM set_config('enable_hashjoin', 'off', true);
  PERFORM set_config('enable_mergejoin', 'off', true);
  PERFORM set_config('enable_nestloop', 'off', true);
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF, SUMMARY OFF) ' || q INTO plan;
  SELECT (n->>'Outer Rows In Place')::bigint, (n->'Plans'->0->>'Actual Rows')::bigint
    INTO in_place, outer_rows
    FROM jsonb_path_query(plan, 'strict $.** ? (@."Custom Plan Provider" == "GpuIndexJoin")') n;
  PERFORM set_config('enable_hashjoin', 'on', true);
  PERFORM set_config('enable_mergejoin', 'on', true);
  PERFORM set_config('enable_nestloop', 'on', true);
END $f$;
SET gpuidx.batch_chunk = 1024;
SELECT (SELECT count(*) FROM op) AS op_rows,
       i.in_place > 0 AS read_in_place, i.outer_rows
  FROM in_place($$SELECT op.id, t.id FROM op JOIN t ON t.k = op.x$$) i;
SELECT i.in_place > 0 AS read_in_place, i.outer_rows
  FROM in_place($$SELECT op.id, s.k FROM op JOIN LATERAL (SELECT k FROM t WHERE t.k <= op.x ORDER BY k DESC LIMIT 1) s ON true$$) i;
SELECT i.in_place AS filtered_in_place, i.outer_rows
  FROM in_place($$SELECT op.id, t.id FROM op JOIN t ON t.k = op.x WHERE op.id % 3 = 0$$) i;
SET gpuidx.outer_in_place = off;
SELECT i.in_place AS off_in_place, i.outer_rows
  FROM in_place($$SELECT op.id, t.id FROM op JOIN t ON t.k = op.x$$) i;
RESET gpuidx.outer_in_place;
CREATE FUNCTION op_checks() RETURNS SETOF record LANGUAGE plpgsql AS $f$
BEGIN
  RETURN QUERY SELECT * FROM jcheck('in place inner', $$SELECT op.id, op.pad, t.id AS tid FROM op JOIN @T@ t ON t.k = op.x$$);
  RETURN QUERY SELECT * FROM jcheck('in place left', $$SELECT op.id, t.id AS tid FROM op LEFT JOIN @T@ t ON t.k = op.x$$);
  RETURN QUERY SELECT * FROM jcheck('in place anti', $$SELECT op.id FROM op WHERE NOT EXISTS (SELECT FROM @T@ t WHERE t.k = op.x)$$);
  RETURN QUERY SELECT * FROM jcheck('in place probe expression', $$SELECT op.id, t.id AS tid FROM op JOIN @T@ t ON t.k = op.x + length(op.pad)$$);
  RETURN QUERY SELECT * FROM jcheck('in place pred LIMIT 1', $$SELECT op.id, s.k FROM op JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= op.x ORDER BY t.k DESC LIMIT 1) s ON true$$);
  RETURN QUERY SELECT * FROM jcheck('in place filtered', $$SELECT op.id, t.id AS tid FROM op JOIN @T@ t ON t.k = op.x WHERE op.id % 3 = 0$$);
END $f$;
SELECT 'on' AS in_place, c.* FROM op_checks() AS c(what text, node boolean, rows bigint, missing bigint, extra bigint,
  nl_missing bigint, nl_extra bigint, pl_missing bigint, pl_extra bigint);
SET gpuidx.outer_in_place = off;
SELECT 'off' AS in_place, c.* FROM op_checks() AS c(what text, node boolean, rows bigint, missing bigint, extra bigint,
  nl_missing bigint, nl_extra bigint, pl_missing bigint, pl_extra bigint);
RESET gpuidx.outer_in_place;
-- rows this transaction inserted and deleted, seen (or not) in place
BEGIN;
INSERT INTO op SELECT g, g % 3000 - 1500, 'new' FROM generate_series(8000, 9000) g;
DELETE FROM op WHERE id % 5 = 0;
SELECT (SELECT count(*) FROM op) AS op_rows, i.in_place > 0 AS read_in_place, i.outer_rows
  FROM in_place($$SELECT op.id, t.id FROM op JOIN t ON t.k = op.x$$) i;
SELECT 'in transaction' AS in_place, c.* FROM op_checks() AS c(what text, node boolean, rows bigint, missing bigint, extra bigint,
  nl_missing bigint, nl_extra bigint, pl_missing bigint, pl_extra bigint);
ROLLBACK;
-- a probe column after a variable-width one (no fixed offset: read with
-- heap_getattr, NULLs among them) is read in place; a table with a column
-- added later with a default has no physical target list (PostgreSQL's
-- build_physical_tlist punts on it), so its scan projects and is left alone
CREATE TABLE op2 (id int, pad text, z int8) WITH (autovacuum_enabled = off);
INSERT INTO op2 SELECT g, repeat('v', g % 30),
  CASE WHEN g % 61 = 0 THEN NULL ELSE (g * 31) % 5000 - 2500 END
  FROM generate_series(1, 4000) g;
ANALYZE op2;
SELECT i.in_place > 0 AS read_in_place, i.outer_rows
  FROM in_place($$SELECT op2.id, t.id FROM op2 JOIN t ON t.k = op2.z$$) i;
ALTER TABLE op ADD COLUMN z int8 DEFAULT 7;
INSERT INTO op SELECT g, g % 3000 - 1500, 'z', (g * 31) % 5000 - 2500
  FROM generate_series(10000, 11000) g;
ANALYZE op;
SELECT i.in_place AS added_column_in_place, i.outer_rows
  FROM in_place($$SELECT op.id, t.id FROM op JOIN t ON t.k = op.z$$) i;
SELECT * FROM jcheck('in place after text', $$SELECT op2.id, t.id AS tid FROM op2 JOIN @T@ t ON t.k = op2.z$$)
UNION ALL SELECT * FROM jcheck('in place after text pred', $$SELECT op2.id, s.k FROM op2 JOIN LATERAL
    (SELECT k FROM @T@ t WHERE t.k <= op2.z ORDER BY t.k DESC LIMIT 1) s ON true$$)
UNION ALL SELECT * FROM jcheck('added column', $$SELECT op.id, t.id AS tid FROM op JOIN @T@ t ON t.k = op.z$$);
RESET gpuidx.batch_chunk;
-- two joins at once in the backend: the lower one holds the scratch block,
-- so the upper one sizes its own arrays by the planner's estimate of its
-- outer rows (40; about 20000 in fact) and grows them
-- more than once, copying what it gathered
CREATE FUNCTION few_keys() RETURNS SETOF int8 ROWS 10 LANGUAGE sql
  AS 'SELECT generate_series(-3000, 3000)::int8';
SELECT * FROM jcheck('arrays grown past the estimate', $$SELECT a.k, t2.id AS t2id
  FROM (SELECT g AS k FROM few_keys() g JOIN @T@ t ON t.k = g) a JOIN @T@ t2 ON t2.k = a.k + 1$$);

SET client_min_messages = warning;
DROP SCHEMA gi_join_edge CASCADE;
DROP ROLE regress_gpuidx_join_reader;
