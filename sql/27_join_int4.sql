--
-- 27_join_int4: the differential test of GpuIndexJoin against PostgreSQL's
-- btree with int4 keys in the inner tables (int8, int4 and int2 probes),
-- the indexes in the suite's default structure.
-- The test itself is sql/include/join_differential.sql (its header says
-- what each variable means); pg_regress runs psql from the repository root,
-- so the path is from there.
--
\set schema gi_join_int4
\set type int4
\set structure default
\set seed 0.2727
\set rows 6000
\set probes 1200
\set wide '(random() * 4294967295 - 2147483648)'
\set outside '{2147483648, -2147483649, 1099511627776, -1099511627776, 9223372036854775807, -9223372036854775808, 4294967296, -4294967296}'
\i sql/include/join_differential.sql
