--
-- 13_diff_veb: the differential test of 11_diff_int8 with the index built
-- WITH (structure = veb) whatever the default structure, on a smaller table.
-- The test itself is sql/include/differential.sql (its header says what
-- each variable means); pg_regress runs psql from the repository root, so
-- the path is from there.
--
\set schema gi_diff_veb
\set type int8
\set structure veb
\set seed 0.2323
\set rows 10000
\set probes 1600
\set wide '((random() * 2 - 1) * 9.2e18)'
\set outside '{9223372036854775807, -9223372036854775808, 9223372036854775806, -9223372036854775807, 4294967296, -4294967296, 2147483648, -2147483649}'
\i sql/include/differential.sql
