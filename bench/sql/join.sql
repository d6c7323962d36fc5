-- bench/sql/join.sql - the harness of the join benchmark (bench/sql/join).
-- Schema gijoin: tables t (gpuidx index on k) and tb (btree on k, the same
-- rows) are loaded by gijoin.load_slice, probe tables by gijoin.make_probes;
-- gijoin.measure times one cell into gijoin.results.  Re-running this file
-- keeps the loaded tables and the load notes (a kept data directory) and
-- replaces the functions.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuidx;
CREATE SCHEMA IF NOT EXISTS gijoin;

-- One row per timed cell: the join workload at a probe count through a
-- method (btree: the twin tb; gpuidx: t with an engine), planner's choice or
-- GpuIndexJoin forced; the top join node that ran, the median ms, the query's
-- result (checked against btree's) and a note (timeout, error, not offered).
CREATE TABLE IF NOT EXISTS gijoin.results (
    workload text, probes int, method text, engine text, forced bool,
    plan text, ms float8, result text, note text,
    at timestamptz DEFAULT clock_timestamp());
CREATE TABLE IF NOT EXISTS gijoin.info (what text, value text);
-- plan_name had one argument before (a kept data directory's schema)
DROP FUNCTION IF EXISTS gijoin.plan_name(jsonb);
RESET client_min_messages;

-- Rows lo..hi of the table tbl: key k = 8 * (hash(i) mod nrows/2), so about
-- 2.3 rows per distinct key, 86 % of the key slots used, gaps of 8 between
-- slots; rows in random key order.  v depends on k alone, so that every row
-- of a tied key carries the same v and an as-of query that picks any one of
-- them sums the same (PostgreSQL breaks LIMIT ties as it likes); so does w,
-- an int8 filled when the table has a column w (bench/sql/include's second
-- included column).  The hash makes the rows the same whichever session
-- writes which slice.
CREATE OR REPLACE FUNCTION gijoin.load_slice(tbl regclass, nrows bigint, lo bigint, hi bigint, padlen int)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    has_w bool := EXISTS (SELECT FROM pg_attribute
                           WHERE attrelid = tbl AND attname = 'w' AND attnum > 0 AND NOT attisdropped);
BEGIN
    EXECUTE format($q$
        INSERT INTO %s (id, k, v, pad%s)
        SELECT s.i, s.k, (hashint8extended(s.k, 7) & 65535)::int4, %L%s
          FROM (SELECT i, 8 * ((hashint8extended(i, 25) & 9223372036854775807) %% %s) AS k
                  FROM generate_series(%s, %s) i) s$q$,
        tbl, CASE WHEN has_w THEN ', w' ELSE '' END, repeat('x', padlen),
        CASE WHEN has_w THEN ', hashint8extended(s.k, 11) & 1099511627775' ELSE '' END,
        nrows / 2, lo, hi);
END $$;

-- Drop every probe table (they depend on the table size).
CREATE OR REPLACE FUNCTION gijoin.drop_probes() RETURNS void LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN
    FOR r IN SELECT c.oid::regclass AS rel FROM pg_class c
              WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
                AND c.relname ~ '^p_(eq|rng|asof|asofs)_[0-9]+$' LOOP
        EXECUTE format('DROP TABLE %s', r.rel);
    END LOOP;
END $$;

-- Record how long a step took (ms since t0).
CREATE OR REPLACE FUNCTION gijoin.note_ms(what text, t0 timestamptz) RETURNS void LANGUAGE sql AS $$
    INSERT INTO gijoin.info VALUES (what, round(extract(epoch FROM clock_timestamp() - t0) * 1000)::text)
$$;

-- The probe tables of n rows over a table of nrows rows (keys in [0, 4*nrows)):
--   p_eq_N(i, x)     equi and semi probes: 80 % on a key slot (86 % of slots
--                    hold a key), 20 % on slot + 3 (never a key): ~69 % hits;
--   p_rng_N(i, lo)   range starts, uniform over the key range;
--   p_asof_N(i, x)   as-of probes, uniform over the key range (mostly between
--                    keys), 1 % below the smallest key (no predecessor);
--   p_asofs_N(i, x)  the same probes stored in key order (time-ordered probes).
-- Fixed seeds: the same sets on every run.
CREATE OR REPLACE FUNCTION gijoin.make_probes(n int, nrows bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('client_min_messages', 'warning', true);
    EXECUTE format('DROP TABLE IF EXISTS public.p_eq_%1$s, public.p_rng_%1$s, public.p_asof_%1$s, public.p_asofs_%1$s', n);
    PERFORM setseed(0.5);
    EXECUTE format($q$CREATE TABLE public.p_eq_%1$s AS
        SELECT g AS i, CASE WHEN random() < 0.2 THEN 3 ELSE 0 END + 8 * floor(random() * (%2$s / 2))::int8 AS x
          FROM generate_series(1, %1$s) g$q$, n, nrows);
    PERFORM setseed(0.25);
    EXECUTE format($q$CREATE TABLE public.p_rng_%1$s AS
        SELECT g AS i, floor(random() * (4 * %2$s))::int8 AS lo
          FROM generate_series(1, %1$s) g$q$, n, nrows);
    PERFORM setseed(0.75);
    EXECUTE format($q$CREATE TABLE public.p_asof_%1$s AS
        SELECT g AS i, CASE WHEN random() < 0.01 THEN -1 - floor(random() * 1000)::int8
                            ELSE floor(random() * (4 * %2$s))::int8 END AS x
          FROM generate_series(1, %1$s) g$q$, n, nrows);
    EXECUTE format('CREATE TABLE public.p_asofs_%1$s AS SELECT * FROM public.p_asof_%1$s ORDER BY x', n);
    EXECUTE format('ANALYZE public.p_eq_%1$s, public.p_rng_%1$s, public.p_asof_%1$s, public.p_asofs_%1$s', n);
END $$;

-- The query text of a workload at n probes over table tbl (t or tb); range
-- joins cover [lo, lo + width].
CREATE OR REPLACE FUNCTION gijoin.query(workload text, n int, tbl text, width int) RETURNS text
LANGUAGE sql AS $$
    SELECT CASE workload
      WHEN 'equi'   THEN format('SELECT count(*) FROM p_eq_%s p JOIN %s t ON t.k = p.x', n, tbl)
      WHEN 'equi_v' THEN format('SELECT sum(t.v) FROM p_eq_%s p JOIN %s t ON t.k = p.x', n, tbl)
      WHEN 'semi'   THEN format('SELECT count(*) FROM p_eq_%s p WHERE p.x IN (SELECT k FROM %s)', n, tbl)
      WHEN 'range'  THEN format('SELECT count(*) FROM p_rng_%s p JOIN %s t ON t.k BETWEEN p.lo AND p.lo + %s', n, tbl, width)
      WHEN 'asof'   THEN format('SELECT count(s.k) FROM p_asof_%s p CROSS JOIN LATERAL '
                                '(SELECT t.k FROM %s t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s', n, tbl)
      WHEN 'asof_v' THEN format('SELECT sum(s.v) FROM p_asof_%s p CROSS JOIN LATERAL '
                                '(SELECT t.k, t.v FROM %s t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s', n, tbl)
      WHEN 'asof_sorted'   THEN format('SELECT count(s.k) FROM p_asofs_%s p CROSS JOIN LATERAL '
                                '(SELECT t.k FROM %s t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s', n, tbl)
      WHEN 'asof_sorted_v' THEN format('SELECT sum(s.v) FROM p_asofs_%s p CROSS JOIN LATERAL '
                                '(SELECT t.k, t.v FROM %s t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s', n, tbl)
      WHEN 'rescan' THEN format('SELECT count(*) FROM p_eq_%s p JOIN %s t ON t.k = p.x', n, tbl)
    END
$$;


-- Set a parameter for the rest of the transaction if this server has it (a
-- gpuidx parameter of a newer build, say); true when it was set.
CREATE OR REPLACE FUNCTION gijoin.set_local(name text, value text) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
    IF NOT gijoin.have_setting(name) THEN
        RETURN false;
    END IF;
    PERFORM set_config(name, value, true);
    RETURN true;
END $$;

-- True when this server has the parameter (gpuidx.enable_customjoin: this
-- build offers GpuIndexJoin).  The library is loaded first: "gpuidx" is a
-- reserved prefix, and its parameters are defined, only once it is.
CREATE OR REPLACE FUNCTION gijoin.have_setting(name text) RETURNS bool LANGUAGE plpgsql AS $$
BEGIN
    IF name LIKE 'gpuidx.%' THEN
        LOAD 'gpuidx';
    END IF;
    RETURN EXISTS (SELECT FROM pg_settings s WHERE s.name = have_setting.name);
END $$;

CREATE OR REPLACE FUNCTION gijoin.have_customjoin() RETURNS bool LANGUAGE sql AS $$
    SELECT gijoin.have_setting('gpuidx.enable_customjoin')
$$;

-- The name of one plan node as EXPLAIN's text format prints it
-- ("Parallel Hash Semi Join", "Index Only Scan Backward",
-- "Custom Scan (GpuIndexJoin)"), with " key-only" after a gpuidx node that
-- says "Key Only: true" (rows from the image on all-visible pages).
CREATE OR REPLACE FUNCTION gijoin.node_name(node jsonb) RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN (node->>'Parallel Aware')::bool THEN 'Parallel ' ELSE '' END ||
           CASE
             WHEN node->>'Node Type' = 'Custom Scan' THEN 'Custom Scan (' || (node->>'Custom Plan Provider') || ')'
             WHEN node->>'Node Type' IN ('Hash Join', 'Merge Join') AND node->>'Join Type' <> 'Inner'
               THEN split_part(node->>'Node Type', ' ', 1) || ' ' || (node->>'Join Type') || ' Join'
             WHEN node->>'Node Type' = 'Nested Loop' AND node->>'Join Type' <> 'Inner'
               THEN 'Nested Loop ' || (node->>'Join Type') || ' Join'
             ELSE node->>'Node Type'
           END ||
           CASE WHEN node->>'Scan Direction' = 'Backward' THEN ' Backward' ELSE '' END ||
           CASE WHEN (node->>'Key Only')::bool THEN ' key-only' ELSE '' END
$$;

-- What a plan (EXPLAIN's JSON "Plan" object) reads the big table with: its
-- top join node or custom scan, "Gather/" before it when a Gather runs above
-- it, and after a slash the node that reads the big table (one of tables)
-- below it unless the top node reads it itself: "Hash Join/Seq Scan",
-- "Nested Loop/Index Only Scan", "Custom Scan (GpuIndexJoin) key-only";
-- without a join or custom scan, the node that reads the big table, again
-- with "Gather/" before it ("Gather/Parallel Index Only Scan").  The engines
-- that EXPLAIN ANALYZE reports (property "Engine") follow in brackets.
CREATE OR REPLACE FUNCTION gijoin.plan_name(plan jsonb, tables text[] DEFAULT ARRAY['t', 'tb'])
RETURNS text LANGUAGE sql AS $$
    WITH RECURSIVE tree(node, depth, path) AS (
        SELECT plan, 0, ARRAY[]::int[]
      UNION ALL
        SELECT c.value, tree.depth + 1, tree.path || c.ord::int
          FROM tree, jsonb_array_elements(tree.node->'Plans') WITH ORDINALITY c(value, ord)
    ),
    top AS (
        SELECT node, path FROM tree
         WHERE node->>'Node Type' IN ('Nested Loop', 'Hash Join', 'Merge Join', 'Custom Scan')
         ORDER BY depth, path LIMIT 1
    ),
    pick AS (
        SELECT node, path, true AS is_top FROM top
      UNION ALL
        SELECT * FROM (SELECT node, path, false FROM tree
                        WHERE node->>'Relation Name' = ANY (tables)
                          AND NOT EXISTS (SELECT FROM top)
                        ORDER BY depth, path LIMIT 1) r
    ),
    reader AS (
        SELECT tree.node FROM tree, pick
         WHERE pick.is_top AND tree.path[1:cardinality(pick.path)] = pick.path AND tree.path <> pick.path
           AND tree.node->>'Relation Name' = ANY (tables)
         ORDER BY tree.depth, tree.path LIMIT 1
    ),
    engines AS (
        SELECT string_agg(DISTINCT node->>'Engine', ',') AS e FROM tree WHERE node ? 'Engine'
    )
    SELECT coalesce(
             (SELECT CASE WHEN EXISTS (SELECT FROM tree WHERE node->>'Node Type' IN ('Gather', 'Gather Merge')
                                          AND path = pick.path[1:cardinality(path)] AND path <> pick.path)
                          THEN 'Gather/' ELSE '' END
                     || gijoin.node_name(pick.node)
                     || coalesce('/' || (SELECT gijoin.node_name(node) FROM reader), '')
                FROM pick),
             gijoin.node_name(plan))
           || coalesce(' [' || (SELECT e FROM engines) || ']', '')
$$;

-- The heap fetches a plan reports (EXPLAIN ANALYZE's "Heap Fetches" of index-only
-- scans and gpuidx nodes, workers included), summed; NULL when no node reports them.
CREATE OR REPLACE FUNCTION gijoin.plan_fetches(plan jsonb) RETURNS bigint LANGUAGE sql AS $$
    WITH RECURSIVE tree(node) AS (
        SELECT plan
      UNION ALL
        SELECT c.value FROM tree, jsonb_array_elements(tree.node->'Plans') c(value)
    )
    SELECT sum((node->>'Heap Fetches')::bigint)::bigint FROM tree WHERE node ? 'Heap Fetches'
$$;

-- Time one query q ($1 in it is arr, planned with its value as a one-shot
-- plan is).  EXPLAIN names the plan first; when need is given and the plan
-- (as JSON text) is not LIKE it, the query is not run (note 'not offered').
-- Else one run whose result is kept (it warms the caches and loads the
-- image; all its columns, comma-separated), then reps runs of EXPLAIN
-- (ANALYZE, TIMING OFF): ms is the median "Execution Time" (no planning, no
-- client transfer), plan the last run's "Plan" (engines, heap fetches).  A
-- timeout (statement_timeout) or error goes to note, plan staying EXPLAIN's.
CREATE OR REPLACE FUNCTION gijoin.time_cell(q text, reps int, arr bigint[] DEFAULT NULL, need text DEFAULT NULL,
                                            OUT plan jsonb, OUT ms float8, OUT result text, OUT note text)
LANGUAGE plpgsql AS $$
DECLARE
    p json;
    times float8[] := '{}';
BEGIN
    BEGIN
        EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) ' || q INTO p USING arr;
        plan := p::jsonb->0->'Plan';
        IF need IS NOT NULL AND plan::text NOT LIKE need THEN
            note := 'not offered';
            RETURN;
        END IF;
        EXECUTE format('SELECT nullif(trim(both ''()'' FROM r::text), '''') FROM (%s) r', q) INTO result USING arr;
        FOR i IN 1 .. reps LOOP
            EXECUTE 'EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) ' || q INTO p USING arr;
            times := times || (p::jsonb->0->>'Execution Time')::float8;
        END LOOP;
        plan := p::jsonb->0->'Plan';
    EXCEPTION
        WHEN query_canceled THEN
            note := 'timeout (' || current_setting('statement_timeout') || ')';
            times := '{}';
        WHEN OTHERS THEN
            note := 'error: ' || SQLERRM;
            times := '{}';
    END;
    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) INTO ms FROM unnest(times) x;
END $$;

-- Time one cell: the workload at n probes through method btree (table tb) or
-- gpuidx (table t, engine engine), the planner's own plan, or with forced
-- the other joins disabled so that only GpuIndexJoin is left; the rescan
-- workload is always a nested loop of index rescans (hash and merge joins,
-- memoize and GpuIndexJoin off).  gijoin.time_cell times it.  A forced cell
-- is skipped where the planner's own plan for the engine was GpuIndexJoin
-- already, and recorded as not offered where the forced plan has no
-- GpuIndexJoin.  Returns a line for the log.
CREATE OR REPLACE FUNCTION gijoin.measure(workload text, n int, method text, engine text,
                                          forced bool, reps int, width int)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    q text := gijoin.query(workload, n, CASE method WHEN 'btree' THEN 'tb' ELSE 't' END, width);
    c record;
    node text;
BEGIN
    IF q IS NULL THEN
        RAISE EXCEPTION 'unknown workload %', workload;
    END IF;
    IF method = 'gpuidx' THEN
        PERFORM set_config('gpuidx.engine', engine, true);
    END IF;
    IF workload = 'rescan' THEN
        PERFORM gijoin.set_local(g, 'off')
           FROM unnest(ARRAY['enable_hashjoin', 'enable_mergejoin', 'enable_memoize',
                             'gpuidx.enable_customjoin']) g;
    ELSIF forced THEN
        IF EXISTS (SELECT FROM gijoin.results r
                    WHERE r.workload = measure.workload AND r.probes = n AND r.method = measure.method
                      AND r.engine = measure.engine AND NOT r.forced AND r.plan LIKE '%GpuIndexJoin%') THEN
            RETURN format('%s %s %s %s forced: the planner''s plan already', workload, n, method, engine);
        END IF;
        PERFORM gijoin.set_local(g, 'off')
           FROM unnest(ARRAY['enable_hashjoin', 'enable_mergejoin', 'enable_nestloop']) g;
    END IF;
    SELECT * INTO c FROM gijoin.time_cell(q, reps, NULL,
                                          CASE WHEN forced AND workload <> 'rescan' THEN '%GpuIndexJoin%' END);
    node := gijoin.plan_name(c.plan);
    INSERT INTO gijoin.results (workload, probes, method, engine, forced, plan, ms, result, note)
    VALUES (workload, n, method, engine, forced, node, c.ms, c.result, c.note);
    RETURN format('%s %s %s %s%s: %s ms, %s, result %s%s', workload, n, method, engine,
                  CASE WHEN forced THEN ' forced' ELSE '' END, gijoin.fmt_ms(c.ms),
                  node, coalesce(c.result, '-'), coalesce(' (' || c.note || ')', ''));
END $$;

-- Table cells: ms with 2 decimals ('-' for none); the reference's ms over
-- this cell's ('2.50x': above 1, faster than the reference); and the check
-- of a cell's result against the reference's (or its note: timeout, error).
CREATE OR REPLACE FUNCTION gijoin.fmt_ms(ms float8) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(round(ms::numeric, 2)::text, '-')
$$;

CREATE OR REPLACE FUNCTION gijoin.ratio(ref_ms float8, ms float8) RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN ms > 0 AND ref_ms > 0 THEN round((ref_ms / ms)::numeric, 2) || 'x' ELSE '-' END
$$;

CREATE OR REPLACE FUNCTION gijoin.check_cell(is_ref bool, note text, result text, ref_result text)
RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN note IS NOT NULL THEN note
                WHEN is_ref THEN '(reference)'
                WHEN ref_result IS NULL THEN 'no reference'
                WHEN result IS NOT DISTINCT FROM ref_result THEN 'ok'
                ELSE 'MISMATCH (btree ' || ref_result || ')' END
$$;

-- The results as markdown rows: one per cell, the btree twin's row first in
-- each (workload, probes) group; x btree = btree ms / ms; check compares the
-- result with the btree twin's.
CREATE OR REPLACE FUNCTION gijoin.table_rows() RETURNS SETOF text LANGUAGE sql AS $$
    -- a cell measured in several rounds (BENCH_ROUNDS): the median of its
    -- rounds' ms, their range, and 'varies' if its result changed between them
    WITH cells AS (
        SELECT workload, probes, method, engine, forced, max(plan) AS plan,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS ms,
               min(ms) AS lo, max(ms) AS hi, count(ms) AS rounds,
               CASE WHEN count(DISTINCT result) > 1 THEN 'varies' ELSE min(result) END AS result,
               max(note) AS note
          FROM gijoin.results
         GROUP BY workload, probes, method, engine, forced)
    SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s |',
                  g.workload, g.probes,
                  CASE WHEN g.method = 'btree' THEN 'btree twin'
                       ELSE 'gpuidx ' || g.engine || CASE WHEN g.forced THEN ' forced' ELSE '' END END,
                  g.plan,
                  gijoin.fmt_ms(g.ms) || CASE WHEN g.rounds > 1
                      THEN ' (' || gijoin.fmt_ms(g.lo) || '..' || gijoin.fmt_ms(g.hi) || ')' ELSE '' END,
                  gijoin.ratio(b.ms, g.ms), coalesce(g.result, '-'),
                  gijoin.check_cell(g.method = 'btree', g.note, g.result, b.result))
      FROM cells g
      LEFT JOIN cells b ON b.method = 'btree' AND b.workload = g.workload AND b.probes = g.probes
     ORDER BY array_position(ARRAY['equi', 'equi_v', 'semi', 'range', 'asof', 'asof_v', 'asof_sorted',
                                   'asof_sorted_v', 'rescan'], g.workload),
              g.workload, g.probes, g.method = 'gpuidx', g.forced, g.engine
$$;
