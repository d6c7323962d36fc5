--
-- 02_functions: every batch function on a small table whose answers can be
-- checked by eye: duplicates, negatives, NULL probes, NULL keys, empty
-- arrays, repeated probes, probe order, MVCC (deleted, updated, rolled-back
-- and own uncommitted rows).
--
\set schema gi_functions
\i sql/include/setup.sql

CREATE TABLE f (id int PRIMARY KEY, k int8);
INSERT INTO f VALUES (1, 10), (2, 20), (3, 20), (4, 30), (5, NULL), (6, -5),
                     (7, 40), (8, 40), (9, 40), (10, -100);
CREATE INDEX f_gi ON f USING gpuidx (k);
SELECT ctid, * FROM f ORDER BY id;
SELECT (gpuidx_info('f_gi')->>'entries')::bigint AS entries;

-- lookup: duplicates, misses, NULL probe, repeated probe
SELECT r.probe, r.key, r.ctid, f.id
  FROM gpuidx_lookup('f_gi', '{20, 10, 99, NULL, -5, 20, 40, -100}') r
  JOIN f ON f.ctid = r.ctid ORDER BY r.probe, r.key, r.ctid;
-- the index may be named by text or by oid
SELECT count(*) FROM gpuidx_lookup('gi_functions.f_gi', ARRAY[40]);
SELECT count(*) FROM gpuidx_lookup('f_gi'::regclass::oid, ARRAY[40]::bigint[]);
-- empty, all-NULL and NULL arrays
SELECT * FROM gpuidx_lookup('f_gi', '{}');
SELECT * FROM gpuidx_lookup('f_gi', '{NULL, NULL}');
SELECT * FROM gpuidx_lookup('f_gi', NULL);

-- predecessor: largest key <= probe, every tuple carrying it
SELECT r.probe, r.key, f.id
  FROM gpuidx_predecessor('f_gi', '{25, 20, 9, -5, -101, -100, 1000, NULL, 39, 40, 41}') r
  JOIN f ON f.ctid = r.ctid ORDER BY r.probe, r.key, f.id;
-- successor: smallest key >= probe
SELECT r.probe, r.key, f.id
  FROM gpuidx_successor('f_gi', '{25, 20, 9, -5, -101, -100, 1000, NULL, 39, 40, 41, -4}') r
  JOIN f ON f.ctid = r.ctid ORDER BY r.probe, r.key, f.id;
SELECT * FROM gpuidx_predecessor('f_gi', '{}');
SELECT * FROM gpuidx_successor('f_gi', '{NULL}');

-- range: inclusive bounds, lo > hi is empty, NULL bound gives no row
SELECT r.probe, r.key, f.id
  FROM gpuidx_range('f_gi', '{10, -1000, 41, 30, NULL, 20, 20, -100}',
                            '{20, 0, 100, 10, 5, NULL, 20, -100}') r
  JOIN f ON f.ctid = r.ctid ORDER BY r.probe, r.key, f.id;
SELECT gpuidx_range_count('f_gi', '{10, -1000, 41, 30, 20, -100, -9223372036854775808}',
                                  '{20, 0, 100, 10, 20, -100, 9223372036854775807}');
SELECT * FROM gpuidx_range('f_gi', '{}', '{}');
SELECT gpuidx_range_count('f_gi', '{}', '{}');
SELECT gpuidx_range_count('f_gi', '{40}', '{40}') AS one_probe;

-- rows come back in probe order (WITH ORDINALITY records the order emitted)
SELECT count(*) AS out_of_order FROM (
  SELECT probe, lag(probe) OVER (ORDER BY ord) AS prev
    FROM gpuidx_lookup('f_gi', '{40, 10, 40, 20, -100, 30, 40, 20}')
         WITH ORDINALITY AS r(probe, key, ctid, ord)) s
 WHERE prev > probe;
SELECT count(*) AS out_of_order FROM (
  SELECT probe, lag(probe) OVER (ORDER BY ord) AS prev
    FROM gpuidx_predecessor('f_gi', '{1000, -100, 35, 20, 15, 0}')
         WITH ORDINALITY AS r(probe, key, ctid, ord)) s
 WHERE prev > probe;
SELECT count(*) AS out_of_order FROM (
  SELECT probe, lag(probe) OVER (ORDER BY ord) AS prev
    FROM gpuidx_range('f_gi', '{30, -1000, 10}', '{1000, 1000, 20}')
         WITH ORDINALITY AS r(probe, key, ctid, ord)) s
 WHERE prev > probe;

-- a larger batch with repeated probes: 3000 probes cycling over -110..189
SELECT count(*) AS rows, count(DISTINCT probe) AS probes_hit, sum(key) AS key_sum
  FROM gpuidx_lookup('f_gi', ARRAY(SELECT (g % 300) - 110 FROM generate_series(0, 2999) g));
