--
-- 22_invalid: an index left invalid by a failed CREATE INDEX CONCURRENTLY
-- has no pages; every batch function says so clearly (55000) with a REINDEX
-- hint, instead of failing to read block 0.  REINDEX makes it usable.
--
\set schema gi_invalid
\i sql/include/setup.sql

\i sql/include/err.sql

-- an index expression that fails on one row makes CREATE INDEX CONCURRENTLY
-- fail after the index was created, leaving it invalid
CREATE FUNCTION picky(v int8) RETURNS int8 IMMUTABLE LANGUAGE plpgsql AS $f$
BEGIN
  IF v = 13 THEN RAISE EXCEPTION 'picky: no 13'; END IF;
  RETURN v;
END $f$;
CREATE TABLE iv (k int8);
INSERT INTO iv SELECT g FROM generate_series(1, 100) g;
CREATE INDEX CONCURRENTLY iv_gi ON iv USING gpuidx (picky(k));
SELECT indisvalid FROM pg_index WHERE indexrelid = 'iv_gi'::regclass;

SELECT * FROM gpuidx_lookup('iv_gi', '{1}');
\set idx iv_gi
\i sql/include/functions_err.sql

-- the hinted REINDEX makes it valid and usable
DELETE FROM iv WHERE k = 13;
REINDEX INDEX iv_gi;
SELECT indisvalid FROM pg_index WHERE indexrelid = 'iv_gi'::regclass;
SELECT count(*) FROM gpuidx_lookup('iv_gi', '{1,2,13,99}');
SELECT gpuidx_verify('iv_gi');

DROP SCHEMA gi_invalid CASCADE;
