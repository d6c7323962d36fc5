--
-- 14_batch_insert: new entries reach a cached B+ tree image by batch
-- insertion instead of a rebuild (gpuidx_info: inserted, insert_batches); a
-- fold that removes nothing is followed without a reload; a VACUUM that
-- removes entries reloads; vEB images are rebuilt.  Answers stay those of a
-- plain scan through interleaved inserts, updates, deletes and VACUUM.
--
\set schema gi_binsert
\i sql/include/setup.sql

-- Service mode (gpuidx in shared_preload_libraries) shares images between
-- backends: batch insertion into a backend's own image, what this file
-- tests, does not happen there (t/100_service.pl tests its refreshes).
SELECT current_setting('shared_preload_libraries') ~ 'gpuidx' AS service_mode \gset
\if :service_mode
\echo 'service mode: skipped'
\quit
\endif
SET gpuidx.pending_limit = 1000000;

-- Differences between gpuidx's batch answers and plain scans' (no index
-- path at all): lookup rows; predecessor keys by a running max over keys and
-- probes in one sorted pass; range counts by running counts of keys at each
-- bound.  Linear-ish in keys + probes, so it stays fast on every engine.
CREATE FUNCTION bi_diff(idx regclass) RETURNS bigint LANGUAGE plpgsql AS $f$
DECLARE
  tbl regclass := (SELECT indrelid FROM pg_index WHERE indexrelid = idx);
  probes bigint[] := (SELECT array_agg(p::bigint ORDER BY i) FROM bi_probe);
  his bigint[] := (SELECT array_agg(p::bigint + 40 ORDER BY i) FROM bi_probe);
  d bigint := 0; x bigint;
BEGIN
  PERFORM set_config('enable_indexscan', 'off', true);
  PERFORM set_config('enable_indexonlyscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  PERFORM set_config('gpuidx.enable_customscan', 'off', true);
  EXECUTE format('SELECT count(*) FROM ((SELECT probe, key, ctid FROM gpuidx_lookup(%L, $1)
                    EXCEPT ALL SELECT u.i::int, t.k, t.ctid FROM unnest($1) WITH ORDINALITY u(p, i) JOIN %s t ON t.k = u.p)
                  UNION ALL (SELECT u.i::int, t.k, t.ctid FROM unnest($1) WITH ORDINALITY u(p, i) JOIN %s t ON t.k = u.p
                    EXCEPT ALL SELECT probe, key, ctid FROM gpuidx_lookup(%L, $1))) z', idx, tbl, tbl, idx)
    INTO x USING probes;
  d := d + x;
  EXECUTE format('WITH ev AS (SELECT k::bigint AS v, 0 AS t, NULL::int AS i FROM %s WHERE k IS NOT NULL
                              UNION ALL SELECT u.p, 1, u.i::int FROM unnest($1) WITH ORDINALITY u(p, i)),
                       ref AS (SELECT i, m FROM (SELECT t, i, max(v) FILTER (WHERE t = 0)
                                                   OVER (ORDER BY v, t ROWS UNBOUNDED PRECEDING) AS m FROM ev) r
                                WHERE t = 1 AND m IS NOT NULL),
                       got AS (SELECT DISTINCT probe AS i, key AS m FROM gpuidx_predecessor(%L, $1))
                  SELECT count(*) FROM ((SELECT * FROM ref EXCEPT SELECT * FROM got)
                                        UNION ALL (SELECT * FROM got EXCEPT SELECT * FROM ref)) z', tbl, idx)
    INTO x USING probes;
  d := d + x;
  EXECUTE format('WITH ev AS (SELECT k::bigint AS v, 0 AS t, NULL::int AS i FROM %s WHERE k IS NOT NULL
                              UNION ALL SELECT u.hi, 1, u.i::int FROM unnest($1, $2) WITH ORDINALITY u(lo, hi, i)
                              UNION ALL SELECT u.lo, -1, u.i::int FROM unnest($1, $2) WITH ORDINALITY u(lo, hi, i)),
                       run AS (SELECT t, i, count(*) FILTER (WHERE t = 0)
                                 OVER (ORDER BY v, t ROWS UNBOUNDED PRECEDING) AS c FROM ev),
                       ref AS (SELECT i, max(c) FILTER (WHERE t = 1) - max(c) FILTER (WHERE t = -1) AS c
                                 FROM run WHERE t <> 0 GROUP BY i)
                  SELECT count(*) FROM unnest(gpuidx_range_count(%L, $1, $2)) WITH ORDINALITY g(c, i)
                  JOIN ref USING (i) WHERE g.c <> ref.c', tbl, idx)
    INTO x USING probes, his;
  RETURN d + x;
END $f$;

