-- bench/sql/service.sql - the harness of the service-mode benchmark
-- (bench/sql/service), run after bench/sql/join.sql, whose schema gijoin it
-- uses (loading t and tb, the as-of probe tables, naming a plan).  t has a
-- gpuidx index on k, tb (the twin) a btree index on k, the same rows.
-- svc_arrays holds the probe arrays of the batch workload.  pgbench runs the
-- cells (the shell script parses its output and logs); the tables here keep
-- what it measured across the restart between the modes.  Re-running this
-- file keeps the tables and replaces the functions.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS gisvc;

-- One row per pgbench cell: a workload at a number of clients in a setup
-- (btree: the twin tb; backend: t, images per backend; service: t, images
-- in the gpuidx service) with an engine.  tps and lat_ms are pgbench's own
-- (the whole run, each client's first transaction included); the steady_*
-- columns leave out what ran before every client had finished its first
-- transaction (in per-backend mode, the image loads); first_ms is the
-- slowest first transaction of a client.  gpu_*: nvidia-smi's peak during
-- the run (MiB used on the device, processes with a context, the largest
-- process's MiB); NULL without nvidia-smi.
CREATE TABLE IF NOT EXISTS gisvc.results (
    workload text, clients int, setup text, engine text, plan text,
    tps float8, lat_ms float8, steady_tps float8, steady_lat_ms float8, steady_s float8,
    first_ms float8, xacts bigint, failed bigint, aborted int,
    gpu_peak_mib float8, gpu_procs int, gpu_proc_max_mib float8,
    note text, at timestamptz DEFAULT clock_timestamp());

-- The result of each workload's check queries in each setup (compared with btree's).
CREATE TABLE IF NOT EXISTS gisvc.checks (setup text, engine text, workload text, result text);

-- A fresh connection's first batch and its second one, ms, per connection.
CREATE TABLE IF NOT EXISTS gisvc.fresh (setup text, engine text, first_ms float8[], second_ms float8[], note text);

-- The image of t_k after the check queries: gpuidx_info as the checking
-- backend saw it, and in service mode the service's images of t_k summed.
CREATE TABLE IF NOT EXISTS gisvc.images (setup text, engine text, info jsonb, service jsonb);

-- Device memory (MiB) before the cluster started, and other one-off readings.
CREATE TABLE IF NOT EXISTS gisvc.readings (what text, value float8);
RESET client_min_messages;

-- The probe arrays of the batch workload: narr arrays of batch keys each,
-- drawn as bench/sql/join's equi probes are (80 % on a key slot, of which
-- 86 % hold a key, 20 % never a key: about 69 % hits), fixed seed.
CREATE OR REPLACE FUNCTION gisvc.make_arrays(narr int, batch int, nrows bigint) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM set_config('client_min_messages', 'warning', true);
    DROP TABLE IF EXISTS public.svc_arrays;
    PERFORM setseed(0.125);
    CREATE TABLE public.svc_arrays (id int PRIMARY KEY, a int8[] NOT NULL);
    INSERT INTO public.svc_arrays
    SELECT id, array_agg(CASE WHEN random() < 0.2 THEN 3 ELSE 0 END + 8 * floor(random() * (nrows / 2))::int8)
      FROM generate_series(1, narr) id, generate_series(1, batch) g
     GROUP BY id;
    ANALYZE public.svc_arrays;
END $$;

