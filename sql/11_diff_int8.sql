--
-- 11_diff_int8: the differential test against PostgreSQL's btree on int8
-- keys, with the index in the suite's default structure.
-- The test itself is sql/include/differential.sql (its header says what
-- each variable means); pg_regress runs psql from the repository root, so
-- the path is from there.
--
\set schema gi_diff_int8
\set type int8
\set structure default
\set seed 0.1717
\set rows 30000
\set probes 3200
\set wide '((random() * 2 - 1) * 9.2e18)'
\set outside '{9223372036854775807, -9223372036854775808, 9223372036854775806, -9223372036854775807, 4294967296, -4294967296, 2147483648, -2147483649}'
\i sql/include/differential.sql
