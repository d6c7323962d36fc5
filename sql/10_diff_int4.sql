--
-- 10_diff_int4: the differential test against PostgreSQL's btree on int4
-- keys, with the index in the suite's default structure.
-- The test itself is sql/include/differential.sql (its header says what
-- each variable means); pg_regress runs psql from the repository root, so
-- the path is from there.
--
\set schema gi_diff_int4
\set type int4
\set structure default
\set seed 0.4242
\set rows 40000
\set probes 3200
\set wide '(random() * 4294967295 - 2147483648)'
\set outside '{2147483648, -2147483649, 1099511627776, -1099511627776, 9223372036854775807, -9223372036854775808, 4294967296, -4294967296}'
\i sql/include/differential.sql