-- The query of a workload over table tbl (t or tb), with the parameters
-- pgbench binds: batch ($1 the array's id): count the rows whose key is one
-- of the array's; lookup ($1 the same): gpuidx_lookup of the array over t's
-- index (a row per probe and match), over tb the join of the array's
-- elements with tb that counts the same; asof ($1 the first probe number,
-- $2 the last): the as-of join of that slice of p_asof_N (N = asof_rows).
CREATE OR REPLACE FUNCTION gisvc.query(workload text, tbl text, asof_rows int) RETURNS text
LANGUAGE sql AS $$
    SELECT CASE workload
      WHEN 'batch' THEN format('SELECT count(*) FROM %s WHERE k = ANY((SELECT a FROM svc_arrays WHERE id = $1)::int8[])', tbl)
      WHEN 'lookup' THEN CASE WHEN tbl = 'tb'
          THEN 'SELECT count(*) FROM unnest((SELECT a FROM svc_arrays WHERE id = $1)) p(x) JOIN tb ON tb.k = p.x'
          ELSE format('SELECT count(*) FROM gpuidx_lookup(%L, (SELECT a FROM svc_arrays WHERE id = $1))', tbl || '_k') END
      WHEN 'asof' THEN format('SELECT count(s.k) FROM p_asof_%s p CROSS JOIN LATERAL '
                              '(SELECT t.k FROM %s t WHERE t.k <= p.x ORDER BY t.k DESC LIMIT 1) s '
                              'WHERE p.i BETWEEN $1 AND $2', asof_rows, tbl)
    END
$$;

-- The plan a prepared statement of the workload gets: its custom plan's
-- name (gijoin.plan_name) for the parameters p1 (and p2 for asof), and the generic plan's
-- after it when that differs (pgbench -M prepared may switch to it after
-- five executions).
CREATE OR REPLACE FUNCTION gisvc.plan(workload text, tbl text, asof_rows int, p1 int, p2 int) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    q text := gisvc.query(workload, tbl, asof_rows);
    args text := CASE workload WHEN 'asof' THEN format('(%s, %s)', p1, p2) ELSE format('(%s)', p1) END;
    p json;
    custom text;
    generic text;
BEGIN
    IF EXISTS (SELECT FROM pg_prepared_statements WHERE name = 'gisvc_q') THEN
        EXECUTE 'DEALLOCATE gisvc_q';
    END IF;
    EXECUTE format('PREPARE gisvc_q(%s) AS %s', CASE workload WHEN 'asof' THEN 'int, int' ELSE 'int' END, q);
    PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
    EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) EXECUTE gisvc_q' || args INTO p;
    custom := gijoin.plan_name(p::jsonb->0->'Plan');
    IF p::text LIKE '%"Function Name": "gpuidx_lookup"%' THEN
        custom := custom || '/Function Scan (gpuidx_lookup)';
    END IF;
    PERFORM set_config('plan_cache_mode', 'force_generic_plan', true);
    EXECUTE 'EXPLAIN (COSTS OFF, FORMAT JSON) EXECUTE gisvc_q' || args INTO p;
    generic := gijoin.plan_name(p::jsonb->0->'Plan');
    IF p::text LIKE '%"Function Name": "gpuidx_lookup"%' THEN
        generic := generic || '/Function Scan (gpuidx_lookup)';
    END IF;
    PERFORM set_config('plan_cache_mode', 'auto', true);
    EXECUTE 'DEALLOCATE gisvc_q';
    RETURN custom || CASE WHEN generic <> custom THEN ' (generic: ' || generic || ')' ELSE '' END;
END $$;

-- EXPLAIN (ANALYZE) of a workload's prepared statement over tbl with the
-- parameters p1 (and p2 for asof), its custom plan, run twice in this
-- session and the second shown: where the time of a warm batch goes (for
-- the log).
CREATE OR REPLACE FUNCTION gisvc.explain(workload text, tbl text, asof_rows int, p1 int, p2 int)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    q text := gisvc.query(workload, tbl, asof_rows);
    args text := CASE workload WHEN 'asof' THEN format('(%s, %s)', p1, p2) ELSE format('(%s)', p1) END;
    line text;
BEGIN
    IF EXISTS (SELECT FROM pg_prepared_statements WHERE name = 'gisvc_q') THEN
        EXECUTE 'DEALLOCATE gisvc_q';
    END IF;
    EXECUTE format('PREPARE gisvc_q(%s) AS %s', CASE workload WHEN 'asof' THEN 'int, int' ELSE 'int' END, q);
    PERFORM set_config('plan_cache_mode', 'force_custom_plan', true);
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE) EXECUTE gisvc_q' || args LOOP
        NULL;
    END LOOP;
    FOR line IN EXECUTE 'EXPLAIN (ANALYZE) EXECUTE gisvc_q' || args LOOP
        RETURN NEXT line;
    END LOOP;
    PERFORM set_config('plan_cache_mode', 'auto', true);
    EXECUTE 'DEALLOCATE gisvc_q';
END $$;

