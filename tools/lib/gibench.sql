-- tools/lib/gibench.sql - benchmark harness shared by tools/demo and bench/sql/run.
-- Needs psql variables: rows (table size).  Creates schema gibench with:
--   gibench.load(rows)              tables t_bt (btree on k) and t_gi (gpuidx on k)
--   gibench.make_probes(n)          one probe set of n keys (point, pred, range)
--   gibench.time_query(q, a, b, r)  warm-up, then median ms of r runs, and row count
--   gibench.measure(...)            time one workload/method/engine into gibench.results
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuidx;
DROP SCHEMA IF EXISTS gibench CASCADE;
CREATE SCHEMA gibench;
RESET client_min_messages;

CREATE TABLE gibench.results (
    workload text, batch int, method text, engine text, ms float8, nrows bigint,
    at timestamptz DEFAULT clock_timestamp(), plan text);
CREATE TABLE gibench.probes (n int PRIMARY KEY, pts bigint[], preds bigint[], lo bigint[], hi bigint[]);
CREATE TABLE gibench.info (what text, value text);

-- Load rows keys: k = 8 * floor(random() * rows/2), so about 2.3 rows per
-- distinct key and gaps between keys; the same data in t_bt and t_gi.
CREATE FUNCTION gibench.load(nrows bigint) RETURNS void LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz;
BEGIN
    DROP TABLE IF EXISTS public.t_bt, public.t_gi;
    PERFORM setseed(0.25);
    t0 := clock_timestamp();
    CREATE TABLE public.t_bt (k int8 NOT NULL, v int4 NOT NULL);
    INSERT INTO public.t_bt SELECT (8 * floor(random() * (nrows / 2)))::int8, i
      FROM generate_series(1, nrows) i;
    CREATE TABLE public.t_gi AS TABLE public.t_bt;
    INSERT INTO gibench.info VALUES ('load ms', round(extract(epoch FROM clock_timestamp() - t0) * 1000)::text);
    t0 := clock_timestamp();
    CREATE INDEX t_bt_k ON public.t_bt USING btree (k);
    INSERT INTO gibench.info VALUES ('btree build ms', round(extract(epoch FROM clock_timestamp() - t0) * 1000)::text);
    t0 := clock_timestamp();
    CREATE INDEX t_gi_k ON public.t_gi USING gpuidx (k);
    INSERT INTO gibench.info VALUES ('gpuidx build ms', round(extract(epoch FROM clock_timestamp() - t0) * 1000)::text);
END $$;

-- One slice [lo, hi] of the row numbers of a big table, for loading it from
-- several sessions at once: the key of row i comes from a hash of i, so both
-- tables get the same data whichever session writes which slice.  Same shape
-- as gibench.load: k = 8 * (a uniform pick of nrows / 2 slots).
CREATE FUNCTION gibench.load_slice(tbl regclass, nrows bigint, lo bigint, hi bigint)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('INSERT INTO %s SELECT 8 * ((hashint8extended(i, 25) & %s) %% %s), i
                      FROM generate_series(%s, %s) i',
                   tbl, 9223372036854775807, nrows / 2, lo, hi);
END $$;

-- Record how long a step of a parallel load took (seconds since t0).
CREATE FUNCTION gibench.note_ms(what text, t0 timestamptz) RETURNS void LANGUAGE sql AS $$
    INSERT INTO gibench.info VALUES (what, round(extract(epoch FROM clock_timestamp() - t0) * 1000)::text)
$$;

-- Probe set of n keys: pts hit a stored key slot (~86% present), preds are any
-- value in the key range, ranges [lo, lo + 127] cover about 16 key slots.
CREATE FUNCTION gibench.make_probes(n int, nrows bigint) RETURNS void LANGUAGE sql AS $$
    INSERT INTO gibench.probes
    SELECT n,
           array_agg((8 * floor(random() * (nrows / 2)))::int8),
           array_agg(floor(random() * (4 * nrows))::int8),
           array_agg(q),
           array_agg(q + 127)
      FROM (SELECT floor(random() * (4 * nrows))::int8 AS q FROM generate_series(1, n)) s
