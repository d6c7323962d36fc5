--
-- 04_plans: the planner uses the index for every operator and plan shape;
-- each plan is forced deterministically and its answer is compared with the
-- same query run as a sequential scan.
--
\set schema gi_plans
\i sql/include/setup.sql

-- same(q, ordered): run q under the current settings, then as a sequential
-- scan; 'same' when both give the same rows (in the same order if ordered).
CREATE FUNCTION same(q text, ordered bool DEFAULT false) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE a text; b text; n bigint;
BEGIN
  EXECUTE format('SELECT count(*), string_agg(s::text, %L %s) FROM (%s) s', ';',
                 CASE WHEN ordered THEN '' ELSE 'ORDER BY s::text' END, q) INTO n, a;
  PERFORM set_config('enable_indexscan', 'off', true);
  PERFORM set_config('enable_indexonlyscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  PERFORM set_config('enable_seqscan', 'on', true);
  PERFORM set_config('enable_sort', 'on', true);
  PERFORM set_config('gpuidx.enable_customscan', 'off', true);
  EXECUTE format('SELECT string_agg(s::text, %L %s) FROM (%s) s', ';',
                 CASE WHEN ordered THEN '' ELSE 'ORDER BY s::text' END, q) INTO b;
  RETURN CASE WHEN a IS NOT DISTINCT FROM b THEN 'same, ' || n || ' rows'
              ELSE 'DIFFERENT: ' || left(coalesce(a, '<none>'), 120) || ' vs ' || left(coalesce(b, '<none>'), 120) END;
END $f$;

CREATE TABLE p (id int, k int4, pad text);
INSERT INTO p SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE ((g * 7919) % 4001) - 2000 END, 'x'
  FROM generate_series(1, 20000) g;
CREATE INDEX p_gi ON p USING gpuidx (k);
ANALYZE p;

-- the access method's own paths first; the custom scan comes at the end
SET gpuidx.enable_customscan = off;

-- plain index scans
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k = 5;
SELECT same('SELECT id, k FROM p WHERE k = 5');
SELECT id, k FROM p WHERE k = 5 ORDER BY id;
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k < -1990;
SELECT same('SELECT id, k FROM p WHERE k < -1990');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k <= -1990;
SELECT same('SELECT id, k FROM p WHERE k <= -1990');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k > 1990;
SELECT same('SELECT id, k FROM p WHERE k > 1990');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k >= 1990;
SELECT same('SELECT id, k FROM p WHERE k >= 1990');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k BETWEEN -10 AND 10;
SELECT same('SELECT id, k FROM p WHERE k BETWEEN -10 AND 10');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k > 10 AND k < 5;
SELECT same('SELECT id, k FROM p WHERE k > 10 AND k < 5');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k >= 7 AND k <= 7 AND k = 7;
SELECT same('SELECT id, k FROM p WHERE k >= 7 AND k <= 7 AND k = 7');
-- cross-type: bigint and smallint constants against the int4 column
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k = 5::bigint;
SELECT same('SELECT id, k FROM p WHERE k = 5::bigint');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k > 1990::int2;
SELECT same('SELECT id, k FROM p WHERE k > 1990::int2');
SELECT same('SELECT id, k FROM p WHERE k < 9000000000');
SELECT same('SELECT id, k FROM p WHERE k > -9000000000 AND k < -1995');
-- = ANY: the whole array is one batch (int4 and bigint arrays, with NULLs and duplicates)
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k = ANY ('{1, 2, 3, 2, NULL, -2000}'::int4[]);
SELECT same('SELECT id, k FROM p WHERE k = ANY (''{1, 2, 3, 2, NULL, -2000}''::int4[])');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k = ANY ('{1, 2, 3, 4294967297}'::bigint[]);
SELECT same('SELECT id, k FROM p WHERE k = ANY (''{1, 2, 3, 4294967297}''::bigint[])');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k IN (100, 200, 300);
SELECT same('SELECT id, k FROM p WHERE k IN (100, 200, 300)');
SELECT same('SELECT id, k FROM p WHERE k = ANY (''{}''::bigint[])');
SELECT same('SELECT id, k FROM p WHERE k = ANY (ARRAY(SELECT g FROM generate_series(-2100, 2100, 3) g)::bigint[])');
PREPARE qa(bigint[]) AS SELECT id, k FROM p WHERE k = ANY ($1);
EXPLAIN (COSTS OFF) EXECUTE qa('{1, 2}');
EXECUTE qa('{1, 2}');
DEALLOCATE qa;
-- IS NULL is never answered by the index (NULLs are not indexed)
SELECT count(*) FROM p WHERE k IS NULL;
SELECT count(*) FROM p WHERE k IS NOT NULL;

-- ordered scans, forward and backward
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k > 0 ORDER BY k LIMIT 5;
SELECT k FROM p WHERE k > 0 ORDER BY k LIMIT 5;
EXPLAIN (COSTS OFF) SELECT k FROM p WHERE k <= 100 ORDER BY k DESC LIMIT 1;
SELECT k FROM p WHERE k <= 100 ORDER BY k DESC LIMIT 1;
SELECT k FROM p WHERE k <= -2001 ORDER BY k DESC LIMIT 1;
EXPLAIN (COSTS OFF) SELECT k FROM p WHERE k >= 100 ORDER BY k LIMIT 1;
SELECT k FROM p WHERE k >= 100 ORDER BY k LIMIT 1;
SELECT k FROM p WHERE k >= 2001 ORDER BY k LIMIT 1;
EXPLAIN (COSTS OFF) SELECT k FROM p WHERE k BETWEEN -50 AND 50 ORDER BY k DESC;
SELECT same('SELECT k FROM p WHERE k BETWEEN -50 AND 50 ORDER BY k DESC', true);
SELECT same('SELECT k FROM p WHERE k BETWEEN -50 AND 50 ORDER BY k', true);
SELECT same('SELECT k FROM p WHERE k > 0 ORDER BY k LIMIT 100', true);
SELECT same('SELECT k FROM p WHERE k < 0 ORDER BY k DESC LIMIT 100', true);
-- ORDER BY k with no WHERE clause: NULL keys are not in the index, so an
-- index scan must not be used unless it returns them (NULLS LAST / FIRST)
EXPLAIN (COSTS OFF) SELECT k FROM p ORDER BY k DESC LIMIT 10;
SELECT k FROM p ORDER BY k DESC LIMIT 3;
SELECT same('SELECT k FROM p ORDER BY k LIMIT 10', true);
SELECT same('SELECT k FROM p ORDER BY k DESC LIMIT 10', true);
SELECT same('SELECT k FROM p ORDER BY k DESC NULLS LAST LIMIT 10', true);
SELECT same('SELECT k FROM p ORDER BY k NULLS FIRST LIMIT 10', true);
SET enable_sort = off;
EXPLAIN (COSTS OFF) SELECT k FROM p ORDER BY k;
SELECT same('SELECT k FROM p ORDER BY k', true);
SELECT same('SELECT k FROM p ORDER BY k DESC', true);
RESET enable_sort;
-- min and max
EXPLAIN (COSTS OFF) SELECT min(k), max(k) FROM p;
SELECT min(k), max(k) FROM p;
SELECT same('SELECT min(k), max(k) FROM p WHERE k BETWEEN -7 AND 1000');
-- count(*) with no qualifier: NULL keys are not in the index, so no full
-- scan of the index may answer it (20000 rows, 206 of them NULL)
SELECT count(*) FROM p;
VACUUM p;
SELECT count(*) FROM p;
SELECT same('SELECT count(*) FROM p');
SELECT same('SELECT count(*), count(k) FROM p');
RESET enable_bitmapscan;
SELECT count(*) FROM p;
SET enable_bitmapscan = off;
SET enable_seqscan = on;
SELECT count(*) FROM p;
SET enable_seqscan = off;
-- a scan of a key with many duplicates across an ordered scan
SELECT same('SELECT id, k FROM p WHERE k >= 1999 ORDER BY k, id', true);
-- a cursor moving both ways over an index scan
BEGIN;
DECLARE c SCROLL CURSOR FOR SELECT k FROM p WHERE k BETWEEN 10 AND 12 ORDER BY k;
FETCH 3 FROM c;
FETCH BACKWARD 2 FROM c;
FETCH LAST FROM c;
FETCH ABSOLUTE 1 FROM c;
COMMIT;
SELECT k FROM p WHERE k BETWEEN 10 AND 12 ORDER BY k;
-- the index in a nested loop (parameterized index scan, one probe per outer row)
CREATE TABLE o (v int8);
INSERT INTO o SELECT g * 13 - 2000 FROM generate_series(0, 300) g;
ANALYZE o;
SET enable_hashjoin = off;
SET enable_mergejoin = off;
EXPLAIN (COSTS OFF) SELECT o.v, p.id FROM o JOIN p ON p.k = o.v;
SELECT same('SELECT o.v, p.id FROM o JOIN p ON p.k = o.v');
EXPLAIN (COSTS OFF) SELECT o.v, x.k FROM o, LATERAL (SELECT k FROM p WHERE p.k <= o.v ORDER BY k DESC LIMIT 1) x;
SELECT same('SELECT o.v, x.k FROM o, LATERAL (SELECT k FROM p WHERE p.k <= o.v ORDER BY k DESC LIMIT 1) x');
RESET enable_hashjoin;
RESET enable_mergejoin;

-- bitmap scans
RESET enable_bitmapscan;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k = 5;
SELECT same('SELECT id, k FROM p WHERE k = 5');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k BETWEEN 100 AND 120;
SELECT same('SELECT id, k FROM p WHERE k BETWEEN 100 AND 120');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k < -1900;
SELECT same('SELECT id, k FROM p WHERE k < -1900');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k = ANY ('{7, 8, 9, 9, 123456789012}'::bigint[]);
SELECT same('SELECT id, k FROM p WHERE k = ANY (''{7, 8, 9, 9, 123456789012}''::bigint[])');
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k = 5 OR k > 1995;
SELECT same('SELECT id, k FROM p WHERE k = 5 OR k > 1995');
SELECT same('SELECT id, k FROM p WHERE k >= -2000');
CREATE INDEX p_id ON p (id);
SELECT same('SELECT id, k FROM p WHERE k > 1000 AND id < 500');
DROP INDEX p_id;
RESET enable_indexscan;

-- after writes: new rows, deleted rows and changed keys through both scans
INSERT INTO p SELECT g, ((g * 31) % 4001) - 2000, 'y' FROM generate_series(20001, 21000) g;
DELETE FROM p WHERE id % 10 = 3;
UPDATE p SET k = -k WHERE id % 10 = 4;
SET enable_bitmapscan = off;
SELECT same('SELECT id, k FROM p WHERE k = ANY (ARRAY(SELECT g FROM generate_series(-2000, 2000, 7) g))');
SELECT same('SELECT id, k FROM p WHERE k BETWEEN -300 AND 300');
SELECT same('SELECT k FROM p WHERE k < 500 ORDER BY k DESC LIMIT 50', true);
RESET enable_bitmapscan;
SET enable_indexscan = off;
SELECT same('SELECT id, k FROM p WHERE k = ANY (ARRAY(SELECT g FROM generate_series(-2000, 2000, 7) g))');
SELECT same('SELECT id, k FROM p WHERE k BETWEEN -300 AND 300');
RESET enable_indexscan;
RESET enable_seqscan;

-- the custom scan (GpuIndexScan): forced, same rows as a sequential scan,
-- and the ctid of every row it returns is the row's own
SET gpuidx.enable_customscan = on;
SET enable_seqscan = off;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id, k FROM p WHERE k = ANY ('{1, 2, 3}'::bigint[]);
SELECT same('SELECT id, k FROM p WHERE k = ANY (''{1, 2, 3}''::bigint[])');
SELECT same('SELECT id, k FROM p WHERE k BETWEEN 10 AND 20 OR k < -1990');
SELECT same('SELECT ctid, id, k FROM p WHERE k = ANY (''{1, 2, 3}''::bigint[])');
SELECT same('SELECT ctid, id, k FROM p WHERE k BETWEEN 10 AND 20');
SELECT count(*) AS bad_ctids FROM p WHERE k = ANY ('{1, 2, 3}'::bigint[]) AND ctid NOT IN (SELECT ctid FROM p);
RESET enable_bitmapscan;
RESET enable_indexscan;
RESET enable_seqscan;

-- UPDATE, DELETE and SELECT FOR UPDATE whose rows come through each plan:
-- index scan, bitmap scan, custom scan (each rolled back)
CREATE FUNCTION dml(mode text) RETURNS TABLE(step text, n bigint) LANGUAGE plpgsql AS $f$
DECLARE c bigint;
BEGIN
  PERFORM set_config('enable_seqscan', (mode = 'none')::text, true);
  PERFORM set_config('enable_indexscan', (mode = 'index')::text, true);
  PERFORM set_config('enable_bitmapscan', (mode = 'bitmap')::text, true);
  PERFORM set_config('gpuidx.enable_customscan', (mode = 'custom')::text, true);
  PERFORM * FROM p WHERE k = ANY ('{1, 2, 3}'::bigint[]) FOR UPDATE;
  GET DIAGNOSTICS c = ROW_COUNT; step := 'for update'; n := c; RETURN NEXT;
  UPDATE p SET pad = 'u' WHERE k = ANY ('{1, 2, 3}'::bigint[]);
  GET DIAGNOSTICS c = ROW_COUNT; step := 'update'; n := c; RETURN NEXT;
  UPDATE p SET k = k + 1000 WHERE k BETWEEN -5 AND 5;
  GET DIAGNOSTICS c = ROW_COUNT; step := 'update key'; n := c; RETURN NEXT;
  DELETE FROM p WHERE k BETWEEN 10 AND 12;
  GET DIAGNOSTICS c = ROW_COUNT; step := 'delete'; n := c; RETURN NEXT;
  step := 'updated rows'; n := (SELECT count(*) FROM p WHERE pad = 'u'); RETURN NEXT;
  step := 'rows left in 10..12'; n := (SELECT count(*) FROM p WHERE k + 0 BETWEEN 10 AND 12); RETURN NEXT;
  step := 'rows left in -5..5'; n := (SELECT count(*) FROM p WHERE k + 0 BETWEEN -5 AND 5); RETURN NEXT;
END $f$;
BEGIN;
SELECT * FROM dml('index');
ROLLBACK;
BEGIN;
SELECT * FROM dml('bitmap');
ROLLBACK;
BEGIN;
SELECT * FROM dml('custom');
ROLLBACK;
-- the same through a sequential scan, for reference
BEGIN;
SELECT * FROM dml('none');
ROLLBACK;

SET client_min_messages = warning;
DROP SCHEMA gi_plans CASCADE;