-- The check of a workload over tbl: the results of fixed parameter sets,
-- added up (batch, lookup: every array; asof: 8 slices of amax probes spread over
-- p_asof_N), as text.  The same queries warm the setup up (in service mode,
-- the service then holds the image).
CREATE OR REPLACE FUNCTION gisvc.check(workload text, tbl text, narr int, asof_rows int, amax int) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
    q text := gisvc.query(workload, tbl, asof_rows);
    total numeric := 0;
    n bigint;
    lo int;
BEGIN
    IF workload IN ('batch', 'lookup') THEN
        FOR i IN 1 .. narr LOOP
            EXECUTE q INTO n USING i;
            total := total + n;
        END LOOP;
    ELSE
        FOR j IN 0 .. 7 LOOP
            lo := 1 + j * greatest(0, (asof_rows - amax) / 7);
            EXECUTE q INTO n USING lo, lo + amax - 1;
            total := total + n;
        END LOOP;
    END IF;
    RETURN total::text;
END $$;

-- The image of index idx as this backend sees it (gpuidx_info) and, in
-- service mode, the service's current images of it in this database summed
-- (bytes in shared memory, the engine images' host and device bytes).
CREATE OR REPLACE FUNCTION gisvc.record_image(setup text, engine text, idx regclass) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    svc jsonb;
BEGIN
    IF setup = 'service' THEN
        SELECT jsonb_build_object('images', count(*), 'shared_bytes', coalesce(sum(s.shared_bytes), 0),
                                  'engine_host_bytes', coalesce(sum(s.engine_host_bytes), 0),
                                  'engine_device_bytes', coalesce(sum(s.engine_device_bytes), 0),
                                  'engines', string_agg(DISTINCT s.engines, ','))
          INTO svc
          FROM gpuidx_service_images() s
         WHERE s.index_oid = idx AND s.is_current
           AND s.database_oid = (SELECT oid FROM pg_database WHERE datname = current_database());
    END IF;
    INSERT INTO gisvc.images VALUES (setup, engine, gpuidx_info(idx), svc);
END $$;

-- Formatting: a number with d decimals, '-' for none; a ratio a/b as '1.23x'.
CREATE OR REPLACE FUNCTION gisvc.fmt(x float8, d int DEFAULT 1) RETURNS text LANGUAGE sql AS $$
    SELECT coalesce(round(x::numeric, d)::text, '-')
$$;

CREATE OR REPLACE FUNCTION gisvc.ratio(a float8, b float8) RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN a > 0 AND b > 0 THEN round((a / b)::numeric, 2) || 'x' ELSE '-' END
$$;

-- The median of an array of ms.
CREATE OR REPLACE FUNCTION gisvc.median(xs float8[]) RETURNS float8 LANGUAGE sql AS $$
    SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY x) FROM unnest(xs) x
$$;

-- A setup's name in the tables.
CREATE OR REPLACE FUNCTION gisvc.setup_name(setup text, engine text) RETURNS text LANGUAGE sql AS $$
    SELECT CASE setup WHEN 'btree' THEN 'btree twin'
                      WHEN 'backend' THEN 'per-backend ' || engine
                      ELSE 'service ' || engine END
$$;

-- The order of the setups in the tables.
CREATE OR REPLACE FUNCTION gisvc.setup_rank(setup text) RETURNS int LANGUAGE sql AS $$
    SELECT array_position(ARRAY['btree', 'backend', 'service'], setup)
$$;

-- The check column of a setup's workload: ok when its check result equals
-- the btree twin's.
CREATE OR REPLACE FUNCTION gisvc.check_text(setup text, engine text, workload text) RETURNS text
LANGUAGE sql AS $$
    SELECT CASE WHEN c.result IS NULL THEN '-'
                WHEN check_text.setup = 'btree' THEN '(reference)'
                WHEN b.result IS NULL THEN 'no reference'
                WHEN c.result = b.result THEN 'ok'
                ELSE 'MISMATCH (' || c.result || ', btree ' || b.result || ')' END
      FROM (SELECT 1) one
      LEFT JOIN gisvc.checks c ON c.setup = check_text.setup AND c.engine = check_text.engine
                               AND c.workload = check_text.workload
      LEFT JOIN gisvc.checks b ON b.setup = 'btree' AND b.workload = check_text.workload
