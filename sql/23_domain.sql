--
-- 23_domain: a column of a domain over int2/int4/int8 is indexed by its base
-- type, and answers through the batch functions, index scans and
-- GpuIndexScan as a btree on the same column does.
--
\set schema gi_domain
\i sql/include/setup.sql

CREATE DOMAIN dint AS int8;
CREATE DOMAIN dpos AS int4 CHECK (VALUE >= 0);
CREATE DOMAIN dsmall AS int2;
CREATE TABLE dm (id int, k dint, p dpos, s dsmall);
-- (count(*) over these scans would be GpuIndexAgg's: sql/33_agg.sql)
SET gpuidx.enable_customagg = off;
INSERT INTO dm SELECT g, g % 50, g % 40, (g % 30)::int2 FROM generate_series(1, 1000) g;
CREATE INDEX dm_k ON dm USING gpuidx (k);
CREATE INDEX dm_p ON dm USING gpuidx (p);
CREATE INDEX dm_s ON dm USING gpuidx (s);
SELECT (gpuidx_info('dm_k')->>'key_bytes')::int, (gpuidx_info('dm_p')->>'key_bytes')::int,
       (gpuidx_info('dm_s')->>'key_bytes')::int;
SELECT gpuidx_verify('dm_k'), gpuidx_verify('dm_p'), gpuidx_verify('dm_s');

-- batch functions
SELECT count(*) FROM gpuidx_lookup('dm_k', '{1,2,49,50}');
SELECT count(*) FROM gpuidx_lookup('dm_p', '{1,2,39,40}');
SELECT count(*) FROM gpuidx_lookup('dm_s', '{1,2,29,30}');
SELECT DISTINCT key FROM gpuidx_predecessor('dm_k', '{100}');
SELECT gpuidx_range_count('dm_p', '{0,10}', '{4,100}');

-- inserts after the build (pending entries) convert domain values too
INSERT INTO dm VALUES (2000, 777, 777, 777);
SELECT count(*) FROM gpuidx_lookup('dm_k', '{777}');

-- index scans, bitmap scans and GpuIndexScan, probed with the domain type,
-- its base type and other integer types
SET enable_seqscan = off;
SET gpuidx.enable_customscan = off;
SET enable_bitmapscan = off;
SELECT count(*) FROM dm WHERE k = 7;
SELECT count(*) FROM dm WHERE k = 7::dint;
SELECT count(*) FROM dm WHERE k = ANY ('{1,2,777}'::int8[]);
SELECT count(*) FROM dm WHERE p < 3;
SELECT count(*) FROM dm WHERE s = 5::int2;
SET enable_indexscan = off;
SET enable_bitmapscan = on;
SELECT count(*) FROM dm WHERE k = ANY ('{1,2,777}'::int4[]);
SET enable_bitmapscan = off;
SET gpuidx.enable_customscan = on;
EXPLAIN (COSTS OFF) SELECT count(*) FROM dm WHERE k = ANY ('{1,2,777}'::int8[]);
SELECT count(*) FROM dm WHERE k = ANY ('{1,2,777}'::int8[]);
SELECT count(*) FROM dm WHERE p BETWEEN 3 AND 5 OR p = 777;
SELECT count(*) FROM dm WHERE s = ANY ('{1,2}'::int2[]);
RESET ALL;
SET search_path = gi_domain, public;
-- the same answers by sequential scans
SELECT count(*) FROM dm WHERE k = 7;
SELECT count(*) FROM dm WHERE k = ANY ('{1,2,777}'::int8[]);
SELECT count(*) FROM dm WHERE p < 3;
SELECT count(*) FROM dm WHERE s = 5::int2;
SELECT count(*) FROM dm WHERE p BETWEEN 3 AND 5 OR p = 777;

-- REINDEX of a domain-typed index
REINDEX INDEX dm_k;
SELECT count(*) FROM gpuidx_lookup('dm_k', '{1,2,777}');

DROP SCHEMA gi_domain CASCADE;