-- The insertion counters of the index's image in this backend.
CREATE FUNCTION bi_counts(idx regclass, OUT inserted bigint, OUT batches bigint,
                          OUT entries bigint) LANGUAGE sql AS $$
  SELECT (j->>'inserted')::bigint, (j->>'insert_batches')::bigint, (j->>'entries')::bigint
    FROM gpuidx_info(idx) j
$$;

-- int4 keys with duplicates, negatives, the type's extremes and a NULL.
CREATE TABLE bi (id int, k int4);
INSERT INTO bi SELECT i, (i * 7919) % 20011 - 10000 FROM generate_series(1, 20000) i;
INSERT INTO bi VALUES (20001, 2147483647), (20002, -2147483648), (20003, NULL);
CREATE INDEX bi_gi ON bi USING gpuidx (k) WITH (structure = btree);
CREATE TABLE bi_probe AS
  SELECT i, (i * 37) % 20200 - 10100 AS p FROM generate_series(1, 3000) i
  UNION ALL VALUES (3001, 2147483647), (3002, -2147483648), (3003, 2147483646), (3004, 0);
SELECT bi_diff('bi_gi') AS diffs, * FROM bi_counts('bi_gi');

-- Inserts between queries: each batch goes into the cached image.
INSERT INTO bi SELECT 30000 + i, (i * 104729) % 30011 - 15000 FROM generate_series(1, 500) i;
SELECT bi_diff('bi_gi') AS diffs, * FROM bi_counts('bi_gi');
-- 400 copies of one key: a skewed batch, one run over many leaves
INSERT INTO bi SELECT 40000 + i, 1234 FROM generate_series(1, 400) i;
SELECT bi_diff('bi_gi') AS diffs, * FROM bi_counts('bi_gi');
-- keys below and above every key so far
INSERT INTO bi SELECT 50000 + i, CASE WHEN i % 2 = 0 THEN -2147483648 + i ELSE 2147483647 - i END
  FROM generate_series(1, 300) i;
SELECT bi_diff('bi_gi') AS diffs, * FROM bi_counts('bi_gi');
-- a rolled-back insert leaves entries whose rows are invisible
BEGIN;
INSERT INTO bi SELECT 60000 + i, i FROM generate_series(1, 200) i;
ROLLBACK;
SELECT bi_diff('bi_gi') AS diffs, * FROM bi_counts('bi_gi');
-- updates (new entries) and deletes (dead ones) mixed in
UPDATE bi SET k = k + 1 WHERE id % 97 = 0;
DELETE FROM bi WHERE id % 89 = 0;
SELECT bi_diff('bi_gi') AS diffs, * FROM bi_counts('bi_gi');
SELECT gpuidx_verify('bi_gi') AS verified;

-- A fold that removes nothing: the image follows the new generation and
-- keeps its insertion counters (a reload would reset them).
CREATE TABLE bi2 (id int, k int8);
INSERT INTO bi2 SELECT i, (i % 3001) * 5 - 7000 FROM generate_series(1, 9000) i;
CREATE INDEX bi2_gi ON bi2 USING gpuidx (k) WITH (structure = btree);
SELECT (bi_counts('bi2_gi')).entries;
INSERT INTO bi2 SELECT 10000 + i, i * 3 FROM generate_series(1, 700) i;
SELECT * FROM bi_counts('bi2_gi');
SELECT (gpuidx_info('bi2_gi')->>'pending_entries')::int AS pending_before_fold;
VACUUM bi2;                  -- no dead rows: the pending list folds, nothing removed
SELECT (gpuidx_info('bi2_gi')->>'pending_entries')::int AS pending_after_fold, * FROM bi_counts('bi2_gi');
CREATE TABLE bi_probe_save AS TABLE bi_probe;
TRUNCATE bi_probe;
INSERT INTO bi_probe SELECT i, i * 7 - 8000 FROM generate_series(1, 3000) i;
SELECT bi_diff('bi2_gi') AS diffs;
-- pending entries after the fold go into the followed image
INSERT INTO bi2 SELECT 20000 + i, -i * 11 FROM generate_series(1, 300) i;
SELECT bi_diff('bi2_gi') AS diffs, * FROM bi_counts('bi2_gi');
-- folds by gpuidx.pending_limit in the middle of an INSERT (the image had
-- not seen all the folded entries: it reloads)
SET gpuidx.pending_limit = 100;
INSERT INTO bi2 SELECT 30000 + i, i FROM generate_series(1, 250) i;
SELECT (gpuidx_info('bi2_gi')->>'pending_entries')::int AS pending, bi_diff('bi2_gi') AS diffs;
RESET gpuidx.pending_limit;
-- a VACUUM that removes entries: a new generation the image cannot follow
DELETE FROM bi2 WHERE id % 10 = 0;
VACUUM bi2;
SELECT * FROM bi_counts('bi2_gi');
SELECT bi_diff('bi2_gi') AS diffs, gpuidx_verify('bi2_gi') AS verified;