$$;

-- The cells as markdown rows.
CREATE OR REPLACE FUNCTION gisvc.table_rows() RETURNS SETOF text LANGUAGE sql AS $$
    SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |',
                  r.workload, r.clients, gisvc.setup_name(r.setup, r.engine), coalesce(r.plan, '-'),
                  gisvc.fmt(r.tps), gisvc.fmt(r.lat_ms, 2), gisvc.fmt(r.steady_tps), gisvc.fmt(r.steady_lat_ms, 2),
                  gisvc.fmt(r.first_ms, 1), coalesce(r.xacts::text, '-'),
                  coalesce(r.gpu_peak_mib::bigint::text || ' / ' || r.gpu_procs || ' / ' || r.gpu_proc_max_mib::bigint, '-'),
                  gisvc.check_text(r.setup, r.engine, r.workload),
                  coalesce(r.note, ''))
      FROM gisvc.results r
     ORDER BY array_position(ARRAY['batch', 'lookup', 'asof'], r.workload), r.clients, gisvc.setup_rank(r.setup), r.engine
$$;

-- Per workload, clients and engine: tps of the three setups and their ratios.
CREATE OR REPLACE FUNCTION gisvc.ratio_rows() RETURNS SETOF text LANGUAGE sql AS $$
    WITH k AS (SELECT DISTINCT workload, clients, engine FROM gisvc.results WHERE setup <> 'btree')
    SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |',
                  k.workload, k.clients, k.engine, gisvc.fmt(b.tps), gisvc.fmt(p.tps), gisvc.fmt(s.tps),
                  gisvc.ratio(s.tps, p.tps), gisvc.ratio(s.steady_tps, p.steady_tps),
                  gisvc.ratio(p.tps, b.tps), gisvc.ratio(s.tps, b.tps),
                  gisvc.ratio(s.steady_lat_ms, p.steady_lat_ms))
      FROM k
      LEFT JOIN gisvc.results b ON b.setup = 'btree' AND b.workload = k.workload AND b.clients = k.clients
      LEFT JOIN gisvc.results p ON p.setup = 'backend' AND p.engine = k.engine
                                AND p.workload = k.workload AND p.clients = k.clients
      LEFT JOIN gisvc.results s ON s.setup = 'service' AND s.engine = k.engine
                                AND s.workload = k.workload AND s.clients = k.clients
     ORDER BY array_position(ARRAY['batch', 'lookup', 'asof'], k.workload), k.clients, k.engine
$$;

-- A fresh connection's batches per setup: medians and range of the first
-- batch, median of the second.
CREATE OR REPLACE FUNCTION gisvc.fresh_rows() RETURNS SETOF text LANGUAGE sql AS $$
    SELECT format('| %s | %s | %s | %s..%s | %s | %s |',
                  gisvc.setup_name(f.setup, f.engine), cardinality(f.first_ms),
                  gisvc.fmt(gisvc.median(f.first_ms), 2),
                  gisvc.fmt((SELECT min(x) FROM unnest(f.first_ms) x), 2),
                  gisvc.fmt((SELECT max(x) FROM unnest(f.first_ms) x), 2),
                  gisvc.fmt(gisvc.median(f.second_ms), 2), coalesce(f.note, ''))
      FROM gisvc.fresh f
     ORDER BY gisvc.setup_rank(f.setup), f.engine
$$;

