--
-- 31_include: INCLUDE columns.  The index carries every accepted type's
-- values and NULLs beside each key; index-only scans return them without a
-- heap visit on all-visible pages.  A btree twin with the same INCLUDE gets
-- every write too; their answers are compared with EXCEPT ALL both ways
-- after inserts (with folds), updates of only an included column,
-- rollbacks, deletes and VACUUM.
--
\set schema gi_include
\i sql/include/setup.sql
SET max_parallel_workers_per_gather = 0;
SET timezone = 'UTC';

-- Types gpuidx cannot include: an error naming the column and its type.
CREATE TABLE bad (k int4, t text, n numeric, v varchar(10), i int4);
\set VERBOSITY default
CREATE INDEX ON bad USING gpuidx (k) INCLUDE (i, t);
CREATE INDEX ON bad USING gpuidx (k) INCLUDE (n);
\set VERBOSITY terse
-- The SQLSTATE is feature_not_supported.
DO $$
BEGIN
  CREATE INDEX ON bad USING gpuidx (k) INCLUDE (v);
EXCEPTION WHEN feature_not_supported THEN
  RAISE NOTICE 'feature_not_supported: %', SQLERRM;
END $$;
-- The key column's rules are unchanged.
CREATE INDEX ON bad USING gpuidx (t) INCLUDE (i);
CREATE INDEX ON bad USING gpuidx (k, i);
DROP TABLE bad;

-- One column of every accepted type.  d has the gpuidx index, db the btree.
CREATE TABLE d (id serial, k int8, c_i2 int2, c_i4 int4, c_i8 int8,
                c_f4 float4, c_f8 float8, c_d date, c_ts timestamp,
                c_tz timestamptz, c_b bool, c_o oid)
  WITH (autovacuum_enabled = off);
CREATE TABLE db (LIKE d) WITH (autovacuum_enabled = off);
CREATE INDEX d_gi ON d USING gpuidx (k)
  INCLUDE (c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o);
CREATE INDEX db_bt ON db USING btree (k)
  INCLUDE (c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o);

