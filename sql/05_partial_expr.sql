--
-- 05_partial_expr: partial indexes and expression indexes: the functions
-- answer from the rows the index covers, the key is the expression's value,
-- and rows move in and out of a partial index as they are updated.
--
\set schema gi_partial_expr
\i sql/include/setup.sql
SET gpuidx.enable_customscan = off;

-- gi_check(idx, probes, lo, hi): every batch function on idx against scans
-- without index (the fixture; path from the repository root, where
-- pg_regress runs psql)
\i sql/include/gi_check.sql

CREATE TABLE pe (id int, k int8, flag bool, s text);
INSERT INTO pe SELECT g, ((g * 37) % 2003) - 1000, g % 3 = 0, repeat('a', g % 17)
  FROM generate_series(1, 6000) g;
INSERT INTO pe VALUES (6001, NULL, true, NULL);
CREATE TABLE pr (lo bigint[], hi bigint[], keys bigint[]);
INSERT INTO pr SELECT array_agg(g * 11 - 1100 ORDER BY g), array_agg(g * 11 - 1100 + (g % 5) * 3 ORDER BY g),
                      array_agg(g * 11 - 1100 + (g % 3) - 1 ORDER BY g)
  FROM generate_series(0, 200) g;

-- partial index on the key's own range
CREATE INDEX pe_pos ON pe USING gpuidx (k) WHERE k > 0;
SELECT (gpuidx_info('pe_pos')->>'entries')::bigint AS entries, (SELECT count(*) FROM pe WHERE k > 0) AS expected;
SELECT probe, key FROM gpuidx_lookup('pe_pos', '{-5, 0, 1, 5}') ORDER BY 1, 2;
SELECT DISTINCT probe, key FROM gpuidx_predecessor('pe_pos', '{0, 1, 2, -1000, 10000}') ORDER BY 1, 2;
SELECT DISTINCT probe, key FROM gpuidx_successor('pe_pos', '{-1000, 0, 1000, 1003}') ORDER BY 1, 2;
SELECT gpuidx_range_count('pe_pos', '{-1000, 1, 500}', '{0, 1000, 500}');
SELECT * FROM gi_check('pe_pos', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
-- the planner uses it only where the query implies the predicate
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pe WHERE k = 5 AND k > 0;
EXPLAIN (COSTS OFF) SELECT id FROM pe WHERE k = 5;
EXPLAIN (COSTS OFF) SELECT id FROM pe WHERE k = -5;
SELECT count(*) FROM pe WHERE k = 5;
RESET enable_bitmapscan;
RESET enable_seqscan;

-- partial index on another column; rows move in and out with updates
CREATE INDEX pe_flag ON pe USING gpuidx (k) WHERE flag;
SELECT (gpuidx_info('pe_flag')->>'entries')::bigint AS entries, (SELECT count(k) FROM pe WHERE flag) AS expected;
SELECT * FROM gi_check('pe_flag', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
UPDATE pe SET flag = NOT flag WHERE id % 7 = 0;
SELECT * FROM gi_check('pe_flag', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pe WHERE flag AND k = ANY ('{10, 20}');
SELECT id, k FROM pe WHERE flag AND k = ANY ('{10, 20, 30}') ORDER BY id;
RESET enable_bitmapscan;
RESET enable_seqscan;
SELECT id, k FROM pe WHERE flag AND k + 0 IN (10, 20, 30) ORDER BY id;

-- expression indexes: int4 expression over an int8 column, over text
CREATE INDEX pe_div ON pe USING gpuidx (((k / 10)::int4));
CREATE INDEX pe_len ON pe USING gpuidx (length(s));
CREATE INDEX pe_neg ON pe USING gpuidx ((-k)) WHERE id <= 3000;
SELECT i, (gpuidx_info(i)->>'key_bytes')::int AS key_bytes, (gpuidx_info(i)->>'entries')::bigint AS entries
  FROM unnest('{pe_div, pe_len, pe_neg}'::regclass[]) i;
-- the key returned is the expression's value
SELECT r.probe, r.key, pe.k FROM gpuidx_lookup('pe_div', '{50, -50}') r JOIN pe ON pe.ctid = r.ctid
 ORDER BY 1, 3;
SELECT r.probe, r.key, count(*) FROM gpuidx_lookup('pe_len', '{0, 16, 17}') r GROUP BY 1, 2 ORDER BY 1, 2;
SELECT DISTINCT r.probe, r.key FROM gpuidx_predecessor('pe_len', '{100, 15, -1}') r ORDER BY 1, 2;
SELECT * FROM gi_check('pe_div', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
SELECT * FROM gi_check('pe_len', '{0, 1, 5, 16, 17, 100, -1, NULL}', '{0, 3, 16, 20}', '{2, 3, 100, 10}');
SELECT * FROM gi_check('pe_neg', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
SET enable_seqscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT id FROM pe WHERE (k / 10)::int4 = 7;
SELECT id, k FROM pe WHERE (k / 10)::int4 = 7 ORDER BY id;
EXPLAIN (COSTS OFF) SELECT length(s) FROM pe WHERE length(s) > 14 ORDER BY length(s) DESC LIMIT 3;
SELECT length(s) FROM pe WHERE length(s) > 14 ORDER BY length(s) DESC LIMIT 3;
RESET enable_bitmapscan;
RESET enable_seqscan;
SELECT id, k FROM pe WHERE (k / 10)::int4 + 0 = 7 ORDER BY id;
-- writes through expression and partial indexes
UPDATE pe SET k = k + 1 WHERE id % 5 = 0;
DELETE FROM pe WHERE id % 11 = 0;
INSERT INTO pe SELECT g, ((g * 41) % 2003) - 1000, g % 2 = 0, repeat('b', g % 23)
  FROM generate_series(6002, 7000) g;
SELECT * FROM gi_check('pe_pos', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
SELECT * FROM gi_check('pe_flag', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
SELECT * FROM gi_check('pe_div', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));
SELECT * FROM gi_check('pe_len', '{0, 1, 5, 16, 17, 22, 23, 100, -1, NULL}', '{0, 3, 16, 20}', '{2, 3, 100, 10}');
SELECT * FROM gi_check('pe_neg', (SELECT keys FROM pr), (SELECT lo FROM pr), (SELECT hi FROM pr));

SET client_min_messages = warning;
DROP SCHEMA gi_partial_expr CASCADE;