-- Device memory per gpuidx setup: the image's bytes (per backend: one
-- backend's; service: the service's), nvidia-smi's peak during the runs at
-- the most clients against the reading before the cluster started, and
-- whether peak - idle stays within the device image + 1 GiB.
CREATE OR REPLACE FUNCTION gisvc.memory_rows(max_clients int) RETURNS SETOF text LANGUAGE sql AS $$
    WITH idle AS (SELECT value FROM gisvc.readings WHERE what = 'gpu idle mib'),
    img AS (
        SELECT i.setup, i.engine,
               CASE WHEN i.setup = 'service' THEN (i.service->>'shared_bytes')::float8 END AS shared_bytes,
               CASE WHEN i.setup = 'service' THEN (i.service->>'engine_host_bytes')::float8
                    ELSE (i.info->>'host_bytes')::float8 END AS host_bytes,
               CASE WHEN i.setup = 'service' THEN (i.service->>'engine_device_bytes')::float8
                    ELSE (i.info->>'device_bytes')::float8 END AS device_bytes,
               i.info->>'engine' AS answered_by
          FROM gisvc.images i
    ),
    peak AS (
        SELECT setup, engine, max(gpu_peak_mib) AS mib, max(gpu_procs) AS procs, max(gpu_proc_max_mib) AS proc_mib
          FROM gisvc.results WHERE clients = max_clients GROUP BY setup, engine
    )
    SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |',
                  gisvc.setup_name(img.setup, img.engine), coalesce(img.answered_by, '-'),
                  coalesce(img.shared_bytes::bigint::text, '-'), coalesce(img.host_bytes::bigint::text, '-'),
                  coalesce(img.device_bytes::bigint::text, '-'),
                  coalesce((SELECT value FROM idle)::bigint::text, '-'),
                  coalesce(peak.mib::bigint::text || ' (' || peak.procs || ' procs, largest '
                           || peak.proc_mib::bigint || ')', '-'),
                  coalesce((peak.mib - (SELECT value FROM idle))::bigint::text, '-'),
                  coalesce(round(img.device_bytes / 1048576 + 1024)::text, '-'),
                  CASE WHEN peak.mib IS NULL OR (SELECT value FROM idle) IS NULL THEN '-'
                       WHEN peak.mib - (SELECT value FROM idle) <= img.device_bytes / 1048576 + 1024 THEN 'yes'
                       ELSE 'no' END)
      FROM img
      LEFT JOIN peak ON peak.setup = img.setup AND peak.engine = img.engine
     ORDER BY gisvc.setup_rank(img.setup), img.engine
$$;

-- The issue's targets per engine and workload, from the cells: service tps
-- at 8 (whole run, and steady: without the per-backend clients' image
-- loads) and at max_clients over per-backend tps at 8 (target: at least 1),
-- one client's mean latency in service mode over per-backend mode (steady
-- and whole run; target: at most 1.2), and the service's fresh-connection
-- first batch (target at 10^8 rows: at most 10 ms).
CREATE OR REPLACE FUNCTION gisvc.target_rows(max_clients int) RETURNS SETOF text LANGUAGE sql AS $$
    WITH k AS (SELECT DISTINCT workload, engine FROM gisvc.results WHERE setup = 'service'),
    cell AS (SELECT * FROM gisvc.results WHERE setup IN ('backend', 'service'))
    SELECT format('| %s | %s | %s | %s | %s | %s | %s | %s |',
                  k.workload, k.engine,
                  gisvc.ratio(s8.tps, p8.tps), gisvc.ratio(s8.steady_tps, p8.steady_tps),
                  gisvc.ratio(sm.tps, p8.tps),
                  gisvc.ratio(s1.steady_lat_ms, p1.steady_lat_ms), gisvc.ratio(s1.lat_ms, p1.lat_ms),
                  coalesce((SELECT gisvc.fmt(gisvc.median(f.first_ms), 2) FROM gisvc.fresh f
                             WHERE f.setup = 'service' AND f.engine = k.engine), '-'))
      FROM k
      LEFT JOIN cell p8 ON p8.setup = 'backend' AND p8.engine = k.engine AND p8.workload = k.workload AND p8.clients = 8
      LEFT JOIN cell s8 ON s8.setup = 'service' AND s8.engine = k.engine AND s8.workload = k.workload AND s8.clients = 8
      LEFT JOIN cell sm ON sm.setup = 'service' AND sm.engine = k.engine AND sm.workload = k.workload
                       AND sm.clients = max_clients
      LEFT JOIN cell p1 ON p1.setup = 'backend' AND p1.engine = k.engine AND p1.workload = k.workload AND p1.clients = 1
      LEFT JOIN cell s1 ON s1.setup = 'service' AND s1.engine = k.engine AND s1.workload = k.workload AND s1.clients = 1
     ORDER BY array_position(ARRAY['batch', 'lookup', 'asof'], k.workload), k.engine
$$;
