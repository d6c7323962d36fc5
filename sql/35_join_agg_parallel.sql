--
-- 35_join_agg_parallel: GpuIndexAgg over GpuIndexJoin in parallel plans.
-- In service mode GpuIndexJoin offers a partial path (each worker joins
-- its share of the outer rows against the shared image), and GpuIndexAgg
-- over it emits each process's partial states under PostgreSQL's Gather
-- and Finalize Aggregate (every aggregate but sum and avg of int8, whose
-- partial states are not plain values: those queries are a Partial
-- Aggregate over the join instead); per backend the join stays serial over
-- a Gather of the outer rows.  Every case of 34_join_agg is compared with
-- the btree twin (itself planned in parallel) and with
-- gpuidx.enable_customagg off, parallel plans made free, all-visible, with
-- rows changed and not vacuumed, and after VACUUM; on the device, on the
-- host and under gpuidx.engine = cpu.  The plans differ by image mode:
-- expected/35_join_agg_parallel_1.out is service mode's.
--
\set schema gi_join_agg_parallel
\i sql/include/setup.sql
SET max_parallel_workers_per_gather = 0;
SET timezone = 'UTC';

\i sql/include/join_agg.sql

-- the plans: without and with a sum of int8
SET max_parallel_workers_per_gather = 2;
SET parallel_setup_cost = 0;
SET parallel_tuple_cost = 0;
SET min_parallel_table_scan_size = 0;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT count(*), sum(s.c_i4), avg(s.c_i2), min(s.c_ts), max(s.k), bool_or(s.c_b)
  FROM o CROSS JOIN LATERAL (SELECT t.k, t.c_i4, t.c_i2, t.c_ts, t.c_b FROM t
  WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s;
EXPLAIN (COSTS OFF) SELECT count(*), min(s.c_d), bool_and(s.c_b) FROM o LEFT JOIN LATERAL
  (SELECT t.c_d, t.c_b FROM t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s ON true HAVING count(*) > 0;
EXPLAIN (COSTS OFF) SELECT count(*), sum(s.k) FROM o LEFT JOIN LATERAL (SELECT t.k FROM t
  WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s ON true;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
RESET parallel_setup_cost;
RESET parallel_tuple_cost;
RESET min_parallel_table_scan_size;
SET max_parallel_workers_per_gather = 0;

-- 1. every page all-visible
SELECT * FROM state_checks(parallel => true);

-- 2. rows changed, not vacuumed (change_rows): answers on those pages walk
-- the heap, in the worker that joins them
SELECT change_rows();
SELECT * FROM state_checks(parallel => true);

-- 3. VACUUM: every page all-visible again
VACUUM t, tb;
SELECT * FROM state_checks(parallel => true);

DROP SCHEMA gi_join_agg_parallel CASCADE;
