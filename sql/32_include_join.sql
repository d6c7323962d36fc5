--
-- 32_include_join: GpuIndexJoin and GpuIndexScan returning INCLUDE columns.
-- A join or scan that reads only the key and included columns is key-only:
-- rows on all-visible pages come from the image, the others from the heap.
-- Each answer is compared with a btree twin with the same INCLUDE
-- (jcheck, sql/include/join_check.sql; sdiff below) with every page
-- all-visible (after VACUUM: the image), after an UPDATE of included
-- columns without VACUUM (the heap for the changed pages, row by row), after
-- a larger UPDATE and ANALYZE (hits sorted into heap order, both sources)
-- and after VACUUM again.  Heap fetches are read from EXPLAIN ANALYZE
-- (FORMAT JSON) and shown only as none / partly / all.
--
\set schema gi_include_join
\i sql/include/setup.sql
SET max_parallel_workers_per_gather = 0;
SET timezone = 'UTC';
\i sql/include/join_check.sql

-- t: unique keys (as-of answers have no ties), one included column of every
-- accepted type, NULLs in each, a few NULL keys; tb its btree twin.
CREATE TABLE t (id int, k int8, c_i2 int2, c_i4 int4, c_i8 int8, c_f4 float4,
                c_f8 float8, c_d date, c_ts timestamp, c_tz timestamptz,
                c_b bool, c_o oid, pad text)
  WITH (autovacuum_enabled = off);
INSERT INTO t
SELECT g, CASE WHEN g % 500 = 0 THEN NULL ELSE g * 3 - 12000 END,
       CASE WHEN g % 11 = 0 THEN NULL ELSE (g * 37 % 60000 - 30000)::int2 END,
       CASE WHEN g % 13 = 0 THEN NULL ELSE g * 104729 - 400000000 END,
       CASE WHEN g % 7 = 0 THEN NULL ELSE g::int8 * 1000000007 * (1 - 2 * (g % 2)) END,
       CASE WHEN g % 17 = 0 THEN NULL ELSE g / 7.0 END,
       CASE WHEN g % 5 = 0 THEN NULL ELSE g * 1.25 - 3333.5 END,
       CASE WHEN g % 19 = 0 THEN NULL ELSE date '2000-01-01' + g END,
       CASE WHEN g % 23 = 0 THEN NULL ELSE timestamp '2000-01-01' + g * interval '77 minutes' END,
       CASE WHEN g % 29 = 0 THEN NULL ELSE timestamptz '1999-12-31 12:00+00' + g * interval '13 hours' END,
       CASE WHEN g % 31 = 0 THEN NULL ELSE g % 3 = 0 END,
       CASE WHEN g % 37 = 0 THEN NULL ELSE (g::int8 * 524287 % 4294967296)::oid END,
       'pad' || g
  FROM generate_series(1, 8000) g;
CREATE TABLE tb (LIKE t) WITH (autovacuum_enabled = off);
INSERT INTO tb SELECT * FROM t;
CREATE INDEX t_gi ON t USING gpuidx (k)
  INCLUDE (c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o);
CREATE INDEX tb_bt ON tb USING btree (k)
  INCLUDE (c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o);
-- u: duplicate keys (several hits per probe) and two included columns
CREATE TABLE u (id int, k int4, price float8, qty int2, pad text)
  WITH (autovacuum_enabled = off);
INSERT INTO u SELECT g, g % 1500 - 200,
       CASE WHEN g % 6 = 0 THEN NULL ELSE g * 0.5 END,
       CASE WHEN g % 9 = 0 THEN NULL ELSE g % 300 END, 'u' || g
  FROM generate_series(1, 6000) g;
CREATE TABLE ub (LIKE u) WITH (autovacuum_enabled = off);
INSERT INTO ub SELECT * FROM u;
CREATE INDEX u_gi ON u USING gpuidx (k) INCLUDE (price, qty);
CREATE INDEX ub_bt ON ub USING btree (k) INCLUDE (price, qty);
-- o: the outer side; probes inside and outside the keys, some NULL
CREATE TABLE o (id int, x int8, y int4) WITH (autovacuum_enabled = off);
INSERT INTO o SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE (g * 7919) % 26000 - 13000 END,
       (g * 31) % 1700 - 250
  FROM generate_series(1, 3000) g;
