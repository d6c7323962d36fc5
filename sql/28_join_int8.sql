--
-- 28_join_int8: the differential test of GpuIndexJoin against PostgreSQL's
-- btree with int8 keys in the inner tables (int8, int4 and int2 probes),
-- the indexes in the suite's default structure.
-- The test itself is sql/include/join_differential.sql (its header says
-- what each variable means); pg_regress runs psql from the repository root,
-- so the path is from there.
--
\set schema gi_join_int8
\set type int8
\set structure default
\set seed 0.2828
\set rows 6000
\set probes 1200
\set wide '((random() * 2 - 1) * 9.2e18)'
\set outside '{9223372036854775807, -9223372036854775808, 9223372036854775806, -9223372036854775807, 4294967296, -4294967296, 2147483648, -2147483649}'
\i sql/include/join_differential.sql