-- gpuidx.enable_batch_insert = off rebuilds instead; same answers.
SET gpuidx.enable_batch_insert = off;
INSERT INTO bi2 SELECT 40000 + i, i * 13 FROM generate_series(1, 200) i;
SELECT bi_diff('bi2_gi') AS diffs, * FROM bi_counts('bi2_gi');
RESET gpuidx.enable_batch_insert;

-- A vEB image is rebuilt on change: no insertion counters, same answers.
TRUNCATE bi_probe;
INSERT INTO bi_probe TABLE bi_probe_save;
CREATE TABLE bi3 (id int, k int4);
INSERT INTO bi3 SELECT i, (i * 7919) % 20011 - 10000 FROM generate_series(1, 5000) i;
CREATE INDEX bi3_gi ON bi3 USING gpuidx (k) WITH (structure = veb);
SELECT bi_diff('bi3_gi') AS diffs;
INSERT INTO bi3 SELECT 10000 + i, i * 3 FROM generate_series(1, 300) i;
SELECT bi_diff('bi3_gi') AS diffs, * FROM bi_counts('bi3_gi');

-- A scan holding the image while new entries arrive keeps its own version;
-- the statement after it sees the new entries.
BEGIN;
DECLARE c CURSOR FOR SELECT k FROM bi2 WHERE k BETWEEN 0 AND 90 ORDER BY k;
FETCH 3 FROM c;
INSERT INTO bi2 VALUES (99999, 1), (99998, 2);
SELECT count(*) AS in_range FROM gpuidx_range('bi2_gi', ARRAY[0]::bigint[], ARRAY[90]::bigint[]);
FETCH 3 FROM c;
COMMIT;
SELECT bi_diff('bi2_gi') AS diffs;

-- Many small batches in one session: the new entries stay in a delta
-- beside the backend's sorted arrays (no copy of all entries per refresh)
-- until it passes its limit (4096 entries here), when one refresh merges it
-- away; every access path reads through it.
CREATE TABLE bi4 (id int, k int4);
INSERT INTO bi4 SELECT i, (i * 7919) % 3001 - 1500 FROM generate_series(1, 30000) i;
CREATE INDEX bi4_gi ON bi4 USING gpuidx (k) WITH (structure = btree);
TRUNCATE bi_probe;
INSERT INTO bi_probe SELECT i, (i * 13) % 3200 - 1600 FROM generate_series(1, 2000) i;
CREATE TABLE bi4_log (round int, diffs bigint, plan_diffs bigint, delta bigint, verified bool);
DO $$
DECLARE r int; ks int[] := (SELECT array_agg(p) FROM bi_probe);
BEGIN
  -- load the image, engine part too (the host answers small batches without it)
  PERFORM count(*) FROM gpuidx_lookup('bi4_gi', ks::bigint[]);
  FOR r IN 1 .. 25 LOOP
    -- a few rows: duplicates of existing keys (TIDs after theirs), new keys,
    -- and keys below and above all others
    INSERT INTO bi4 SELECT 100000 * r + i, ((r * 31 + i * 17) % 3600) - 1800 FROM generate_series(1, 180) i;
    INSERT INTO bi4 VALUES (100000 * r + 99, -2147483648 + r), (100000 * r + 98, 2147483647 - r);
    IF r % 5 = 0 THEN
      UPDATE bi4 SET k = k + 1 WHERE id % 997 = r;
      DELETE FROM bi4 WHERE id % 991 = r;
    END IF;
    -- GpuIndexScan in odd rounds, the AM's bitmap or index scans in even ones
    PERFORM set_config('gpuidx.enable_customscan', CASE WHEN r % 2 = 1 THEN 'on' ELSE 'off' END, true);
    INSERT INTO bi4_log
    SELECT r, bi_diff('bi4_gi'),
           (SELECT count(*) FROM ((SELECT k, ctid FROM bi4 WHERE k = ANY(ks)
                                    EXCEPT ALL SELECT k, ctid FROM bi4 WHERE k + 0 = ANY(ks))
                                  UNION ALL
                                  (SELECT k, ctid FROM bi4 WHERE k + 0 = ANY(ks)
                                    EXCEPT ALL SELECT k, ctid FROM bi4 WHERE k = ANY(ks))) z),
           (gpuidx_info('bi4_gi')->>'delta_entries')::bigint,
           gpuidx_verify('bi4_gi');
  END LOOP;
END $$;
SELECT count(*) AS rounds, sum(diffs) AS diffs, sum(plan_diffs) AS plan_diffs,
       bool_and(verified) AS verified, max(delta) > 0 AS used_a_delta,
       bool_or(delta < lag) AS delta_merged_away
  FROM (SELECT *, lag(delta) OVER (ORDER BY round) FROM bi4_log) l;
SELECT * FROM bi_counts('bi4_gi');

DROP SCHEMA gi_binsert CASCADE;