-- od: o with a dropped column in the middle (a physical target list of the
-- outer scan holds a NULL constant for it)
CREATE TABLE od (id int, junk text, x int8, y int4) WITH (autovacuum_enabled = off);
INSERT INTO od SELECT id, 'junk' || id, x, y FROM o;
ALTER TABLE od DROP COLUMN junk;
VACUUM ANALYZE t, tb, u, ub, o, od;

-- fetches(q): q's GpuIndexJoin (or GpuIndexScan) node, forced, under
-- EXPLAIN ANALYZE: whether it is key-only, whether it returned rows, and its
-- heap fetches as none, partly (fewer than its hits) or all
CREATE FUNCTION fetches(q text)
RETURNS TABLE(node text, key_only boolean, some_rows boolean, heap text)
LANGUAGE plpgsql AS $f$
DECLARE
  plan jsonb;
  n jsonb;
BEGIN
  PERFORM set_config('gpuidx.enable_customjoin', 'on', true);
  PERFORM set_config('enable_hashjoin', 'off', true);
  PERFORM set_config('enable_mergejoin', 'off', true);
  PERFORM set_config('enable_nestloop', 'off', true);
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  PERFORM set_config('enable_indexscan', 'off', true);
  PERFORM set_config('enable_indexonlyscan', 'off', true);
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF, SUMMARY OFF) ' || q INTO plan;
  FOR n IN SELECT jsonb_path_query(plan, 'strict $.** ? (@."Node Type" == "Custom Scan")') LOOP
    node := n->>'Custom Plan Provider';
    key_only := coalesce((n->>'Key Only')::boolean, false);
    some_rows := (n->>'Actual Rows')::bigint > 0;
    heap := CASE WHEN (n->>'Heap Fetches')::bigint = 0 THEN 'none'
                 WHEN (n->>'Heap Fetches')::bigint < (n->>'Hits')::bigint THEN 'partly'
                 ELSE 'all' END;
    RETURN NEXT;
  END LOOP;
END $f$;

-- direct(q): how many of the outer rows of q's as-of GpuIndexJoin (forced,
-- under EXPLAIN ANALYZE) were answered straight from the engine's entries
-- (LIMIT 1, the answer's page all-visible: Direct Rows) rather than by the
-- walk: none, some or all
CREATE FUNCTION direct(q text) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
  plan jsonb;
BEGIN
  PERFORM set_config('gpuidx.enable_customjoin', 'on', true);
  PERFORM set_config('enable_nestloop', 'off', true);
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF, SUMMARY OFF) ' || q INTO plan;
  RETURN (SELECT string_agg(CASE WHEN (n->>'Direct Rows')::bigint = 0 THEN 'none'
                                 WHEN (n->>'Direct Rows')::bigint < (n->'Plans'->0->>'Actual Rows')::bigint
                                 THEN 'some' ELSE 'all' END, ',')
            FROM jsonb_path_query(plan, 'strict $.** ? (@."Custom Plan Provider" == "GpuIndexJoin")') n);
END $f$;

