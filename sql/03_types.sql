--
-- 03_types: int2, int4 and int8 keys at their extremes, and probes outside
-- the key type's range (answered mathematically, never wrapped).
--
\set schema gi_types
\i sql/include/setup.sql

-- probes used against every type: the type's own extremes and neighbours,
-- values just outside int2 and int4, 2^40, and the int8 extremes
CREATE TABLE probes (p bigint[]);
INSERT INTO probes VALUES (ARRAY[
  -9223372036854775808, -1099511627776, -2147483649, -2147483648, -2147483647,
  -32769, -32768, -32767, -1, 0, 1, 32766, 32767, 32768,
  2147483646, 2147483647, 2147483648, 1099511627776, 9223372036854775807,
  4294967296 + 5, 65536 + 5, -4294967296 + 5]);
-- the last three would hit key 5 if the probe were wrapped to 32 or 16 bits

CREATE TABLE k2 (id serial, k int2);
INSERT INTO k2 (k) VALUES (-32768), (-32768), (-32767), (-1), (0), (5), (32766), (32767), (32767), (NULL);
CREATE INDEX k2_gi ON k2 USING gpuidx (k);
CREATE TABLE k4 (id serial, k int4);
INSERT INTO k4 (k) VALUES (-2147483648), (-2147483648), (-2147483647), (-32769), (-1), (0), (5),
                          (32768), (2147483646), (2147483647), (2147483647), (NULL);
CREATE INDEX k4_gi ON k4 USING gpuidx (k);
CREATE TABLE k8 (id serial, k int8);
INSERT INTO k8 (k) VALUES (-9223372036854775808), (-9223372036854775808), (-9223372036854775807),
                          (-2147483649), (-1), (0), (5), (2147483648), (9223372036854775806),
                          (9223372036854775807), (9223372036854775807), (NULL);
CREATE INDEX k8_gi ON k8 USING gpuidx (k);
SELECT i, (gpuidx_info(i)->>'key_bytes')::int AS key_bytes, (gpuidx_info(i)->>'entries')::bigint AS entries
  FROM unnest(ARRAY['k2_gi', 'k4_gi', 'k8_gi']::regclass[]) i;

-- int2
SELECT r.probe, (SELECT p[r.probe] FROM probes) AS probe_value, r.key, k2.id
  FROM gpuidx_lookup('k2_gi', (SELECT p FROM probes)) r JOIN k2 ON k2.ctid = r.ctid ORDER BY 1, 3, 4;
SELECT r.probe, (SELECT p[r.probe] FROM probes) AS probe_value, r.key, k2.id
  FROM gpuidx_predecessor('k2_gi', (SELECT p FROM probes)) r JOIN k2 ON k2.ctid = r.ctid ORDER BY 1, 3, 4;
SELECT r.probe, (SELECT p[r.probe] FROM probes) AS probe_value, r.key, k2.id
  FROM gpuidx_successor('k2_gi', (SELECT p FROM probes)) r JOIN k2 ON k2.ctid = r.ctid ORDER BY 1, 3, 4;
SELECT gpuidx_range_count('k2_gi',
  '{-9223372036854775808, -9223372036854775808, 32768, -32768, 32767, -32768, 0, -2147483648, -4294967291}',
  '{9223372036854775807, -32769, 9223372036854775807, -32768, 32767, 32767, 1099511627776, 2147483647, -4294967291}');
SELECT r.probe, r.key, k2.id FROM gpuidx_range('k2_gi',
  '{-9223372036854775808, 32767, -1099511627776}',
  '{-32767, 9223372036854775807, -1}') r JOIN k2 ON k2.ctid = r.ctid ORDER BY 1, 2, 3;

-- int4
SELECT r.probe, (SELECT p[r.probe] FROM probes) AS probe_value, r.key, k4.id
  FROM gpuidx_lookup('k4_gi', (SELECT p FROM probes)) r JOIN k4 ON k4.ctid = r.ctid ORDER BY 1, 3, 4;
SELECT r.probe, (SELECT p[r.probe] FROM probes) AS probe_value, r.key, k4.id
  FROM gpuidx_predecessor('k4_gi', (SELECT p FROM probes)) r JOIN k4 ON k4.ctid = r.ctid ORDER BY 1, 3, 4;
