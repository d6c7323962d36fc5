--
-- 06_maintenance: updates, deletes, VACUUM (TIDs reused afterwards), REINDEX,
-- TRUNCATE, VACUUM FULL, CLUSTER, CREATE/REINDEX CONCURRENTLY, rollback;
-- after each step every function is checked against a scan without index.
--
\set schema gi_maintenance
\i sql/include/setup.sql

-- gi_check(idx, probes, lo, hi): every batch function on idx against scans
-- without index (the fixture; path from the repository root, where
-- pg_regress runs psql)
\i sql/include/gi_check.sql

CREATE TABLE pr (lo bigint[], hi bigint[], keys bigint[]);
INSERT INTO pr SELECT array_agg(g * 13 - 1510 ORDER BY g), array_agg(g * 13 - 1510 + g % 9 ORDER BY g),
                      array_agg(g * 13 - 1510 + (g % 5) - 2 ORDER BY g)
  FROM generate_series(0, 240) g;
CREATE TABLE m (id int, k int4) WITH (autovacuum_enabled = off);
INSERT INTO m SELECT g, ((g * 7919) % 3001) - 1500 FROM generate_series(1, 8000) g;
INSERT INTO m VALUES (0, NULL), (-1, -2147483648), (-2, 2147483647);
CREATE INDEX m_gi ON m USING gpuidx (k);
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));

-- updates and deletes
UPDATE m SET k = k + 3 WHERE id % 4 = 1;
DELETE FROM m WHERE id % 6 = 2;
UPDATE m SET k = NULL WHERE id % 50 = 3;
UPDATE m SET k = 1 WHERE id % 50 = 7 AND k IS NOT NULL;
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
-- HOT updates (the key does not change)
ALTER TABLE m ADD COLUMN note text;
UPDATE m SET note = 'hot' WHERE id % 9 = 0;
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));

-- VACUUM removes dead TIDs; the freed TIDs are then reused by new rows,
-- both with other keys and with the same keys: no stale entry may produce a
-- wrong or a duplicate row
CREATE TEMP TABLE old_tids AS SELECT ctid AS t, k FROM m WHERE id % 5 = 0;
DELETE FROM m WHERE id % 5 = 0;
VACUUM (INDEX_CLEANUP ON) m;
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
INSERT INTO m SELECT 100000 + g, 5000 + g % 10 FROM generate_series(1, 800) g;
INSERT INTO m SELECT 200000, k FROM old_tids WHERE k IS NOT NULL;
SELECT count(*) > 100 AS tids_reused FROM m WHERE ctid IN (SELECT t FROM old_tids);
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
SELECT probe, key, count(*) FROM gpuidx_lookup('m_gi', '{5000, 5009, 5010}') GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) FROM gpuidx_range('m_gi', '{5000}', '{5009}');
SELECT count(*) AS duplicate_tids FROM (
  SELECT ctid FROM gpuidx_range('m_gi', '{-2147483648}', '{2147483647}') GROUP BY ctid HAVING count(*) > 1) d;
-- plain VACUUM, VACUUM FREEZE, VACUUM ANALYZE
DELETE FROM m WHERE id % 13 = 0;
VACUUM m;
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
VACUUM (FREEZE, ANALYZE) m;
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
SELECT (gpuidx_info('m_gi')->>'entries')::bigint = (SELECT count(k) FROM m) AS entries_match_after_vacuum;

-- rollback of inserts, updates and deletes
BEGIN;
INSERT INTO m SELECT 300000 + g, 7777 FROM generate_series(1, 500) g;
UPDATE m SET k = 7778 WHERE id % 3 = 0;
DELETE FROM m WHERE id % 3 = 1;
SELECT count(*) FROM gpuidx_lookup('m_gi', '{7777, 7778}');
ROLLBACK;
SELECT count(*) FROM gpuidx_lookup('m_gi', '{7777, 7778}');
SELECT probe, key FROM gpuidx_successor('m_gi', '{7000}');
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
VACUUM (INDEX_CLEANUP ON) m;
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));

-- REINDEX
REINDEX INDEX m_gi;
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
REINDEX TABLE m;
SELECT (gpuidx_info('m_gi')->>'pending_entries')::bigint AS pending_after_reindex,
       (gpuidx_info('m_gi')->>'entries')::bigint = (SELECT count(k) FROM m) AS entries_match;
REINDEX INDEX CONCURRENTLY m_gi;
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));

-- CREATE INDEX CONCURRENTLY
CREATE INDEX CONCURRENTLY m_gi2 ON m USING gpuidx (k);
SELECT indisvalid FROM pg_index WHERE indexrelid = 'm_gi2'::regclass;
SELECT * FROM gi_check('m_gi2', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
DROP INDEX CONCURRENTLY m_gi2;

-- VACUUM FULL and CLUSTER rewrite the heap: the index is rebuilt
VACUUM FULL m;
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
CREATE INDEX m_id ON m (id);
CLUSTER m USING m_id;
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
-- clustering on the gpuidx index itself, if the access method allows it
\set VERBOSITY terse
CLUSTER m USING m_gi;
\set VERBOSITY default
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));

-- TRUNCATE empties the index; it fills again; TRUNCATE rolled back keeps it
BEGIN;
TRUNCATE m;
SELECT count(*) FROM gpuidx_range('m_gi', '{-2147483648}', '{2147483647}');
ROLLBACK;
SELECT count(*) = (SELECT count(k) FROM m) AS all_back
  FROM gpuidx_range('m_gi', '{-2147483648}', '{2147483647}');
TRUNCATE m;
SELECT count(*) FROM gpuidx_range('m_gi', '{-2147483648}', '{2147483647}');
SELECT (gpuidx_info('m_gi')->>'entries')::bigint AS entries;
INSERT INTO m SELECT g, (g % 200) - 100 FROM generate_series(1, 3000) g;
SELECT * FROM gi_check('m_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
-- an index created in a transaction that is rolled back leaves nothing behind
BEGIN;
CREATE INDEX m_gi3 ON m USING gpuidx (k);
SELECT count(*) FROM gpuidx_lookup('m_gi3', '{5}');
ROLLBACK;
SELECT count(*) FROM pg_class WHERE relname = 'm_gi3';
-- DROP INDEX, then the functions no longer know it
DROP INDEX m_gi;
SELECT count(*) FROM pg_class WHERE relname = 'm_gi';

SET client_min_messages = warning;
DROP SCHEMA gi_maintenance CASCADE;