-- sdiff(what, q): q (with @T@ for the table) through GpuIndexScan on base
-- (other scans off) against the btree twin base||'b' with EXCEPT ALL both
-- ways; node says the plan has GpuIndexScan
CREATE FUNCTION sdiff(label text, q text, base text DEFAULT 't')
RETURNS TABLE(what text, node boolean, rows bigint, missing bigint, extra bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  line text;
BEGIN
  PERFORM set_config('client_min_messages', 'warning', true);
  DROP TABLE IF EXISTS pg_temp.s_ref, pg_temp.s_gi;
  what := label;
  EXECUTE 'CREATE TEMP TABLE s_ref AS ' || replace(q, '@T@', base || 'b');
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  PERFORM set_config('enable_indexscan', 'off', true);
  PERFORM set_config('enable_indexonlyscan', 'off', true);
  node := false;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || replace(q, '@T@', base) LOOP
    node := node OR line LIKE '%Custom Scan (GpuIndexScan)%';
  END LOOP;
  EXECUTE 'CREATE TEMP TABLE s_gi AS ' || replace(q, '@T@', base);
  PERFORM set_config('enable_seqscan', 'on', true);
  PERFORM set_config('enable_bitmapscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'on', true);
  PERFORM set_config('enable_indexonlyscan', 'on', true);
  SELECT d.rows, d.missing, d.extra INTO rows, missing, extra FROM tdiff('s_gi', 's_ref') d;
  DROP TABLE s_ref, s_gi;
  RETURN NEXT;
END $f$;

-- every check of one state of the tables: joins and scans returning
-- included columns, compared with the twins
CREATE FUNCTION all_checks()
RETURNS TABLE(what text, node boolean, rows bigint, missing bigint, extra bigint,
              nl_missing bigint, nl_extra bigint, pl_missing bigint, pl_extra bigint)
LANGUAGE sql AS $f$
SELECT * FROM jcheck('as-of pred all types', $$SELECT o.id, s.* FROM o CROSS JOIN LATERAL
    (SELECT t.k, t.c_i2, t.c_i4, t.c_i8, t.c_f4, t.c_f8, t.c_d, t.c_ts, t.c_tz, t.c_b, t.c_o
       FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$)
UNION ALL SELECT * FROM jcheck('as-of succ LIMIT 3 left', $$SELECT o.id, s.* FROM o LEFT JOIN LATERAL
    (SELECT t.k, t.c_f8, t.c_tz FROM @T@ t WHERE t.k > o.x ORDER BY t.k LIMIT 3) s ON true$$)
UNION ALL SELECT * FROM jcheck('as-of pred LIMIT 1 left', $$SELECT o.id, s.* FROM o LEFT JOIN LATERAL
    (SELECT t.c_i4, t.k, t.c_tz FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true$$)
UNION ALL SELECT * FROM jcheck('as-of pred LIMIT 1 window', $$SELECT o.id, s.* FROM o LEFT JOIN LATERAL
    (SELECT t.c_i4, t.k FROM @T@ t WHERE t.k <= o.x AND t.k > o.x - 4
      ORDER BY t.k DESC LIMIT 1) s ON true$$)
UNION ALL SELECT * FROM jcheck('as-of pred LIMIT 1 included only', $$SELECT o.id, s.c_f8, s.c_b FROM o CROSS JOIN LATERAL
    (SELECT t.c_f8, t.c_b FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$)
UNION ALL SELECT * FROM jcheck('as-of succ LIMIT 1 key', $$SELECT o.id, s.k FROM o CROSS JOIN LATERAL
    (SELECT t.k FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s$$)
UNION ALL SELECT * FROM jcheck('as-of qual on included', $$SELECT o.id, s.* FROM o JOIN LATERAL
    (SELECT t.k, t.c_f8 * 2 AS f2, t.c_d FROM @T@ t WHERE t.k <= o.x AND t.c_b IS NOT FALSE
      ORDER BY t.k DESC LIMIT 2) s ON s.f2 IS DISTINCT FROM o.y$$)
-- which outer columns a join keeps per row, and its output without ExecScan:
-- none (an aggregate over the answers; a probe expression over two
-- columns), some (one of three, a text column), all (the output is the scan
-- tuple itself; a whole-row reference), an output expression, a filter qual,
-- an outer table with a dropped column
UNION ALL SELECT * FROM jcheck('as-of aggregate, no outer column', $$SELECT s.c_b, count(*) AS n, sum(s.c_i4) AS s_i4,
    sum(s.k) AS s_k, sum(s.c_f8) AS s_f8 FROM o CROSS JOIN LATERAL
    (SELECT t.k, t.c_i4, t.c_f8, t.c_b FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s
    GROUP BY s.c_b$$)
UNION ALL SELECT * FROM jcheck('as-of left aggregate, no outer column', $$SELECT count(*) AS n, count(s.k) AS n_k,
    sum(s.c_i8) AS s_i8, sum(s.c_d - date '2000-01-01') AS s_d FROM o LEFT JOIN LATERAL
    (SELECT t.k, t.c_i8, t.c_d FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s ON true$$)
UNION ALL SELECT * FROM jcheck('as-of probe expression, no outer column', $$SELECT count(*) AS n, sum(s.c_i4) AS s_i4,
    sum(s.k) AS s_k FROM o CROSS JOIN LATERAL
    (SELECT t.k, t.c_i4 FROM @T@ t WHERE t.k <= o.x + o.y ORDER BY t.k DESC LIMIT 1) s$$)
UNION ALL SELECT * FROM jcheck('as-of one outer column of three', $$SELECT o.y, s.c_i4 FROM o CROSS JOIN LATERAL
    (SELECT t.c_i4 FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$)
UNION ALL SELECT * FROM jcheck('as-of text outer column', $$SELECT u.pad, s.k, s.c_i4 FROM u LEFT JOIN LATERAL
    (SELECT t.k, t.c_i4 FROM @T@ t WHERE t.k <= u.k ORDER BY t.k DESC LIMIT 1) s ON true$$)
UNION ALL SELECT * FROM jcheck('as-of output is the scan tuple', $$SELECT o.id, o.x, o.y, s.k FROM o CROSS JOIN LATERAL
    (SELECT t.k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$)
UNION ALL SELECT * FROM jcheck('as-of whole outer row', $$SELECT o, s.c_tz FROM o CROSS JOIN LATERAL
    (SELECT t.c_tz FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$)
UNION ALL SELECT * FROM jcheck('as-of output expression', $$SELECT o.id + 1 AS id1, s.c_i2 * 2 AS i2 FROM o CROSS JOIN LATERAL
    (SELECT t.c_i2 FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$)
UNION ALL SELECT * FROM jcheck('as-of left filter qual', $$SELECT o.id, s.c_i4 FROM o LEFT JOIN LATERAL
    (SELECT t.c_i4 FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true
    WHERE s.c_i4 IS NULL OR s.c_i4 > o.y$$)
UNION ALL SELECT * FROM jcheck('as-of outer with a dropped column', $$SELECT od.y, s.k, s.c_o FROM od CROSS JOIN LATERAL
    (SELECT t.k, t.c_o FROM @T@ t WHERE t.k <= od.x ORDER BY t.k DESC LIMIT 1) s$$)
UNION ALL SELECT * FROM jcheck('equi aggregate, no outer column', $$SELECT t.qty, count(*) AS n, sum(t.price) AS s_price
    FROM o JOIN @T@ t ON t.k = o.y GROUP BY t.qty$$, 'u')
UNION ALL SELECT * FROM jcheck('left no outer column', $$SELECT t.price FROM o LEFT JOIN @T@ t
    ON t.k = o.y AND t.qty > 100$$, 'u')
UNION ALL SELECT * FROM jcheck('equi all types', $$SELECT o.id, t.k, t.c_i2, t.c_i4, t.c_i8, t.c_f4,
    t.c_f8, t.c_d, t.c_ts, t.c_tz, t.c_b, t.c_o FROM o JOIN @T@ t ON t.k = o.x$$)
UNION ALL SELECT * FROM jcheck('equi dup keys', $$SELECT o.id, t.price, t.qty FROM o JOIN @T@ t ON t.k = o.y$$, 'u')
UNION ALL SELECT * FROM jcheck('left dup keys', $$SELECT o.id, t.k, t.price FROM o LEFT JOIN @T@ t
    ON t.k = o.y AND t.qty > 100$$, 'u')
UNION ALL SELECT * FROM jcheck('semi qual on included', $$SELECT o.id FROM o WHERE EXISTS
    (SELECT FROM @T@ t WHERE t.k = o.y AND t.price IS NULL)$$, 'u')
UNION ALL SELECT * FROM jcheck('anti qual on included', $$SELECT o.id FROM o WHERE NOT EXISTS
    (SELECT FROM @T@ t WHERE t.k = o.y AND t.qty < 50)$$, 'u')
UNION ALL SELECT * FROM jcheck('range filter on included', $$SELECT o.id, t.k, t.c_ts FROM o JOIN @T@ t
    ON t.k BETWEEN o.x - 20 AND o.x + 20 WHERE t.c_i4 % 3 = 0$$)
UNION ALL SELECT s.what, s.node, s.rows, s.missing, s.extra, NULL, NULL, NULL, NULL
  FROM sdiff('scan = ANY all types', $$SELECT k, c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o
    FROM @T@ WHERE k = ANY (ARRAY(SELECT g * 9 - 12000 FROM generate_series(0, 3000) g))$$) s
UNION ALL SELECT s.what, s.node, s.rows, s.missing, s.extra, NULL, NULL, NULL, NULL
  FROM sdiff('scan range dup keys', $$SELECT k, price, qty FROM @T@ WHERE k BETWEEN 100 AND 700$$, 'u') s
$f$;

-- 1. every page all-visible: key-only plans, no heap fetch
SET enable_hashjoin = off;
SET enable_mergejoin = off;
SET enable_nestloop = off;
EXPLAIN (COSTS OFF) SELECT p.id, s.k, s.c_f8 FROM o p CROSS JOIN LATERAL
  (SELECT t.k, t.c_f8 FROM t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s;
EXPLAIN (COSTS OFF) SELECT o.id, t.price, t.qty FROM o JOIN u t ON t.k = o.y;
-- the outer seq scan returns its rows whole (every column, no projection)
EXPLAIN (VERBOSE, COSTS OFF) SELECT sum(s.c_i4) FROM o CROSS JOIN LATERAL
  (SELECT t.c_i4 FROM t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s;
SET enable_bitmapscan = off;
SET enable_seqscan = off;
SET enable_indexscan = off;
SET enable_indexonlyscan = off;
EXPLAIN (COSTS OFF) SELECT k, price FROM u WHERE k BETWEEN 100 AND 700;
RESET enable_bitmapscan;
RESET enable_seqscan;
RESET enable_indexscan;
RESET enable_indexonlyscan;
-- a column the index does not hold, or ctid, reads the heap: not key-only
EXPLAIN (COSTS OFF) SELECT p.id, s.k, s.pad FROM o p CROSS JOIN LATERAL
  (SELECT t.k, t.pad FROM t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s;
EXPLAIN (COSTS OFF) SELECT p.id, s.k FROM o p CROSS JOIN LATERAL
  (SELECT t.k, t.c_i4 FROM t WHERE t.k <= p.x AND t.id > 0 ORDER BY t.k DESC LIMIT 1) s;
EXPLAIN (COSTS OFF) SELECT o.id, t.price, t.ctid FROM o JOIN u t ON t.k = o.y;
RESET enable_hashjoin;
RESET enable_mergejoin;
RESET enable_nestloop;
SELECT * FROM fetches($$SELECT p.id, s.k, s.c_f8 FROM o p CROSS JOIN LATERAL
  (SELECT t.k, t.c_f8 FROM t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s$$)
UNION ALL SELECT * FROM fetches($$SELECT o.id, t.price, t.qty FROM o JOIN u t ON t.k = o.y$$)
UNION ALL SELECT * FROM fetches($$SELECT o.id FROM o WHERE EXISTS
    (SELECT FROM u t WHERE t.k = o.y AND t.price IS NULL)$$)
UNION ALL SELECT * FROM fetches($$SELECT o.id, t.c_tz FROM o LEFT JOIN t ON t.k = o.x$$)
UNION ALL SELECT * FROM fetches($$SELECT k, price, qty FROM u WHERE k BETWEEN 100 AND 700$$)
UNION ALL SELECT * FROM fetches($$SELECT o.id, t.price, t.pad FROM o JOIN u t ON t.k = o.y$$);
-- LIMIT 1 as-of joins on the all-visible table answer from the entries;
-- with a subquery filter (the window's other bound) or LIMIT 3 they walk
SELECT direct($$SELECT p.id, s.k, s.c_f8 FROM o p CROSS JOIN LATERAL
  (SELECT t.k, t.c_f8 FROM t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s$$) AS pred,
       direct($$SELECT o.id, s.* FROM o LEFT JOIN LATERAL (SELECT t.c_i4, t.k, t.c_tz FROM t
  WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true$$) AS pred_left,
       direct($$SELECT o.id, s.k FROM o CROSS JOIN LATERAL
  (SELECT t.k FROM t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s$$) AS succ,
       direct($$SELECT o.id, s.c_f8 FROM o CROSS JOIN LATERAL
  (SELECT t.c_f8 FROM t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$) AS included_only,
       direct($$SELECT o.id, s.* FROM o LEFT JOIN LATERAL (SELECT t.c_i4, t.k FROM t
  WHERE t.k <= o.x AND t.k > o.x - 4 ORDER BY t.k DESC LIMIT 1) s ON true$$) AS window,
       direct($$SELECT o.id, s.* FROM o LEFT JOIN LATERAL
  (SELECT t.k, t.c_f8 FROM t WHERE t.k > o.x ORDER BY t.k LIMIT 3) s ON true$$) AS limit_3,
       direct($$SELECT count(*), sum(s.c_i4) FROM o CROSS JOIN LATERAL
  (SELECT t.c_i4 FROM t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$) AS aggregate,
       direct($$SELECT count(*), sum(s.c_i4) FROM o CROSS JOIN LATERAL
  (SELECT t.c_i4 FROM t WHERE t.k <= o.x + o.y ORDER BY t.k DESC LIMIT 1) s$$) AS probe_expr;
SELECT * FROM all_checks();

-- 2. an UPDATE of included columns (not HOT: the index gets new entries),
-- no VACUUM: the changed pages are read from the heap, row by row (the
-- table's statistics still say all-visible)
UPDATE t SET c_f8 = coalesce(c_f8, 0) + 1, c_i2 = NULL, c_tz = c_tz + interval '1 day'
  WHERE id BETWEEN 1000 AND 1400;
UPDATE tb SET c_f8 = coalesce(c_f8, 0) + 1, c_i2 = NULL, c_tz = c_tz + interval '1 day'
  WHERE id BETWEEN 1000 AND 1400;
UPDATE u SET price = NULL, qty = 7 WHERE id BETWEEN 2000 AND 2300;
UPDATE ub SET price = NULL, qty = 7 WHERE id BETWEEN 2000 AND 2300;
SELECT * FROM fetches($$SELECT p.id, s.k, s.c_f8 FROM o p CROSS JOIN LATERAL
  (SELECT t.k, t.c_f8 FROM t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s$$)
UNION ALL SELECT * FROM fetches($$SELECT o.id, t.price, t.qty FROM o JOIN u t ON t.k = o.y$$)
UNION ALL SELECT * FROM fetches($$SELECT k, price, qty FROM u WHERE k BETWEEN 100 AND 700$$);
-- some pages are not all-visible: rows whose answer is on one walk (and
-- visit the heap), the others are answered directly
SELECT direct($$SELECT p.id, s.k, s.c_f8 FROM o p CROSS JOIN LATERAL
  (SELECT t.k, t.c_f8 FROM t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s$$) AS pred;
SELECT * FROM all_checks();
-- a rolled back update changes nothing (its pages are no longer all-visible)
BEGIN;
UPDATE t SET c_f8 = -1, c_b = NULL WHERE id % 2 = 0 AND id BETWEEN 1500 AND 2500;
UPDATE u SET price = -1 WHERE id % 2 = 0 AND id BETWEEN 2300 AND 2700;
ROLLBACK;
SELECT * FROM all_checks();

-- 3. most rows updated, statistics refreshed (ANALYZE): the join sorts its
-- hits into heap order; the pages left all-visible still come from the image
UPDATE t SET c_i8 = c_i8 / 2, c_b = NOT c_b WHERE id > 3000;
UPDATE tb SET c_i8 = c_i8 / 2, c_b = NOT c_b WHERE id > 3000;
UPDATE u SET qty = qty + 1 WHERE id > 2300;
UPDATE ub SET qty = qty + 1 WHERE id > 2300;
ANALYZE t, tb, u, ub;
SELECT * FROM fetches($$SELECT o.id, t.price, t.qty FROM o JOIN u t ON t.k = o.y$$)
UNION ALL SELECT * FROM fetches($$SELECT o.id, t.c_i8, t.c_b FROM o JOIN t ON t.k = o.x$$);
SELECT * FROM all_checks();

-- 4. VACUUM: every page all-visible again, no heap fetch
VACUUM t, tb, u, ub;
SELECT * FROM fetches($$SELECT p.id, s.k, s.c_f8 FROM o p CROSS JOIN LATERAL
  (SELECT t.k, t.c_f8 FROM t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s$$)
UNION ALL SELECT * FROM fetches($$SELECT o.id, t.price, t.qty FROM o JOIN u t ON t.k = o.y$$)
UNION ALL SELECT * FROM fetches($$SELECT o.id, t.c_i8, t.c_b FROM o JOIN t ON t.k = o.x$$)
UNION ALL SELECT * FROM fetches($$SELECT k, price, qty FROM u WHERE k BETWEEN 100 AND 700$$);
SELECT direct($$SELECT p.id, s.k, s.c_f8 FROM o p CROSS JOIN LATERAL
  (SELECT t.k, t.c_f8 FROM t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s$$) AS pred;
SELECT * FROM all_checks();

DROP SCHEMA gi_include_join CASCADE;
