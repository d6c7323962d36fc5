-- bench/sql/include.sql - the harness of the covering-index benchmark
-- (bench/sql/include), run after bench/sql/join.sql, whose schema gijoin it
-- uses (loading, probe tables, timing a cell, naming a plan).  Three tables
-- with the same rows: ti (gpuidx on k INCLUDE (v, w)), tn (gpuidx on k, no
-- INCLUDE) and tb (btree on k INCLUDE (v, w), the twin).  giinc.measure
-- times one cell into giinc.results.  Re-running this file keeps the tables
-- and replaces the functions.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE SCHEMA IF NOT EXISTS giinc;

-- One row per timed cell: a workload at a size (probes, keys, or percent of
-- the table) through a method (btree: the twin tb; gpuidx_inc: ti; gpuidx:
-- tn) with an engine and a setting ('' or 'name=value'); the plan that ran,
-- the median ms, the heap fetches the plan reported, the query's result
-- (checked against the twin's) and a note (timeout, error).
CREATE TABLE IF NOT EXISTS giinc.results (
    workload text, size numeric, method text, engine text, setting text,
    plan text, ms float8, fetches bigint, result text, note text,
    at timestamptz DEFAULT clock_timestamp());
RESET client_min_messages;

-- The table a method reads.
CREATE OR REPLACE FUNCTION giinc.tbl(method text) RETURNS text LANGUAGE sql AS $$
    SELECT CASE method WHEN 'btree' THEN 'tb' WHEN 'gpuidx_inc' THEN 'ti' WHEN 'gpuidx' THEN 'tn' END
$$;

-- The query of a workload over table tbl (nrows rows, keys in [0, 4 nrows)):
--   asof_v    n probes of p_asof_N, bench/sql/join's as-of join returning v;
--   any_v     k = ANY($1), $1 the n keys of p_eq_N, returning v and w;
--   rangesum  sum(v), count(*) over a range of n percent of the key range,
--             centred in it (about n percent of the rows).
CREATE OR REPLACE FUNCTION giinc.query(workload text, n numeric, tbl text, nrows bigint) RETURNS text
LANGUAGE sql AS $$
    SELECT CASE workload
      WHEN 'asof_v' THEN gijoin.query('asof_v', n::int, tbl, 0)
      WHEN 'any_v' THEN format('SELECT sum(v), sum(w) FROM %s WHERE k = ANY($1)', tbl)
      WHEN 'rangesum' THEN format('SELECT sum(v), count(*) FROM %s WHERE k BETWEEN %s AND %s',
                                  tbl, (4 * nrows - width) / 2, (4 * nrows - width) / 2 + width - 1)
    END
      FROM (SELECT greatest(1, round(4 * nrows * n / 100))::bigint AS width) r
$$;

-- The array a workload's $1 is (any_v: the keys of p_eq_N in probe order), or NULL.
CREATE OR REPLACE FUNCTION giinc.arr(workload text, n numeric) RETURNS bigint[] LANGUAGE plpgsql AS $$
DECLARE a bigint[];
BEGIN
    IF workload = 'any_v' THEN
        EXECUTE format('SELECT array_agg(x ORDER BY i) FROM p_eq_%s', n::int) INTO a;
    END IF;
    RETURN a;
END $$;

-- Set up the transaction for a method, engine and setting: gpuidx.engine,
-- and the setting ('name=value', when this server has the parameter).
CREATE OR REPLACE FUNCTION giinc.prepare(method text, engine text, setting text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
    IF method <> 'btree' THEN
        PERFORM set_config('gpuidx.engine', engine, true);
    END IF;
    IF setting <> '' THEN
        PERFORM gijoin.set_local(split_part(setting, '=', 1), split_part(setting, '=', 2));
    END IF;
END $$;

-- Time one cell (gijoin.time_cell: EXPLAIN, a checked warm-up run, the
-- median Execution Time of reps EXPLAIN ANALYZE runs) and store it.
-- Returns a line for the log.
CREATE OR REPLACE FUNCTION giinc.measure(workload text, n numeric, method text, engine text,
                                         setting text, reps int, nrows bigint)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    q text := giinc.query(workload, n, giinc.tbl(method), nrows);
    c record;
    node text;
    fetches bigint;
BEGIN
    IF q IS NULL THEN
        RAISE EXCEPTION 'unknown workload % or method %', workload, method;
    END IF;
    PERFORM giinc.prepare(method, engine, setting);
    SELECT * INTO c FROM gijoin.time_cell(q, reps, giinc.arr(workload, n));
    node := gijoin.plan_name(c.plan, ARRAY['ti', 'tn', 'tb']);
    fetches := gijoin.plan_fetches(c.plan);
    INSERT INTO giinc.results (workload, size, method, engine, setting, plan, ms, fetches, result, note)
    VALUES (workload, n, method, engine, setting, node, c.ms, fetches, c.result, c.note);
    RETURN format('%s %s %s %s%s: %s ms, %s, heap fetches %s, result %s%s', workload, n, method, engine,
                  CASE WHEN setting <> '' THEN ' ' || setting ELSE '' END, gijoin.fmt_ms(c.ms), node,
                  coalesce(fetches::text, '-'), coalesce(c.result, '-'), coalesce(' (' || c.note || ')', ''));
END $$;

-- EXPLAIN (COSTS OFF), or with analyze EXPLAIN (ANALYZE) with per-node
-- timing, of a workload at size n through a method, engine and setting.
CREATE OR REPLACE FUNCTION giinc.explain(workload text, n numeric, method text, engine text,
                                         setting text, nrows bigint, do_analyze bool)
RETURNS SETOF text LANGUAGE plpgsql AS $$
DECLARE
    q text := giinc.query(workload, n, giinc.tbl(method), nrows);
    a bigint[] := giinc.arr(workload, n);
    line text;
BEGIN
    PERFORM giinc.prepare(method, engine, setting);
    IF do_analyze THEN
        EXECUTE q USING a;  -- warm-up: the image is loaded
    END IF;
    FOR line IN EXECUTE CASE WHEN do_analyze THEN 'EXPLAIN (ANALYZE) ' ELSE 'EXPLAIN (COSTS OFF) ' END || q USING a LOOP
        RETURN NEXT line;
    END LOOP;
END $$;

-- The size column: probes, keys, or percent of the table.
CREATE OR REPLACE FUNCTION giinc.size_label(workload text, n numeric) RETURNS text LANGUAGE sql AS $$
    SELECT CASE WHEN workload = 'rangesum' THEN n::text || ' %' ELSE n::bigint::text END
$$;

-- The method column: "btree twin", "gpuidx INCLUDE cpu", "gpuidx no INCLUDE
-- gpu", and a setting after a comma ("customagg=off").
CREATE OR REPLACE FUNCTION giinc.method_label(method text, engine text, setting text) RETURNS text
LANGUAGE sql AS $$
    SELECT CASE method WHEN 'btree' THEN 'btree twin'
                       WHEN 'duckdb' THEN 'DuckDB ' || engine
                       WHEN 'gpuidx_inc' THEN 'gpuidx INCLUDE ' || engine
                       ELSE 'gpuidx no INCLUDE ' || engine END
           || CASE WHEN setting <> '' THEN ', ' || regexp_replace(setting, '^gpuidx\.(enable_)?', '') ELSE '' END
$$;

-- The results as markdown rows, the btree twin's row first in each
-- (workload, size) group; x btree = twin ms / ms; check compares the result
-- with the twin's.  A cell measured in several rounds (BENCH_ROUNDS) shows
-- the median of its rounds' medians, then each round's in the order run; a
-- result that differed between rounds shows as VARIES.
CREATE OR REPLACE FUNCTION giinc.table_rows() RETURNS SETOF text LANGUAGE sql AS $$
    WITH cells AS (
        SELECT workload, size, method, engine, setting, min(plan) AS plan,
               percentile_cont(0.5) WITHIN GROUP (ORDER BY ms) AS ms,
               CASE WHEN count(ms) > 1
                    THEN ' (rounds: ' || string_agg(gijoin.fmt_ms(ms), ', ' ORDER BY at) || ')' ELSE '' END AS rounds,
               max(fetches) AS fetches,
               CASE WHEN count(DISTINCT coalesce(result, '')) > 1 THEN 'VARIES' ELSE max(result) END AS result,
               string_agg(DISTINCT note, '; ') AS note
          FROM giinc.results
         GROUP BY workload, size, method, engine, setting)
    SELECT format('| %s | %s | %s | %s | %s%s | %s | %s | %s | %s |',
                  g.workload, giinc.size_label(g.workload, g.size),
                  giinc.method_label(g.method, g.engine, g.setting), g.plan,
                  gijoin.fmt_ms(g.ms), g.rounds, gijoin.ratio(b.ms, g.ms), coalesce(g.fetches::text, '-'),
                  coalesce(g.result, '-'), gijoin.check_cell(g.method = 'btree', g.note, g.result, b.result))
      FROM cells g
      LEFT JOIN cells b ON b.method = 'btree' AND b.workload = g.workload AND b.size = g.size
     ORDER BY array_position(ARRAY['asof_v', 'any_v', 'rangesum'], g.workload), g.size,
              array_position(ARRAY['btree', 'gpuidx_inc', 'gpuidx', 'duckdb'], g.method), g.engine,
              g.setting LIKE '%=off', g.setting
$$;

-- The index sizes as markdown rows: each index, its definition, its size,
-- bytes a row of the table, and its size over the btree twin's (tb_k).
CREATE OR REPLACE FUNCTION giinc.size_rows() RETURNS SETOF text LANGUAGE sql AS $$
    SELECT format('| %s | %s | %s | %s | %s | %s |',
                  i.name, regexp_replace(pg_get_indexdef(i.name::regclass), '^.* USING ', ''),
                  pg_relation_size(i.name::regclass), pg_size_pretty(pg_relation_size(i.name::regclass)),
                  round(pg_relation_size(i.name::regclass)::numeric / greatest(c.reltuples, 1)::numeric, 1),
                  round(pg_relation_size(i.name::regclass)::numeric
                        / nullif(pg_relation_size(to_regclass('tb_k')), 0), 3) || 'x')
      FROM unnest(ARRAY['tb_k', 'ti_k', 'tn_k']) WITH ORDINALITY i(name, ord)
      JOIN pg_index x ON x.indexrelid = i.name::regclass
      JOIN pg_class c ON c.oid = x.indrelid
     ORDER BY i.ord
$$;
