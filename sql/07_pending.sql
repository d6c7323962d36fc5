--
-- 07_pending: inserts go to the pending list; with a low gpuidx.pending_limit
-- the list folds into the base run; answers stay right throughout, including
-- aborted and deleted pending entries, and VACUUM folds what is left.
--
\set schema gi_pending
\i sql/include/setup.sql

-- gi_check(idx, probes, lo, hi): every batch function on idx against scans
-- without index (the fixture; path from the repository root, where
-- pg_regress runs psql)
\i sql/include/gi_check.sql

CREATE TABLE pr (lo bigint[], hi bigint[], keys bigint[]);
INSERT INTO pr SELECT array_agg(g * 3 - 310 ORDER BY g), array_agg(g * 3 - 310 + g % 4 ORDER BY g),
                      array_agg(g * 3 - 310 + (g % 3) - 1 ORDER BY g)
  FROM generate_series(0, 210) g;
CREATE TABLE pl (id int, k int8) WITH (autovacuum_enabled = off);
INSERT INTO pl SELECT g, (g % 301) - 150 FROM generate_series(1, 3000) g;
CREATE INDEX pl_gi ON pl USING gpuidx (k);

-- info(): a compact view of the counters that do not depend on the engine
CREATE FUNCTION info(idx regclass, OUT entries bigint, OUT base bigint, OUT pending bigint, OUT generation bigint)
LANGUAGE sql AS $$
  SELECT (j->>'entries')::bigint, (j->>'base_entries')::bigint, (j->>'pending_entries')::bigint,
         (j->>'generation')::bigint FROM gpuidx_info(idx) j $$;
CREATE TEMP TABLE gen0 AS SELECT generation FROM info('pl_gi');
SELECT entries, base, pending FROM info('pl_gi');

SET gpuidx.pending_limit = 100;
SHOW gpuidx.pending_limit;
-- 60 entries: below the limit, all pending
INSERT INTO pl SELECT 10000 + g, 1000 + g FROM generate_series(1, 60) g;
SELECT entries, base, pending, generation = (SELECT generation FROM gen0) AS same_generation FROM info('pl_gi');
SELECT * FROM gi_check('pl_gi', (SELECT keys FROM pr) || '{1001, 1060, 1061, 5000}'::bigint[],
                    (SELECT lo FROM pr) || '{1000, -5000}'::bigint[], (SELECT hi FROM pr) || '{1030, 5000}'::bigint[]);
SELECT probe, key FROM gpuidx_predecessor('pl_gi', '{5000, 1030}') ORDER BY 1, 2;
SELECT probe, key FROM gpuidx_successor('pl_gi', '{151, 1060, 1061}') ORDER BY 1, 2;
-- pending entries of an aborted transaction and deleted pending entries
BEGIN;
INSERT INTO pl SELECT 20000 + g, 2000 + g FROM generate_series(1, 20) g;
SELECT count(*) FROM gpuidx_range('pl_gi', '{2000}', '{3000}');
ROLLBACK;
DELETE FROM pl WHERE id BETWEEN 10001 AND 10010;
SELECT pending <= 100 AS within_limit FROM info('pl_gi');
SELECT count(*) FROM gpuidx_range('pl_gi', '{1000}', '{3000}');
SELECT probe, key FROM gpuidx_successor('pl_gi', '{1000, 2000}') ORDER BY 1, 2;
SELECT probe, key FROM gpuidx_predecessor('pl_gi', '{10000}') ORDER BY 1, 2;
SELECT * FROM gi_check('pl_gi', (SELECT keys FROM pr) || '{1001, 1011, 1060, 2001, 5000}'::bigint[],
                    (SELECT lo FROM pr) || '{1000, -5000}'::bigint[], (SELECT hi FROM pr) || '{3000, 5000}'::bigint[]);
-- past the limit: the list folds (a new generation; the pending list is
-- below the limit again; nothing lost)
INSERT INTO pl SELECT 30000 + g, (g % 500) - 250 FROM generate_series(1, 250) g;
SELECT entries >= (SELECT count(k) FROM pl) AS entries_ok,
       pending < 100 AS folded, generation > (SELECT generation FROM gen0) AS new_generation
  FROM info('pl_gi');
SELECT entries = base + pending AS sums FROM info('pl_gi');
SELECT * FROM gi_check('pl_gi', (SELECT keys FROM pr) || '{1001, 1011, 1060, 2001, 5000}'::bigint[],
                    (SELECT lo FROM pr) || '{1000, -5000}'::bigint[], (SELECT hi FROM pr) || '{3000, 5000}'::bigint[]);
SELECT count(*) FROM gpuidx_range('pl_gi', '{2000}', '{3000}');

-- many small inserts, each followed by a query: the answers stay right while
-- the list fills and folds again and again
DO $$
DECLARE i int; bad bigint := 0; r record;
BEGIN
  FOR i IN 1..60 LOOP
    INSERT INTO pl SELECT 40000 + i * 100 + g, (i * 7 + g * 13) % 400 - 200 FROM generate_series(1, 9) g;
    IF i % 3 = 0 THEN DELETE FROM pl WHERE id = 40000 + (i - 1) * 100 + 5; END IF;
    FOR r IN SELECT * FROM gi_check('pl_gi', ARRAY[i - 200, i * 5 - 150, 199, -200], ARRAY[-200, i], ARRAY[i, 200]) LOOP
      bad := bad + r.missing + r.extra;
    END LOOP;
  END LOOP;
  RAISE NOTICE 'mismatches over 60 rounds: %', bad;
END $$;
SELECT pending < 100 AS below_limit, entries = base + pending AS sums FROM info('pl_gi');
SELECT * FROM gi_check('pl_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));

-- VACUUM folds the pending list and drops dead entries
SET gpuidx.pending_limit = 1000;
INSERT INTO pl SELECT 50000 + g, 3000 + g FROM generate_series(1, 30) g;
SELECT pending >= 30 AS has_pending FROM info('pl_gi');
DELETE FROM pl WHERE id % 4 = 0;
VACUUM (INDEX_CLEANUP ON) pl;
SELECT pending AS pending_after_vacuum, entries = (SELECT count(k) FROM pl) AS entries_match FROM info('pl_gi');
SELECT * FROM gi_check('pl_gi', (SELECT keys FROM pr) || '{3001, 3004, 3030}'::bigint[],
                    (SELECT lo FROM pr) || '{3000}'::bigint[], (SELECT hi FROM pr) || '{4000}'::bigint[]);

-- a larger limit keeps everything pending; lowering it folds on the next insert
SET gpuidx.pending_limit = 100000;
INSERT INTO pl SELECT 60000 + g, (g % 1000) - 500 FROM generate_series(1, 2000) g;
SELECT pending AS pending_2000 FROM info('pl_gi');
SELECT * FROM gi_check('pl_gi', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
SET gpuidx.pending_limit = 10;
INSERT INTO pl VALUES (70000, 12345);
SELECT pending < 10 AS folded FROM info('pl_gi');
SELECT * FROM gi_check('pl_gi', (SELECT keys FROM pr) || '{12345}'::bigint[], (SELECT lo FROM pr), (SELECT hi FROM pr));
RESET gpuidx.pending_limit;

SET client_min_messages = warning;
DROP SCHEMA gi_pending CASCADE;