-- reference: the same count computed without the index
SELECT count(*) AS rows, count(DISTINCT g) AS probes_hit, sum(f.k) AS key_sum
  FROM generate_series(0, 2999) g JOIN f ON f.k + 0 = (g % 300) - 110;

-- functions used with LATERAL over a table of probe arrays
CREATE TABLE batches (b int, keys bigint[]);
INSERT INTO batches VALUES (1, '{10, 20}'), (2, '{40}'), (3, '{}'), (4, NULL);
SELECT b.b, r.probe, r.key FROM batches b, LATERAL gpuidx_lookup('f_gi', b.keys) r
 ORDER BY 1, 2, 3;
-- in a prepared statement
PREPARE q(bigint[]) AS SELECT probe, key FROM gpuidx_successor('f_gi', $1) ORDER BY 1, 2;
EXECUTE q('{31}');
EXECUTE q('{-99, 41}');
DEALLOCATE q;

-- MVCC: deleted and updated rows are not returned, new ones are
DELETE FROM f WHERE id = 2;            -- one of the two 20s
UPDATE f SET k = 35 WHERE id = 4;      -- 30 -> 35
UPDATE f SET k = 10 WHERE id = 5;      -- NULL -> 10
SELECT r.probe, r.key, f.id FROM gpuidx_lookup('f_gi', '{20, 30, 35, 10}') r
  JOIN f ON f.ctid = r.ctid ORDER BY 1, 2, 3;
-- predecessor/successor walk past keys whose tuples are all dead
SELECT r.probe, r.key, f.id FROM gpuidx_predecessor('f_gi', '{34, 30}') r
  JOIN f ON f.ctid = r.ctid ORDER BY 1, 2, 3;
SELECT r.probe, r.key, f.id FROM gpuidx_successor('f_gi', '{21, 30}') r
  JOIN f ON f.ctid = r.ctid ORDER BY 1, 2, 3;
DELETE FROM f WHERE k = 40;
SELECT r.probe, r.key, f.id FROM gpuidx_predecessor('f_gi', '{1000, 40}') r
  JOIN f ON f.ctid = r.ctid ORDER BY 1, 2, 3;
SELECT * FROM gpuidx_successor('f_gi', '{36, 40}');
SELECT gpuidx_range_count('f_gi', '{-1000, 36}', '{1000, 1000}');

-- rolled-back inserts are never returned
BEGIN;
INSERT INTO f VALUES (100, 1000), (101, 1000), (102, 15);
-- own uncommitted rows are visible to the transaction that wrote them
SELECT r.probe, r.key, f.id FROM gpuidx_lookup('f_gi', '{1000, 15}') r
  JOIN f ON f.ctid = r.ctid ORDER BY 1, 2, 3;
SELECT r.probe, r.key, f.id FROM gpuidx_predecessor('f_gi', '{5000}') r
  JOIN f ON f.ctid = r.ctid ORDER BY 1, 2, 3;
ROLLBACK;
SELECT * FROM gpuidx_lookup('f_gi', '{1000, 15}');
SELECT r.probe, r.key, f.id FROM gpuidx_predecessor('f_gi', '{5000, 16}') r
  JOIN f ON f.ctid = r.ctid ORDER BY 1, 2, 3;
SELECT r.probe, r.key, f.id FROM gpuidx_successor('f_gi', '{999, 11}') r
  JOIN f ON f.ctid = r.ctid ORDER BY 1, 2, 3;
SELECT gpuidx_range_count('f_gi', '{11, 999}', '{19, 1000}');
-- a rolled-back delete leaves the row visible
BEGIN;
DELETE FROM f WHERE id = 1;
SELECT count(*) FROM gpuidx_lookup('f_gi', '{10}');
ROLLBACK;
SELECT count(*) FROM gpuidx_lookup('f_gi', '{10}');
-- subtransaction rolled back
BEGIN;
INSERT INTO f VALUES (200, 500);
SAVEPOINT s;
INSERT INTO f VALUES (201, 501);
ROLLBACK TO SAVEPOINT s;
SELECT probe, key FROM gpuidx_range('f_gi', '{400}', '{600}') ORDER BY 1, 2;
COMMIT;
SELECT probe, key FROM gpuidx_range('f_gi', '{400}', '{600}') ORDER BY 1, 2;
-- the final table, for reference
SELECT id, k FROM f ORDER BY id;
SELECT probe, key FROM gpuidx_range('f_gi', '{-9223372036854775808}', '{9223372036854775807}')
 ORDER BY 1, 2;

SET client_min_messages = warning;
DROP SCHEMA gi_functions CASCADE;
