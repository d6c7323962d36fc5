-- A heap TID reused after VACUUM never yields a wrong row.
CREATE EXTENSION IF NOT EXISTS gpuidx;
SET client_min_messages = warning;
DROP TABLE IF EXISTS reuse;
RESET client_min_messages;
CREATE TABLE reuse (k int8, tag text) WITH (autovacuum_enabled = off, fillfactor = 100);
INSERT INTO reuse SELECT g, 'old' FROM generate_series(1, 2000) g;
CREATE INDEX reuse_g ON reuse USING gpuidx (k);
-- Load the image in this backend before the rows go.
SELECT count(*) FROM gpuidx_lookup('reuse_g', ARRAY[5, 6, 7]);
CREATE TEMP TABLE old_tids AS SELECT ctid AS tid, k FROM reuse WHERE k <= 1000;
DELETE FROM reuse WHERE k <= 1000;
VACUUM reuse;
INSERT INTO reuse SELECT g + 100000, 'new' FROM generate_series(1, 1000) g;
-- The freed TIDs were reused by rows with other keys.
SELECT count(*) > 500 AS tids_reused
FROM reuse r JOIN old_tids o ON r.ctid = o.tid WHERE r.tag = 'new';
-- Old keys find nothing, through every path; new keys find their rows.
SELECT count(*) FROM gpuidx_lookup('reuse_g', ARRAY(SELECT generate_series(1, 1000)::int8));
SELECT count(*) FROM gpuidx_range('reuse_g', ARRAY[1::int8], ARRAY[1000::int8]);
SELECT gpuidx_range_count('reuse_g', ARRAY[1::int8, 100001], ARRAY[1000::int8, 101000]);
SELECT key, count(*) FROM gpuidx_predecessor('reuse_g', ARRAY[1000::int8, 100000]) GROUP BY key ORDER BY key;
SET enable_seqscan = off;
SELECT count(*) FROM reuse WHERE k <= 1000;
SELECT count(*) FROM reuse WHERE k = ANY(ARRAY(SELECT generate_series(1, 1000)::int8));
SET enable_bitmapscan = off;
SELECT count(*) FROM reuse WHERE k BETWEEN 1 AND 1000;
SELECT count(*) FROM reuse WHERE k BETWEEN 100001 AND 101000;
RESET enable_seqscan;
RESET enable_bitmapscan;
SELECT gpuidx_verify('reuse_g');
DROP TABLE reuse;