SELECT r.probe, (SELECT p[r.probe] FROM probes) AS probe_value, r.key, k4.id
  FROM gpuidx_successor('k4_gi', (SELECT p FROM probes)) r JOIN k4 ON k4.ctid = r.ctid ORDER BY 1, 3, 4;
SELECT gpuidx_range_count('k4_gi',
  '{-9223372036854775808, -9223372036854775808, 2147483648, -2147483648, 2147483647, -2147483648, 0, -1099511627776, 4294967301}',
  '{9223372036854775807, -2147483649, 9223372036854775807, -2147483648, 2147483647, 2147483647, 1099511627776, -2147483648, 4294967301}');
SELECT r.probe, r.key, k4.id FROM gpuidx_range('k4_gi',
  '{-9223372036854775808, 2147483647, -1099511627776}',
  '{-2147483647, 9223372036854775807, -1}') r JOIN k4 ON k4.ctid = r.ctid ORDER BY 1, 2, 3;

-- int8
SELECT r.probe, (SELECT p[r.probe] FROM probes) AS probe_value, r.key, k8.id
  FROM gpuidx_lookup('k8_gi', (SELECT p FROM probes)) r JOIN k8 ON k8.ctid = r.ctid ORDER BY 1, 3, 4;
SELECT r.probe, (SELECT p[r.probe] FROM probes) AS probe_value, r.key, k8.id
  FROM gpuidx_predecessor('k8_gi', (SELECT p FROM probes)) r JOIN k8 ON k8.ctid = r.ctid ORDER BY 1, 3, 4;
SELECT r.probe, (SELECT p[r.probe] FROM probes) AS probe_value, r.key, k8.id
  FROM gpuidx_successor('k8_gi', (SELECT p FROM probes)) r JOIN k8 ON k8.ctid = r.ctid ORDER BY 1, 3, 4;
SELECT gpuidx_range_count('k8_gi',
  '{-9223372036854775808, -9223372036854775808, 9223372036854775807, 9223372036854775807, -9223372036854775807, 1, 9223372036854775807}',
  '{9223372036854775807, -9223372036854775808, 9223372036854775807, -9223372036854775808, 9223372036854775806, 0, 9223372036854775806}');
SELECT r.probe, r.key, k8.id FROM gpuidx_range('k8_gi',
  '{-9223372036854775808, 9223372036854775806, -1099511627776}',
  '{-9223372036854775807, 9223372036854775807, -1}') r JOIN k8 ON k8.ctid = r.ctid ORDER BY 1, 2, 3;

-- the same questions in SQL, through the operators (the planner may use the
-- index; out-of-range constants must not wrap either)
SET enable_seqscan = off;
SELECT id, k FROM k2 WHERE k = ANY ('{32767, 98303, -98304, 65541}'::bigint[]) ORDER BY id;
SELECT id, k FROM k4 WHERE k = ANY ('{2147483647, 6442450943, 4294967301}'::bigint[]) ORDER BY id;
SELECT id, k FROM k2 WHERE k > 32766::bigint ORDER BY id;
SELECT id, k FROM k2 WHERE k < -32767::bigint ORDER BY id;
SELECT count(*) FROM k2 WHERE k <= 1099511627776;
SELECT count(*) FROM k2 WHERE k >= -1099511627776;
SELECT count(*) FROM k2 WHERE k > 1099511627776;
SELECT count(*) FROM k4 WHERE k BETWEEN -9223372036854775808 AND 9223372036854775807;
SELECT count(*) FROM k4 WHERE k < -2147483648::bigint;
SELECT count(*) FROM k8 WHERE k >= 9223372036854775807;
SELECT count(*) FROM k8 WHERE k <= -9223372036854775808;
SELECT k FROM k4 WHERE k <= 1099511627776 ORDER BY k DESC LIMIT 1;
SELECT k FROM k4 WHERE k >= -1099511627776 ORDER BY k LIMIT 1;
SELECT k FROM k2 WHERE k::int8 = 5;
RESET enable_seqscan;

SET client_min_messages = warning;
DROP SCHEMA gi_types CASCADE;
