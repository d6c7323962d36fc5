--
-- 25_join_plans: what the README says about joins.  A plain equi-join
-- t.k = o.x is an equivalence class, not a join clause, so GpuIndexScan is
-- not offered for it (gpuidx index scans are, as for any index, and
-- GpuIndexJoin is: sql/27..30 test it); join clauses that are not
-- equalities between two columns (= ANY of an outer array, ranges and
-- comparisons against outer columns) make GpuIndexScan the inner side of a
-- nested loop, parameterized by the outer row.
--
\set schema gi_join
\i sql/include/setup.sql

CREATE TABLE t (id int, k int8);
INSERT INTO t SELECT g, g FROM generate_series(1, 20000) g;
CREATE INDEX t_gi ON t USING gpuidx (k);
CREATE TABLE o (x int8, lo int8, hi int8, arr int8[]);
INSERT INTO o VALUES (5, 10, 12, '{1,2}'), (7, 100, 103, '{3}');
ANALYZE t;
ANALYZE o;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_seqscan = off;

-- equi-join: no GpuIndexScan, even with index and bitmap scans off (then
-- GpuIndexJoin answers it)
EXPLAIN (COSTS OFF) SELECT * FROM o JOIN t ON t.k = o.x;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM o JOIN t ON t.k = o.x;
RESET enable_indexscan;
RESET enable_bitmapscan;

-- = ANY of an outer array, and a range per outer row: GpuIndexScan inside
SET enable_indexscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM o JOIN t ON t.k = ANY (o.arr);
SELECT o.x, t.k FROM o JOIN t ON t.k = ANY (o.arr) ORDER BY 1, 2;
EXPLAIN (COSTS OFF) SELECT * FROM o JOIN t ON t.k BETWEEN o.lo AND o.hi;
SELECT o.x, t.k FROM o JOIN t ON t.k BETWEEN o.lo AND o.hi ORDER BY 1, 2;

DROP SCHEMA gi_join CASCADE;
