--
-- 29_join_int2: the differential test of GpuIndexJoin against PostgreSQL's
-- btree with int2 keys in the inner tables (int8, int4 and int2 probes),
-- the indexes in the suite's default structure.
-- The test itself is sql/include/join_differential.sql (its header says
-- what each variable means); pg_regress runs psql from the repository root,
-- so the path is from there.
--
\set schema gi_join_int2
\set type int2
\set structure default
\set seed 0.2929
\set rows 8000
\set probes 1200
\set wide '(random() * 65535 - 32768)'
\set outside '{32768, -32769, 65536, -65536, 1099511627776, -1099511627776, 9223372036854775807, -9223372036854775808}'
\i sql/include/join_differential.sql
