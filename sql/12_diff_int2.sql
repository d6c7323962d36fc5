--
-- 12_diff_int2: the differential test against PostgreSQL's btree on int2
-- keys, with the index in the suite's default structure.
-- The test itself is sql/include/differential.sql (its header says what
-- each variable means); pg_regress runs psql from the repository root, so
-- the path is from there.
--
\set schema gi_diff_int2
\set type int2
\set structure default
\set seed 0.0815
\set rows 30000
\set probes 3200
\set wide '(random() * 65535 - 32768)'
\set outside '{32768, -32769, 65536, -65536, 1099511627776, -1099511627776, 9223372036854775807, -9223372036854775808}'
\i sql/include/differential.sql