$$;

-- The scan node the plan of q (parameters $1, $2) reads the table with.
CREATE FUNCTION gibench.scan_node(q text, a bigint[], b bigint[]) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q USING a, b LOOP
        IF line ~ '(Scan|Function)' THEN
            RETURN regexp_replace(regexp_replace(line, '^[ ->]*', ''), ' on .*$', '');
        END IF;
    END LOOP;
    RETURN NULL;
END $$;

-- Run q (parameters $1, $2: bigint[]) once to warm up, then reps times; the
-- median wall time in ms (server side) and the count it returned.
CREATE FUNCTION gibench.time_query(q text, a bigint[], b bigint[], reps int,
                                   OUT ms float8, OUT nrows bigint)
LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; times float8[] := '{}'; c bigint;
BEGIN
    EXECUTE q INTO nrows USING a, b;
    FOR i IN 1 .. reps LOOP
        t0 := clock_timestamp();
        EXECUTE q INTO c USING a, b;
        times := times || (extract(epoch FROM clock_timestamp() - t0) * 1000)::float8;
        IF c IS DISTINCT FROM nrows THEN
            RAISE EXCEPTION 'count changed between runs: % then % (%)', nrows, c, q;
        END IF;
    END LOOP;
    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) INTO ms FROM unnest(times) x;
END $$;

-- The query text for a workload through a method (btree | gpuidx).
CREATE FUNCTION gibench.query(workload text, method text) RETURNS text LANGUAGE sql AS $$
    SELECT CASE workload || '/' || method
      WHEN 'point/btree'    THEN 'SELECT count(v) FROM t_bt WHERE k = ANY($1)'
      WHEN 'any/btree'      THEN 'SELECT count(v) FROM t_bt WHERE k = ANY($1)'
      WHEN 'any/gpuidx'     THEN 'SELECT count(v) FROM t_gi WHERE k = ANY($1)'
      WHEN 'anyscan/gpuidx' THEN 'SELECT count(v) FROM t_gi WHERE k = ANY($1)'
      WHEN 'lookup/btree'   THEN 'SELECT count(v) FROM t_bt WHERE k = ANY($1)'
      WHEN 'lookup/gpuidx'  THEN 'SELECT count(*) FROM gpuidx_lookup(''t_gi_k''::regclass, $1)'
      WHEN 'pred/btree'     THEN 'SELECT count(x.k) FROM unnest($1) p, LATERAL (SELECT k FROM t_bt WHERE k <= p ORDER BY k DESC LIMIT 1) x'
      WHEN 'pred/gpuidx'    THEN 'SELECT count(*) FROM gpuidx_predecessor(''t_gi_k''::regclass, $1)'
      WHEN 'rcount/btree'   THEN 'SELECT sum(x.c)::bigint FROM unnest($1, $2) r(lo, hi), LATERAL (SELECT count(*) AS c FROM t_bt WHERE k BETWEEN r.lo AND r.hi) x'
      WHEN 'rcount/gpuidx'  THEN 'SELECT sum(c)::bigint FROM unnest(gpuidx_range_count(''t_gi_k''::regclass, $1, $2)) c'
    END
$$;

-- Leave GpuIndexScan the only path for the rest of the transaction.
CREATE FUNCTION gibench.force_gpuscan() RETURNS void LANGUAGE sql AS $$
    -- count() so that every row is evaluated (a SQL function stops at the first)
    SELECT count(set_config(g, 'off', true))
      FROM unnest(ARRAY['enable_bitmapscan', 'enable_indexscan', 'enable_indexonlyscan',
                        'enable_seqscan']) g
$$;

-- Time one workload at one batch size through one method and engine; store and return it.
CREATE FUNCTION gibench.measure(workload text, batch int, method text, engine text, reps int,
                                OUT ms float8, OUT nrows bigint)
