--
-- 01_create: the access method, its operator classes, CREATE INDEX,
-- reloptions, what CREATE INDEX refuses, and gpuidx_info's stable keys.
--
\set schema gi_create
\i sql/include/setup.sql

-- the access method and its operator classes
SELECT amname, amtype FROM pg_am WHERE amname = 'gpuidx';
SELECT c.opcname, c.opcintype::regtype, c.opcdefault, f.opfname
  FROM pg_opclass c JOIN pg_opfamily f ON f.oid = c.opcfamily
 WHERE c.opcmethod = (SELECT oid FROM pg_am WHERE amname = 'gpuidx')
 ORDER BY c.opcintype::regtype::text;
-- one family with all 9 type pairs x 5 strategies (as btree's integer_ops)
SELECT count(DISTINCT amopfamily) AS families, count(*) AS operators
  FROM pg_amop WHERE amopmethod = (SELECT oid FROM pg_am WHERE amname = 'gpuidx');
SELECT amoplefttype::regtype, amoprighttype::regtype,
       string_agg(amopstrategy || ':' || amopopr::regoperator::text, ' ' ORDER BY amopstrategy) AS ops
  FROM pg_amop WHERE amopmethod = (SELECT oid FROM pg_am WHERE amname = 'gpuidx')
 GROUP BY 1, 2 ORDER BY 1::text, 2::text;
-- gpuidx's operators are exactly btree's integer_ops operators
SELECT count(*) AS not_in_btree FROM (
  SELECT amoplefttype, amoprighttype, amopstrategy, amopopr FROM pg_amop
   WHERE amopmethod = (SELECT oid FROM pg_am WHERE amname = 'gpuidx')
  EXCEPT
  SELECT amoplefttype, amoprighttype, amopstrategy, amopopr FROM pg_amop
   WHERE amopfamily = (SELECT oid FROM pg_opfamily WHERE opfname = 'integer_ops'
                        AND opfmethod = (SELECT oid FROM pg_am WHERE amname = 'btree'))) x;
-- the AM's validator accepts its own operator classes
SELECT opcname, amvalidate(oid) FROM pg_opclass
 WHERE opcmethod = (SELECT oid FROM pg_am WHERE amname = 'gpuidx') ORDER BY opcname;

-- CREATE INDEX on each key type
CREATE TABLE t2 (id int, k int2);
CREATE TABLE t4 (id int, k int4);
CREATE TABLE t8 (id int, k int8);
INSERT INTO t2 SELECT g, (g % 50) - 25 FROM generate_series(1, 1000) g;
INSERT INTO t4 SELECT g, (g % 50) - 25 FROM generate_series(1, 1000) g;
INSERT INTO t8 SELECT g, (g % 50) - 25 FROM generate_series(1, 1000) g;
INSERT INTO t4 VALUES (1001, NULL), (1002, NULL);
CREATE INDEX t2_gi ON t2 USING gpuidx (k);
CREATE INDEX t4_gi ON t4 USING gpuidx (k);
CREATE INDEX t8_gi ON t8 USING gpuidx (k) WITH (structure = btree);
-- the build records the structure gpuidx.default_structure chose as the
-- index's option (shown as <default>: the suite runs under both defaults)
SELECT c.relname, a.amname,
       replace(pg_get_indexdef(c.oid), 'structure=' || current_setting('gpuidx.default_structure'),
               'structure=<default>')
  FROM pg_class c JOIN pg_am a ON a.oid = c.relam
 WHERE c.relnamespace = 'gi_create'::regnamespace AND c.relkind = 'i' AND c.relname <> 't8_gi'
 ORDER BY 1;
SELECT pg_get_indexdef('t8_gi'::regclass);

-- gpuidx_info: the keys are there; print only the stable ones
SELECT gpuidx_info('t4_gi') ?& ARRAY['structure', 'engine', 'key_bytes', 'entries',
       'base_entries', 'pending_entries', 'generation', 'levels', 'host_bytes',
       'device_bytes', 'build_ms', 'last_query_ms'] AS has_all_keys;
-- (t2_gi and t4_gi take gpuidx.default_structure: the suite runs with both)
SELECT i, j->>'structure' = CASE WHEN i = 't8_gi'::regclass THEN 'btree'
                                 ELSE current_setting('gpuidx.default_structure') END AS structure_ok,
       (j->>'key_bytes')::int AS key_bytes,
       (j->>'entries')::bigint AS entries, (j->>'base_entries')::bigint AS base_entries,
       (j->>'pending_entries')::bigint AS pending_entries,
       j->>'engine' IN ('cpu', 'gpu') AS engine_ok,
       (j->>'levels')::int >= 1 AS levels_ok,
       (j->>'host_bytes')::bigint >= 0 AS host_bytes_ok,
       (j->>'device_bytes')::bigint >= 0 AS device_bytes_ok,
       j ? 'build_ms' AND j ? 'last_query_ms' AS timings_present,
       (j->>'generation')::bigint >= 1 AS generation_ok
  FROM (VALUES ('t2_gi'::regclass), ('t4_gi'), ('t8_gi')) v(i),
       LATERAL gpuidx_info(i) j ORDER BY 1::text;

-- a trivial query through each
SELECT count(*) FROM gpuidx_lookup('t2_gi', '{-25, 0, 24, 25}');
SELECT count(*) FROM gpuidx_lookup('t4_gi', '{-25, 0, 24, 25}');
SELECT count(*) FROM gpuidx_lookup('t8_gi', '{-25, 0, 24, 25}');

-- an empty table and an all-NULL table
CREATE TABLE te (k int8);
CREATE INDEX te_gi ON te USING gpuidx (k);
SELECT (gpuidx_info('te_gi')->>'entries')::bigint AS entries;
SELECT * FROM gpuidx_lookup('te_gi', '{1, 2}');
SELECT * FROM gpuidx_predecessor('te_gi', '{9223372036854775807}');
SELECT * FROM gpuidx_successor('te_gi', '{-9223372036854775808}');
SELECT * FROM gpuidx_range('te_gi', '{-9223372036854775808}', '{9223372036854775807}');
SELECT gpuidx_range_count('te_gi', '{-9223372036854775808}', '{9223372036854775807}');
INSERT INTO te SELECT NULL FROM generate_series(1, 100);
CREATE INDEX te_gi2 ON te USING gpuidx (k);
SELECT (gpuidx_info('te_gi2')->>'entries')::bigint AS entries;
SELECT * FROM gpuidx_predecessor('te_gi2', '{9223372036854775807}');
SELECT gpuidx_range_count('te_gi2', '{-9223372036854775808}', '{9223372036854775807}');
-- first rows arrive in an index built empty
INSERT INTO te VALUES (5), (5), (7);
SELECT probe, key FROM gpuidx_lookup('te_gi', '{5, 7, 6}') ORDER BY 1, 2;
SELECT probe, key FROM gpuidx_predecessor('te_gi2', '{6}') ORDER BY 1, 2;

-- reloptions
CREATE INDEX t8_gi_btree ON t8 USING gpuidx (k) WITH (structure = 'btree');
SELECT gpuidx_info('t8_gi_btree')->>'structure' AS structure;
SELECT reloptions FROM pg_class WHERE oid = 't8_gi_btree'::regclass;
CREATE INDEX t8_gi_veb ON t8 USING gpuidx (k) WITH (structure = veb);
SELECT gpuidx_info('t8_gi_veb')->>'structure' AS structure,
       (gpuidx_info('t8_gi_veb')->>'entries')::bigint AS entries;
SELECT count(*) FROM gpuidx_lookup('t8_gi_veb', '{-25, 0, 24, 25}');
CREATE INDEX t8_gi_bad ON t8 USING gpuidx (k) WITH (structure = hash);
CREATE INDEX t8_gi_bad ON t8 USING gpuidx (k) WITH (nosuchoption = 1);
SELECT count(*) FROM pg_class WHERE relname = 't8_gi_bad';

-- what CREATE INDEX refuses
CREATE TABLE tx (a int4, b int4, f float8, n numeric, s text, d date);
CREATE INDEX ON tx USING gpuidx (f);
CREATE INDEX ON tx USING gpuidx (n);
CREATE INDEX ON tx USING gpuidx (s);
CREATE INDEX ON tx USING gpuidx (d);
CREATE INDEX ON tx USING gpuidx (a, b);
CREATE INDEX ON tx USING gpuidx (a) INCLUDE (s);     -- INCLUDE: fixed-width types only (31_include)
CREATE UNIQUE INDEX ON tx USING gpuidx (a);
SELECT count(*) AS indexes_on_tx FROM pg_index WHERE indrelid = 'tx'::regclass;
-- an explicit operator class
CREATE INDEX tx_a ON tx USING gpuidx (a int4_ops);
INSERT INTO tx (a) VALUES (1), (2);
SELECT probe, key FROM gpuidx_lookup('tx_a', '{2, 1}') ORDER BY 1;

SET client_min_messages = warning;
DROP SCHEMA gi_create CASCADE;