-- Extremes, NULLs in each included column, NULL keys (before the build).
INSERT INTO d (k, c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o) VALUES
  (1, -32768, -2147483648, -9223372036854775808, '-Infinity', '-Infinity',
   '-infinity', '-infinity', '-infinity', false, 0),
  (1, 32767, 2147483647, 9223372036854775807, 'Infinity', 'Infinity',
   'infinity', 'infinity', 'infinity', true, 4294967295),
  (2, 0, 0, 0, 'NaN', 'NaN', '4713-01-01 BC', '4713-01-01 00:00:00 BC',
   '4713-01-01 00:00:00+00 BC', NULL, NULL),
  (2, -1, -1, -1, '-0', '-0', '5874897-12-31', '294276-12-31 23:59:59.999999',
   '294276-12-31 23:59:59.999999+00', true, 1),
  (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (3, 7, NULL, 7, NULL, 1.5e-45, NULL, '2000-01-01 12:34:56.789', NULL, false, NULL),
  (NULL, 5, 5, 5, 5.5, 5.25, '2020-02-29', '2020-02-29 00:00:01', '2020-02-29 00:00:01+00', true, 5),
  (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
SELECT setseed(0.3131);
INSERT INTO d (k, c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o)
SELECT CASE WHEN i % 97 = 0 THEN NULL ELSE (random() * 2000)::int8 - 1000 END,
       CASE WHEN i % 11 = 0 THEN NULL ELSE (random() * 60000 - 30000)::int2 END,
       CASE WHEN i % 13 = 0 THEN NULL ELSE (random() * 4e9 - 2e9)::int4 END,
       (random() * 1e18)::int8 * (1 - 2 * (i % 2)),
       CASE WHEN i % 17 = 0 THEN NULL ELSE (random() * 1e6)::float4 / 7 END,
       random() * 1e12 - 5e11,
       date '2000-01-01' + (random() * 20000)::int,
       timestamp '2000-01-01' + random() * interval '10000 days',
       CASE WHEN i % 19 = 0 THEN NULL ELSE timestamptz '1990-01-01 00:00+00' + random() * interval '20000 days' END,
       CASE WHEN i % 23 = 0 THEN NULL ELSE random() < 0.5 END,
       (random() * 4e9)::int8::oid
  FROM generate_series(1, 6000) i;
INSERT INTO db SELECT * FROM d;
REINDEX INDEX d_gi;
SELECT gpuidx_verify('d_gi');

-- Differences between the gpuidx table and the btree twin: rows of
-- (k, included columns) for = ANY, a range, IS NULL and the whole table,
-- each read through the index's own plan (index-only when forced).
CREATE FUNCTION inc_diff() RETURNS TABLE(query text, d_rows bigint, differ bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  cols constant text := 'k, c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o';
  quals constant text[] := ARRAY[
    'k = ANY(''{1,2,3,-1000,-999,-5,0,17,500,999,1000,4242}''::int8[])',
    'k BETWEEN -120 AND 80',
    'k IS NULL',
    'k >= -9223372036854775808 OR k IS NULL'];
  q text;
BEGIN
  FOREACH q IN ARRAY quals LOOP
    query := q;
    EXECUTE format('SELECT count(*) FROM d WHERE %s', q) INTO d_rows;
    EXECUTE format('SELECT count(*) FROM ((SELECT %1$s FROM d WHERE %2$s
                                           EXCEPT ALL SELECT %1$s FROM db WHERE %2$s)
                                          UNION ALL (SELECT %1$s FROM db WHERE %2$s
                                           EXCEPT ALL SELECT %1$s FROM d WHERE %2$s)) z',
                   cols, q) INTO differ;
    RETURN NEXT;
  END LOOP;
END $f$;

-- Index-only plans on the gpuidx table.
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET gpuidx.enable_customscan = off;
SET gpuidx.enable_customjoin = off;
VACUUM d;
VACUUM db;
EXPLAIN (COSTS OFF) SELECT k, c_i4, c_f8 FROM d WHERE k = ANY('{1,2,3}'::int8[]);
EXPLAIN (COSTS OFF) SELECT k, c_tz FROM d WHERE k BETWEEN 1 AND 3;
EXPLAIN (COSTS OFF) SELECT c_b, c_o FROM d WHERE k IS NULL;
-- All pages are all-visible: no heap fetch, and the values are the rows'.
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT k, c_i2 FROM d WHERE k = ANY('{1,2,3}'::int8[]);
SELECT k, c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o
  FROM d WHERE k = ANY('{1,2,3}'::int8[]) ORDER BY k, c_i2 NULLS LAST;
SELECT k, c_i2, c_i4, c_f4, c_d, c_b FROM d WHERE k IS NULL AND id <= 8 ORDER BY c_i2;
SELECT k, c_i2, c_f4, c_b FROM d WHERE k IS NULL ORDER BY c_i2 NULLS FIRST, c_f4 NULLS FIRST LIMIT 2;
SELECT * FROM inc_diff();

-- Updates that change only an included column: not HOT (the index has the
-- column), so the index gets the new values; before VACUUM through heap
-- fetches, after it from the index alone.
UPDATE d SET c_i4 = c_i4 + 1, c_f8 = -c_f8 WHERE k % 5 = 0;
UPDATE db SET c_i4 = c_i4 + 1, c_f8 = -c_f8 WHERE k % 5 = 0;
UPDATE d SET c_b = NOT c_b, c_tz = c_tz + interval '1 second' WHERE k BETWEEN -100 AND -50;
UPDATE db SET c_b = NOT c_b, c_tz = c_tz + interval '1 second' WHERE k BETWEEN -100 AND -50;
UPDATE d SET c_i8 = NULL WHERE k = 2;
UPDATE db SET c_i8 = NULL WHERE k = 2;
SELECT * FROM inc_diff();
VACUUM d;
VACUUM db;
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT k, c_i8 FROM d WHERE k = 2;
SELECT k, c_i8, c_f4 FROM d WHERE k = 2 ORDER BY c_f4;
SELECT * FROM inc_diff();
SELECT gpuidx_verify('d_gi');

-- Inserts with folds (a small pending limit) and NULL keys with values.
SET gpuidx.pending_limit = 300;
INSERT INTO d (k, c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o)
SELECT CASE WHEN i % 50 = 0 THEN NULL ELSE i % 1500 - 700 END,
       (i % 30000)::int2, CASE WHEN i % 3 = 0 THEN NULL ELSE i END, -i, i / 3.0, i / 7.0,
       date '2024-01-01' + i, timestamp '2024-01-01' + i * interval '1 minute',
       timestamptz '2024-01-01 00:00+00' + i * interval '1 hour', i % 2 = 0, i
  FROM generate_series(1, 2500) i;
INSERT INTO db SELECT * FROM d WHERE id > (SELECT max(id) FROM db);
SELECT * FROM inc_diff();
SELECT gpuidx_verify('d_gi');
RESET gpuidx.pending_limit;

-- A rolled-back update and insert leave nothing visible behind.
BEGIN;
UPDATE d SET c_i2 = 1234 WHERE k BETWEEN 0 AND 100;
INSERT INTO d (k, c_i2) VALUES (42, 4242), (NULL, 4243);
SELECT count(*) FROM d WHERE k BETWEEN 0 AND 100 AND c_i2 = 1234;
ROLLBACK;
SELECT count(*) FROM d WHERE c_i2 IN (1234, 4242, 4243) AND (k BETWEEN 0 AND 100 OR k IS NULL);
SELECT * FROM inc_diff();

-- Deletes, then VACUUM's bulk delete rewrites the pages with the values.
DELETE FROM d WHERE k % 3 = 0 OR (k IS NULL AND id % 2 = 0);
DELETE FROM db WHERE k % 3 = 0 OR (k IS NULL AND id % 2 = 0);
SELECT * FROM inc_diff();
VACUUM d;
VACUUM db;
SELECT * FROM inc_diff();
SELECT gpuidx_verify('d_gi');
EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
  SELECT k, c_ts FROM d WHERE k BETWEEN 1 AND 2;

-- A backend with a cached image follows new entries (its delta) and folds.
SELECT count(*) FROM d WHERE k = ANY('{1,2,4,5}'::int8[]);
INSERT INTO d (k, c_i2, c_i4, c_b) VALUES (4, 4, 44, true), (4, NULL, NULL, NULL), (5, 5, 55, false);
INSERT INTO db SELECT * FROM d WHERE id > (SELECT max(id) FROM db);
SELECT k, c_i2, c_i4, c_b FROM d WHERE k = ANY('{4,5}'::int8[]) ORDER BY k, c_i2 NULLS LAST, c_i4 NULLS LAST;
SELECT * FROM inc_diff();
SELECT gpuidx_verify('d_gi');

-- An index without INCLUDE keeps the version 2 layout: its metapage says
-- version 2 and a full base page holds 510 entries of 16 bytes.  With the
-- ten included columns (51 bytes of values) an entry takes 72 bytes, 113 a
-- page, and the metapage says version 3.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pageinspect;
RESET client_min_messages;
CREATE INDEX d_plain ON d USING gpuidx (k);
REINDEX INDEX d_gi;
SELECT i, get_byte(get_raw_page(i, 0), 28) AS version,
       (page_header(get_raw_page(i, 1))).lower AS base_page_lower
  FROM unnest(ARRAY['d_plain', 'd_gi']) i;
SELECT gpuidx_verify('d_plain'), gpuidx_verify('d_gi');
-- gpuidx_info names the included columns and their bytes: 53 a row (the
-- NULL mask and 51 bytes of values) for every entry, NULL keys included.
SELECT i, (SELECT string_agg(format('%s %s %s', e->>'name', e->>'type', e->>'bytes'), ', ')
             FROM jsonb_array_elements(j->'included_columns') e) AS included,
       ((j->>'include_host_bytes')::numeric /
         ((j->>'entries')::bigint + (j->>'null_entries')::bigint))::int AS host_bytes_per_entry,
       (j->>'include_device_bytes')::bigint AS device_bytes
  FROM unnest(ARRAY['d_plain', 'd_gi']::regclass[]) i, LATERAL gpuidx_info(i) j;
DROP INDEX d_plain;

-- A single included column, and a domain over an accepted type.
CREATE DOMAIN posint AS int4 CHECK (VALUE > 0);
CREATE TABLE s (k int4, v posint) WITH (autovacuum_enabled = off);
INSERT INTO s SELECT i, i * 2 FROM generate_series(1, 1000) i;
CREATE INDEX s_gi ON s USING gpuidx (k) INCLUDE (v);
VACUUM s;
EXPLAIN (COSTS OFF) SELECT k, v FROM s WHERE k = ANY('{3,5,7}'::int4[]);
SELECT k, v FROM s WHERE k = ANY('{3,5,7}'::int4[]) ORDER BY k;
SELECT gpuidx_verify('s_gi'), gpuidx_info('s_gi')->'included_columns' AS included;

RESET enable_seqscan;
RESET enable_bitmapscan;
RESET gpuidx.enable_customscan;
RESET gpuidx.enable_customjoin;
SET client_min_messages = warning;
DROP SCHEMA gi_include CASCADE;
