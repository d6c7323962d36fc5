--
-- differential.sql: the differential test against PostgreSQL's btree, run by
-- the sql/1x_diff_*.sql drivers (not a test of its own: pg_regress runs only
-- sql/*.sql).  A driver sets these psql variables and includes this file:
--   schema     schema the test runs in (dropped at the end)
--   type       key column type: int2, int4 or int8
--   structure  default (the index takes gpuidx.default_structure, so the
--              suite's pass per structure covers both) or btree | veb (named
--              in the index's WITH clause)
--   seed       setseed() value: the data and probes are reproducible
--   rows       rows in the table
--   probes     probe keys taken from the table (half as many dense and as
--              many wide random ones follow, and a twentieth as many NULLs)
--   wide       a float expression drawing one random() in the type's wide
--              range (the random part of the keys beyond -1000..1000)
--   outside    int8[] literal: probe values beyond the type's range
--
-- Random int data with duplicates, negatives, NULLs and the type's extremes.
-- Table d has the gpuidx index, db is a copy with a btree index; every write
-- is applied to both.  Each batch function's answer on d and the same
-- question through the btree on db are compared with EXCEPT ALL in both
-- directions (rows are (probe, key, id, k) with id and k read from the heap
-- tuple gpuidx points to), and so are the index-scan plans.  A range with a
-- NULL bound has no rows and a NULL count.
--
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuidx;
DROP SCHEMA IF EXISTS :schema CASCADE;
CREATE SCHEMA :schema;
RESET client_min_messages;
SET search_path = :schema, public;
SET max_parallel_workers_per_gather = 0;

-- the key type's least and greatest values (kmin, kmax), and whether the
-- driver names the structure (named_structure)
SELECT (-(2::numeric ^ (8 * typlen - 1)))::int8 AS kmin,
       (2::numeric ^ (8 * typlen - 1) - 1)::int8 AS kmax,
       :'structure' <> 'default' AS named_structure
  FROM pg_type WHERE oid = :'type'::regtype \gset

-- diff(gi, ref): run the gpuidx query gi as is and the reference query ref
-- with the planner forced onto btree index scans in nested loops; count the
-- rows of each and the rows of each missing from the other (EXCEPT ALL).
CREATE FUNCTION diff(gi text, ref text,
                     OUT gi_rows bigint, OUT ref_rows bigint, OUT missing bigint, OUT extra bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  names text[] := '{enable_seqscan, enable_hashjoin, enable_mergejoin, enable_bitmapscan, enable_material}';
  saved text[] := '{}';
  i int;
BEGIN
  PERFORM set_config('client_min_messages', 'warning', true);
  DROP TABLE IF EXISTS pg_temp.gi_out, pg_temp.ref_out;
  EXECUTE 'CREATE TEMP TABLE gi_out AS ' || gi;
  FOR i IN 1 .. cardinality(names) LOOP
    saved := saved || current_setting(names[i]);
    PERFORM set_config(names[i], 'off', true);
  END LOOP;
  EXECUTE 'CREATE TEMP TABLE ref_out AS ' || ref;
  FOR i IN 1 .. cardinality(names) LOOP
    PERFORM set_config(names[i], saved[i], true);
  END LOOP;
  SELECT count(*) INTO gi_rows FROM gi_out;
  SELECT count(*) INTO ref_rows FROM ref_out;
  SELECT count(*) INTO missing FROM (TABLE ref_out EXCEPT ALL TABLE gi_out) x;
  SELECT count(*) INTO extra FROM (TABLE gi_out EXCEPT ALL TABLE ref_out) y;
END $f$;

-- pdiff(q, kmin, kmax): q with %1$s for the table and %2$L, %3$L for the key
-- type's least and greatest values (written into q as literals, so that the
-- planner sees constants as in a hand-written query); run on d (gpuidx) and
-- on db (btree) under the current planner settings; compare as multisets
-- (queries that test order number their rows themselves).
CREATE FUNCTION pdiff(q text, kmin int8, kmax int8, OUT rows bigint, OUT missing bigint, OUT extra bigint)
LANGUAGE plpgsql AS $f$
BEGIN
  PERFORM set_config('client_min_messages', 'warning', true);
  DROP TABLE IF EXISTS pg_temp.a_out, pg_temp.b_out;
  EXECUTE 'CREATE TEMP TABLE a_out AS ' || format(q, 'd', kmin, kmax);
  EXECUTE 'CREATE TEMP TABLE b_out AS ' || format(q, 'db', kmin, kmax);
  SELECT count(*) INTO rows FROM b_out;
  SELECT count(*) INTO missing FROM (TABLE b_out EXCEPT ALL TABLE a_out) x;
  SELECT count(*) INTO extra FROM (TABLE a_out EXCEPT ALL TABLE b_out) y;
END $f$;

-- the data
SELECT setseed(:seed);
CREATE TABLE d (id int, k :type) WITH (autovacuum_enabled = off);
INSERT INTO d
SELECT g, CASE WHEN r < 0.02 THEN NULL
               WHEN r < 0.05 THEN (ARRAY[:'kmin'::int8, :'kmin'::int8 + 1, :'kmax'::int8 - 1, :'kmax'::int8]:::type[])[1 + (random() * 3)::int]
               WHEN r < 0.60 THEN (random() * 2000 - 1000)::int8
               ELSE :wide::int8 END
  FROM (SELECT g, random() AS r FROM generate_series(1, :rows) g) s;
CREATE TABLE db (id int, k :type) WITH (autovacuum_enabled = off);
INSERT INTO db SELECT * FROM d;
\if :named_structure
CREATE INDEX d_gi ON d USING gpuidx (k) WITH (structure = :structure);
SELECT gpuidx_info('d_gi')->>'structure' AS structure;
\else
CREATE INDEX d_gi ON d USING gpuidx (k);
\endif
CREATE INDEX db_bt ON db (k);
ANALYZE d, db;
SELECT count(*) AS rows, count(k) AS keys, count(DISTINCT k) AS distinct_keys,
       count(*) FILTER (WHERE k < 0) > 0 AS has_negatives,
       count(*) FILTER (WHERE k IN (:'kmin'::int8, :'kmax'::int8)) > 0 AS has_extremes
  FROM d;

-- the probes: keys present in the table, random values in the dense and the
-- wide part, the type's extremes, values beyond the type's range, NULLs
CREATE TABLE pr (keys bigint[], lo bigint[], hi bigint[]);
INSERT INTO pr (keys)
SELECT array_agg(v ORDER BY o) FROM (
  SELECT v, random() AS o FROM (
    (SELECT v FROM (SELECT k::int8 AS v FROM d WHERE k IS NOT NULL ORDER BY id) x ORDER BY random() LIMIT :probes)
    UNION ALL SELECT (random() * 2200 - 1100)::int8 FROM generate_series(1, :probes / 2)
    UNION ALL SELECT :wide::int8 FROM generate_series(1, :probes / 2)
    UNION ALL SELECT unnest(ARRAY[:'kmin'::int8, :'kmin'::int8 + 1, :'kmax'::int8 - 1, :'kmax'::int8]::int8[])
    UNION ALL SELECT unnest(:'outside'::int8[])
    UNION ALL SELECT NULL::int8 FROM generate_series(1, :probes / 20)
  ) u) w;
UPDATE pr SET lo = (SELECT array_agg(l ORDER BY i) FROM (
  SELECT i, CASE WHEN i % 250 = 0 THEN :'kmin'::int8 ELSE v END AS l
    FROM unnest(keys) WITH ORDINALITY x(v, i) WHERE i <= 2000) s);
UPDATE pr SET hi = (SELECT array_agg(h ORDER BY i) FROM (
  SELECT i, CASE WHEN i % 250 = 0 THEN least(v, -900)
                 WHEN i % 37 = 0 THEN v - 1
                 WHEN v > :'kmax'::int8 - 40 THEN v
                 ELSE v + (i % 40) END AS h
    FROM unnest(keys) WITH ORDINALITY x(v, i) WHERE i <= 2000) s);
SELECT cardinality(keys) AS probes, cardinality(lo) AS ranges, cardinality(hi) = cardinality(lo) AS same_length
  FROM pr;

-- the comparisons, run three times: right after the build, after writes
-- (with the pending list filling and folding), and after VACUUM
CREATE FUNCTION compare_all(kmin int8, kmax int8) RETURNS TABLE(what text, gi_rows bigint, ref_rows bigint, missing bigint, extra bigint)
LANGUAGE plpgsql AS $f$
BEGIN
  what := 'lookup';
  SELECT * INTO gi_rows, ref_rows, missing, extra FROM diff(
    $$SELECT g.probe, g.key, d.id, d.k FROM gpuidx_lookup('d_gi', (SELECT keys FROM pr)) g LEFT JOIN d ON d.ctid = g.ctid$$,
    $$SELECT u.i::int AS probe, db.k::int8 AS key, db.id, db.k FROM unnest((SELECT keys FROM pr)) WITH ORDINALITY u(v, i) JOIN db ON db.k = u.v$$);
  RETURN NEXT;
  what := 'predecessor';
  SELECT * INTO gi_rows, ref_rows, missing, extra FROM diff(
    $$SELECT g.probe, g.key, d.id, d.k FROM gpuidx_predecessor('d_gi', (SELECT keys FROM pr)) g LEFT JOIN d ON d.ctid = g.ctid$$,
    $$SELECT u.i::int AS probe, db.k::int8 AS key, db.id, db.k FROM unnest((SELECT keys FROM pr)) WITH ORDINALITY u(v, i)
        CROSS JOIN LATERAL (SELECT k FROM db WHERE k <= u.v ORDER BY k DESC LIMIT 1) p JOIN db ON db.k = p.k$$);
  RETURN NEXT;
  what := 'successor';
  SELECT * INTO gi_rows, ref_rows, missing, extra FROM diff(
    $$SELECT g.probe, g.key, d.id, d.k FROM gpuidx_successor('d_gi', (SELECT keys FROM pr)) g LEFT JOIN d ON d.ctid = g.ctid$$,
    $$SELECT u.i::int AS probe, db.k::int8 AS key, db.id, db.k FROM unnest((SELECT keys FROM pr)) WITH ORDINALITY u(v, i)
        CROSS JOIN LATERAL (SELECT k FROM db WHERE k >= u.v ORDER BY k LIMIT 1) p JOIN db ON db.k = p.k$$);
  RETURN NEXT;
  what := 'range';
  SELECT * INTO gi_rows, ref_rows, missing, extra FROM diff(
    $$SELECT g.probe, g.key, d.id, d.k FROM gpuidx_range('d_gi', (SELECT lo FROM pr), (SELECT hi FROM pr)) g LEFT JOIN d ON d.ctid = g.ctid$$,
    $$SELECT u.i::int AS probe, db.k::int8 AS key, db.id, db.k FROM unnest((SELECT lo FROM pr), (SELECT hi FROM pr)) WITH ORDINALITY u(l, h, i)
        JOIN db ON db.k >= u.l AND db.k <= u.h$$);
  RETURN NEXT;
  what := 'range_count';
  SELECT * INTO gi_rows, ref_rows, missing, extra FROM diff(
    $$SELECT i, n FROM unnest(gpuidx_range_count('d_gi', (SELECT lo FROM pr), (SELECT hi FROM pr))) WITH ORDINALITY x(n, i)$$,
    $$SELECT u.i, CASE WHEN u.l IS NOT NULL AND u.h IS NOT NULL
                       THEN (SELECT count(*) FROM db WHERE db.k >= u.l AND db.k <= u.h) END AS n
        FROM unnest((SELECT lo FROM pr), (SELECT hi FROM pr)) WITH ORDINALITY u(l, h, i)$$);
  RETURN NEXT;
  -- index scans on d (gpuidx) and db (btree), the same query
  PERFORM set_config('gpuidx.enable_customscan', 'off', true);
  PERFORM set_config('enable_seqscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  what := 'indexscan = ANY';
  SELECT p.rows, p.rows, p.missing, p.extra INTO gi_rows, ref_rows, missing, extra
    FROM pdiff($$SELECT id, k FROM %1$s WHERE k = ANY ((SELECT keys[1:4000] FROM pr)::bigint[])$$, kmin, kmax) p;
  RETURN NEXT;
  what := 'indexscan ranges';
  SELECT p.rows, p.rows, p.missing, p.extra INTO gi_rows, ref_rows, missing, extra
    FROM pdiff($$SELECT u.i, t.id, t.k FROM unnest((SELECT lo FROM pr)[1:300], (SELECT hi FROM pr)[1:300]) WITH ORDINALITY u(l, h, i)
                 CROSS JOIN LATERAL (SELECT id, k FROM %1$s t WHERE k BETWEEN u.l AND u.h) t$$, kmin, kmax) p;
  RETURN NEXT;
  what := 'indexscan < and >=';
  SELECT p.rows, p.rows, p.missing, p.extra INTO gi_rows, ref_rows, missing, extra
    FROM pdiff($$SELECT id, k FROM %1$s WHERE k < -990 UNION ALL SELECT id, k FROM %1$s WHERE k >= 995
                 UNION ALL SELECT id, k FROM %1$s WHERE k <= %2$L::int8 + 1 UNION ALL SELECT id, k FROM %1$s WHERE k > %3$L::int8 - 1$$, kmin, kmax) p;
  RETURN NEXT;
  what := 'backward scan LIMIT 1';
  SELECT p.rows, p.rows, p.missing, p.extra INTO gi_rows, ref_rows, missing, extra
    FROM pdiff($$SELECT u.i, x.k FROM unnest((SELECT keys FROM pr)[1:1000]) WITH ORDINALITY u(v, i)
                 CROSS JOIN LATERAL (SELECT k FROM %1$s WHERE k <= u.v ORDER BY k DESC LIMIT 1) x$$, kmin, kmax) p;
  RETURN NEXT;
  what := 'forward scan LIMIT 3';
  SELECT p.rows, p.rows, p.missing, p.extra INTO gi_rows, ref_rows, missing, extra
    FROM pdiff($$SELECT u.i, x.r, x.k FROM unnest((SELECT keys FROM pr)[1:1000]) WITH ORDINALITY u(v, i)
                 CROSS JOIN LATERAL (SELECT row_number() OVER () AS r, k FROM
                                     (SELECT k FROM %1$s WHERE k >= u.v ORDER BY k LIMIT 3) z) x$$, kmin, kmax) p;
  RETURN NEXT;
  what := 'backward scan LIMIT 3';
  SELECT p.rows, p.rows, p.missing, p.extra INTO gi_rows, ref_rows, missing, extra
    FROM pdiff($$SELECT u.i, x.r, x.k FROM unnest((SELECT keys FROM pr)[1:1000]) WITH ORDINALITY u(v, i)
                 CROSS JOIN LATERAL (SELECT row_number() OVER () AS r, k FROM
                                     (SELECT k FROM %1$s WHERE k < u.v ORDER BY k DESC LIMIT 3) z) x$$, kmin, kmax) p;
  RETURN NEXT;
  what := 'ordered range scan';
  SELECT p.rows, p.rows, p.missing, p.extra INTO gi_rows, ref_rows, missing, extra
    FROM pdiff($$SELECT row_number() OVER () AS r, k FROM (SELECT k FROM %1$s WHERE k BETWEEN -500 AND 500 ORDER BY k DESC) z$$, kmin, kmax) p;
  RETURN NEXT;
  PERFORM set_config('enable_bitmapscan', 'on', true);
  PERFORM set_config('enable_indexscan', 'off', true);
  what := 'bitmapscan = ANY';
  SELECT p.rows, p.rows, p.missing, p.extra INTO gi_rows, ref_rows, missing, extra
    FROM pdiff($$SELECT id, k FROM %1$s WHERE k = ANY ((SELECT keys[1:4000] FROM pr)::bigint[])$$, kmin, kmax) p;
  RETURN NEXT;
  what := 'bitmapscan ranges';
  SELECT p.rows, p.rows, p.missing, p.extra INTO gi_rows, ref_rows, missing, extra
    FROM pdiff($$SELECT id, k FROM %1$s WHERE k BETWEEN -100 AND 100 OR k > %3$L::int8 - 2 OR k < -5000$$, kmin, kmax) p;
  RETURN NEXT;
  -- the custom scan (GpuIndexScan), where the planner takes it
  PERFORM set_config('gpuidx.enable_customscan', 'on', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  what := 'customscan = ANY';
  SELECT p.rows, p.rows, p.missing, p.extra INTO gi_rows, ref_rows, missing, extra
    FROM pdiff($$SELECT id, k FROM %1$s WHERE k = ANY ((SELECT keys[1:4000] FROM pr)::bigint[])$$, kmin, kmax) p;
  RETURN NEXT;
  what := 'customscan ranges';
  SELECT p.rows, p.rows, p.missing, p.extra INTO gi_rows, ref_rows, missing, extra
    FROM pdiff($$SELECT id, k FROM %1$s WHERE k BETWEEN -100 AND 100 OR k > %3$L::int8 - 2 OR k < -5000 OR k <= %2$L::int8 + 1$$, kmin, kmax) p;
  RETURN NEXT;
END $f$;

-- the plans compared above, on d
SET gpuidx.enable_customscan = off;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id, k FROM d WHERE k = ANY ((SELECT keys FROM pr)::bigint[]);
EXPLAIN (COSTS OFF) SELECT u.i, x.k FROM unnest((SELECT keys FROM pr)[1:1000]) WITH ORDINALITY u(v, i)
  CROSS JOIN LATERAL (SELECT k FROM d WHERE k <= u.v ORDER BY k DESC LIMIT 1) x;
EXPLAIN (COSTS OFF) SELECT k FROM d WHERE k BETWEEN -500 AND 500 ORDER BY k DESC;
RESET enable_bitmapscan;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT id, k FROM d WHERE k BETWEEN -100 AND 100 OR k > :'kmax'::int8 - 2 OR k < -5000;
SET enable_bitmapscan = off;
SET gpuidx.enable_customscan = on;
EXPLAIN (COSTS OFF) SELECT id, k FROM d WHERE k = ANY ((SELECT keys FROM pr)::bigint[]);
RESET gpuidx.enable_customscan;
RESET enable_bitmapscan;
RESET enable_indexscan;
RESET enable_seqscan;

-- 1. right after the build
SELECT * FROM compare_all(:'kmin', :'kmax');

-- 2. writes on both tables: deletes, key updates, NULLs, new rows in batches
-- smaller and larger than the pending limit
SET gpuidx.pending_limit = 1000;
DELETE FROM d WHERE id % 10 = 3;
DELETE FROM db WHERE id % 10 = 3;
UPDATE d SET k = k / 2 WHERE id % 10 = 4;
UPDATE db SET k = k / 2 WHERE id % 10 = 4;
UPDATE d SET k = NULL WHERE id % 50 = 5;
UPDATE db SET k = NULL WHERE id % 50 = 5;
UPDATE d SET k = :'kmax'::int8 WHERE id % 500 = 6;
UPDATE db SET k = :'kmax'::int8 WHERE id % 500 = 6;
CREATE TABLE newrows AS
SELECT :rows + g AS id, CASE WHEN g % 3 = 0 THEN (random() * 2000 - 1000):::type ELSE :wide::int8:::type END AS k
  FROM generate_series(1, 2500) g;
INSERT INTO d SELECT * FROM newrows WHERE id % 5 = 0;
INSERT INTO db SELECT * FROM newrows WHERE id % 5 = 0;
SELECT * FROM compare_all(:'kmin', :'kmax');
INSERT INTO d SELECT * FROM newrows WHERE id % 5 <> 0;
INSERT INTO db SELECT * FROM newrows WHERE id % 5 <> 0;
BEGIN;
INSERT INTO d SELECT id + 100000, k FROM newrows;
ROLLBACK;
SELECT * FROM compare_all(:'kmin', :'kmax');
RESET gpuidx.pending_limit;

-- 3. after VACUUM (dead entries removed, TIDs then reused by new rows)
VACUUM (INDEX_CLEANUP ON) d;
VACUUM (INDEX_CLEANUP ON) db;
INSERT INTO d SELECT id + 200000, k FROM newrows WHERE id % 2 = 0;
INSERT INTO db SELECT id + 200000, k FROM newrows WHERE id % 2 = 0;
SELECT * FROM compare_all(:'kmin', :'kmax');

SET client_min_messages = warning;
DROP SCHEMA :schema CASCADE;