LANGUAGE plpgsql AS $$
DECLARE a bigint[]; b bigint[]; q text := gibench.query(workload, method);
BEGIN
    IF q IS NULL THEN RAISE EXCEPTION 'unknown workload %/%', workload, method; END IF;
    SELECT CASE workload WHEN 'pred' THEN p.preds WHEN 'rcount' THEN p.lo ELSE p.pts END, p.hi
      INTO a, b FROM gibench.probes p WHERE p.n = batch;
    IF a IS NULL THEN RAISE EXCEPTION 'no probe set of size %', batch; END IF;
    IF method = 'gpuidx' THEN
        PERFORM set_config('gpuidx.engine', engine, false);
    END IF;
    IF workload = 'anyscan' THEN
        PERFORM gibench.force_gpuscan();
    END IF;
    SELECT t.ms, t.nrows INTO ms, nrows FROM gibench.time_query(q, a, b, reps) t;
    INSERT INTO gibench.results VALUES (workload, batch, method, engine, ms, nrows, DEFAULT,
                                        gibench.scan_node(q, a, b));
END $$;

-- The plan's first lines for a workload (to show which index answers).
CREATE FUNCTION gibench.plan(workload text, method text, batch int) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE a bigint[]; b bigint[]; line text;
BEGIN
    SELECT CASE workload WHEN 'pred' THEN p.preds WHEN 'rcount' THEN p.lo ELSE p.pts END, p.hi
      INTO a, b FROM gibench.probes p WHERE p.n = batch;
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || gibench.query(workload, method) USING a, b LOOP
        RETURN NEXT line;
    END LOOP;
END $$;

-- Multi-range OR: nranges disjoint ranges over the key domain [0, 4*nrows)
-- covering sel_pct percent of it, as one WHERE k BETWEEN .. OR .. clause.
CREATE FUNCTION gibench.or_query(tbl text, sel_pct numeric, nranges int, nrows bigint)
RETURNS text LANGUAGE sql AS $$
    SELECT format('SELECT count(v) FROM %s WHERE ', tbl) ||
           string_agg(format('k BETWEEN %s AND %s', lo, lo + width - 1), ' OR ' ORDER BY i)
      FROM (SELECT i,
                   (i * (4 * nrows / nranges))::bigint AS lo,
                   greatest(1, (4 * nrows * sel_pct / 100 / nranges)::bigint) AS width
              FROM generate_series(0, nranges - 1) i) r
$$;

-- Time the multi-range OR through btree (the planner's choice: bitmap scans),
-- through gpuidx with an engine (the planner's choice among the gpuidx
-- paths), or through GpuIndexScan forced (method gpuscan: the other paths
-- disabled for the call).
CREATE FUNCTION gibench.measure_or(sel_pct numeric, nranges int, method text, engine text,
                                   reps int, nrows bigint, OUT ms float8, OUT nrows_out bigint)
LANGUAGE plpgsql AS $$
DECLARE q text := gibench.or_query(CASE method WHEN 'btree' THEN 't_bt' ELSE 't_gi' END,
                                   sel_pct, nranges, nrows);
BEGIN
    IF method <> 'btree' THEN
        PERFORM set_config('gpuidx.engine', engine, true);
    END IF;
    IF method = 'gpuscan' THEN
        PERFORM gibench.force_gpuscan();
    END IF;
    SELECT t.ms, t.nrows INTO ms, nrows_out FROM gibench.time_query(q, NULL, NULL, reps) t;
    INSERT INTO gibench.results VALUES ('or' || sel_pct || '%x' || nranges, nranges, method, engine,
                                        ms, nrows_out, DEFAULT, gibench.scan_node(q, NULL, NULL));
END $$;

-- EXPLAIN (COSTS OFF) lines of a query text.
CREATE FUNCTION gibench.explain_lines(q text) RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE line text;
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
        RETURN NEXT line;
    END LOOP;
END $$;
