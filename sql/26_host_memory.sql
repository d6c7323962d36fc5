--
-- 26_host_memory: gpuidx.host_memory_limit bounds the host memory of the
-- images one backend keeps: past it the least recently used images that no
-- scan holds are evicted, and an evicted index answers again (reloaded).
--
\set schema gi_hostmem
\i sql/include/setup.sql

-- Service mode (gpuidx in shared_preload_libraries) shares images between
-- backends: gpuidx.host_memory_limit, which bounds a backend's own images,
-- does not apply there (t/100_service.pl tests the service's limit).
SELECT current_setting('shared_preload_libraries') ~ 'gpuidx' AS service_mode \gset
\if :service_mode
\echo 'service mode: skipped'
\quit
\endif


-- twelve indexes of 50000 rows (about 1 MB of host memory each)
DO $$
BEGIN
  FOR i IN 1 .. 12 LOOP
    EXECUTE format('CREATE TABLE h%s (k int8)', i);
    EXECUTE format('INSERT INTO h%s SELECT g %% 5000 FROM generate_series(1, 50000) g', i);
    EXECUTE format('CREATE INDEX h%s_gi ON h%s USING gpuidx (k)', i, i);
  END LOOP;
END $$;

SHOW gpuidx.host_memory_limit;
SET gpuidx.host_memory_limit = '4MB';

-- each queried once, in one backend
SELECT i, (SELECT count(*) FROM gpuidx_lookup(format('h%s_gi', i)::regclass, '{1,2,3}')) AS n
  FROM generate_series(1, 12) i;

-- what this backend keeps: within the limit, not all twelve
SELECT (j->>'cache_images')::int < 12 AS some_evicted,
       (j->>'cache_images')::int >= 1 AS some_kept,
       (j->>'cache_host_bytes')::bigint <= 4 * 1024 * 1024 AS within_limit,
       (j->>'cache_host_bytes')::bigint >= (j->>'host_bytes')::bigint AS counts_itself
  FROM gpuidx_info('h12_gi') j;

-- the first index was evicted; it answers again, and right
SELECT count(*) FROM gpuidx_lookup('h1_gi', '{1,2,3,4999,5000}');
SELECT count(*) FROM h1 WHERE k = ANY ('{1,2,3,4999,5000}');
SELECT gpuidx_verify('h1_gi');

-- a scan holding an image keeps it: a cursor over one index while the
-- others are loaded still reads all its rows
BEGIN;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
SET LOCAL gpuidx.enable_customscan = off;
DECLARE c CURSOR FOR SELECT k FROM h2 WHERE k = ANY ('{7,8}');
FETCH 3 FROM c;
SELECT sum((SELECT count(*) FROM gpuidx_lookup(format('h%s_gi', i)::regclass, '{1}')))
  FROM generate_series(3, 12) i;
FETCH ALL FROM c;
COMMIT;

-- 0 means no limit: nothing is evicted
SET gpuidx.host_memory_limit = 0;
SELECT sum((SELECT count(*) FROM gpuidx_lookup(format('h%s_gi', i)::regclass, '{1}')))
  FROM generate_series(1, 12) i;
SELECT (gpuidx_info('h12_gi')->>'cache_images')::int >= 12 AS all_kept;
RESET gpuidx.host_memory_limit;

DROP SCHEMA gi_hostmem CASCADE;
