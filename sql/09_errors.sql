--
-- 09_errors: every bad input gets a clear error with the right SQLSTATE (or
-- the documented answer), and the session goes on working afterwards.
--
\set schema gi_errors
\i sql/include/setup.sql

\i sql/include/err.sql

CREATE TABLE e (id int, k int4, t text);
INSERT INTO e SELECT g, g % 10, 'x' FROM generate_series(1, 100) g;
CREATE INDEX e_gi ON e USING gpuidx (k);
CREATE INDEX e_bt ON e (k);
CREATE INDEX e_hash ON e USING hash (k);
CREATE SEQUENCE e_seq;
CREATE VIEW e_view AS SELECT * FROM e;

-- not a gpuidx index: 42809 wrong_object_type, from every function
SELECT err($$SELECT * FROM gpuidx_lookup('e', '{1}')$$);
SELECT err($$SELECT * FROM gpuidx_lookup('e_bt', '{1}')$$);
SELECT err($$SELECT * FROM gpuidx_lookup('e_hash', '{1}')$$);
SELECT err($$SELECT * FROM gpuidx_lookup('e_seq', '{1}')$$);
SELECT err($$SELECT * FROM gpuidx_lookup('e_view', '{1}')$$);
SELECT err($$SELECT * FROM gpuidx_lookup('pg_class', '{1}')$$);
SELECT err($$SELECT * FROM gpuidx_predecessor('e_bt', '{1}')$$);
SELECT err($$SELECT * FROM gpuidx_successor('e_bt', '{1}')$$);
SELECT err($$SELECT * FROM gpuidx_range('e_bt', '{1}', '{2}')$$);
SELECT err($$SELECT gpuidx_range_count('e_bt', '{1}', '{2}')$$);
SELECT err($$SELECT gpuidx_info('e_bt')$$);
SELECT err($$SELECT gpuidx_info('e')$$);
-- an empty batch still checks the index
SELECT err($$SELECT * FROM gpuidx_lookup('e_bt', '{}')$$);
-- a relation that does not exist
SELECT err($$SELECT * FROM gpuidx_lookup('no_such_index', '{1}')$$);
SELECT err($$SELECT * FROM gpuidx_lookup(0, '{1}')$$);
SELECT err($$SELECT * FROM gpuidx_lookup(4294967295, '{1}')$$);
SELECT err($$SELECT gpuidx_info(0)$$);
-- the plain error as a client sees it
SELECT * FROM gpuidx_lookup('e_bt', '{1}');

-- multi-dimensional probe arrays
SELECT err($$SELECT * FROM gpuidx_lookup('e_gi', '{{1, 2}, {3, 4}}')$$);
SELECT err($$SELECT * FROM gpuidx_predecessor('e_gi', '{{1}}')$$);
SELECT err($$SELECT * FROM gpuidx_successor('e_gi', '{{1, 2}, {3, 4}}')$$);
SELECT err($$SELECT * FROM gpuidx_range('e_gi', '{{1, 2}}', '{{3, 4}}')$$);
SELECT err($$SELECT * FROM gpuidx_range('e_gi', '{1, 2}', '{{3, 4}}')$$);
SELECT err($$SELECT gpuidx_range_count('e_gi', '{{1, 2}}', '{3, 4}')$$);
-- lo and hi of different lengths: 22023
SELECT err($$SELECT * FROM gpuidx_range('e_gi', '{1, 2}', '{3}')$$);
SELECT err($$SELECT * FROM gpuidx_range('e_gi', '{}', '{3}')$$);
SELECT err($$SELECT gpuidx_range_count('e_gi', '{1}', '{3, 4}')$$);
SELECT err($$SELECT gpuidx_range_count('e_gi', '{1, 2}', '{}')$$);
SELECT * FROM gpuidx_range('e_gi', '{1, 2}', '{3}');
-- lo > hi is an empty range, not an error
SELECT * FROM gpuidx_range('e_gi', '{5}', '{4}');
SELECT gpuidx_range_count('e_gi', '{5, 9223372036854775807}', '{4, -9223372036854775808}');
-- arrays whose lower bound is not 1: probe is still the 1-based position
SELECT probe, key FROM gpuidx_lookup('e_gi', '[0:2]={7, 8, 9}') GROUP BY 1, 2 ORDER BY 1, 2;
SELECT probe, count(*) FROM gpuidx_range('e_gi', '[5:6]={1, 3}', '[5:6]={1, 4}') GROUP BY 1 ORDER BY 1;
SELECT gpuidx_range_count('e_gi', '[-3:-2]={1, 3}', '{1, 4}');
-- NULL arguments
SELECT count(*) FROM gpuidx_lookup(NULL, '{1}');
SELECT count(*) FROM gpuidx_lookup('e_gi', NULL);
SELECT count(*) FROM gpuidx_range('e_gi', NULL, '{1}');
SELECT gpuidx_range_count('e_gi', NULL, NULL) IS NULL AS null_result;
SELECT gpuidx_info(NULL) IS NULL AS null_result;
-- NULL elements in range bounds: no row for that range
SELECT probe, count(*) FROM gpuidx_range('e_gi', '{1, NULL, 2}', '{1, 5, NULL}') GROUP BY 1 ORDER BY 1;
-- and a NULL count (as implemented; README does not say)
SELECT gpuidx_range_count('e_gi', '{1, NULL, 2, NULL}', '{1, 5, NULL, NULL}');

-- what CREATE INDEX refuses
SELECT err($$CREATE INDEX ON e USING gpuidx (t)$$);
SELECT err($$CREATE INDEX ON e USING gpuidx (id, k)$$);
SELECT err($$CREATE INDEX ON e USING gpuidx (k) WITH (structure = nonsense)$$);
SELECT err($$CREATE INDEX ON e USING gpuidx (k) WITH (structure = '')$$);
SELECT err($$CREATE UNIQUE INDEX ON e USING gpuidx (k)$$);

-- GUCs reject bad values
SELECT err($$SET gpuidx.engine = 'tpu'$$);
SELECT err($$SET gpuidx.pending_limit = -1$$);
SELECT err($$SET gpuidx.device_memory_limit = -1$$);
SET gpuidx.engine = 'cpu';
SHOW gpuidx.engine;
RESET gpuidx.engine;
SELECT setting IN ('auto', 'gpu', 'cpu') AS engine_ok, enumvals
  FROM pg_settings WHERE name = 'gpuidx.engine';

-- a long batch is interruptible (statement_timeout cancels it cleanly;
-- 4e6 probes each matching 10 rows)
CREATE TABLE big (a bigint[]);
INSERT INTO big SELECT array_agg(g % 10) FROM generate_series(1, 4000000) g;
SET statement_timeout = '10ms';
SELECT count(*) FROM gpuidx_lookup('e_gi', (SELECT a FROM big));
RESET statement_timeout;
-- the session and the index are fine afterwards
SELECT count(*) FROM gpuidx_lookup('e_gi', '{1, 2, 3}');
SELECT gpuidx_range_count('e_gi', '{0}', '{9}');

SET client_min_messages = warning;
DROP SCHEMA gi_errors CASCADE;
