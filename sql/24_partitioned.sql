--
-- 24_partitioned: the batch functions on a gpuidx index of a partitioned
-- table (a partitioned index, which has no pages of its own).
--
\set schema gi_part
\i sql/include/setup.sql

\i sql/include/err.sql

CREATE TABLE pt (id int, k int8) PARTITION BY RANGE (k);
CREATE TABLE pt_a PARTITION OF pt FOR VALUES FROM (MINVALUE) TO (100);
CREATE TABLE pt_b PARTITION OF pt FOR VALUES FROM (100) TO (MAXVALUE);
INSERT INTO pt SELECT g, g % 200 FROM generate_series(1, 2000) g;
CREATE INDEX ptg ON pt USING gpuidx (k);

SELECT * FROM gpuidx_lookup('ptg', '{1}');
\set idx ptg
\i sql/include/functions_err.sql

-- what the hint names: the partitions' indexes answer
SELECT c.relname, count(*)
  FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
  CROSS JOIN LATERAL gpuidx_lookup(c.oid, '{1,150}')
 WHERE i.inhparent = 'ptg'::regclass GROUP BY 1 ORDER BY 1;

-- without SELECT on the partitioned table: permission denied, nothing named
CREATE ROLE regress_gi_part_reader;
GRANT USAGE ON SCHEMA gi_part TO regress_gi_part_reader;
SET ROLE regress_gi_part_reader;
SELECT err($$SELECT * FROM gpuidx_lookup('ptg', '{1}')$$);
RESET ROLE;
REVOKE USAGE ON SCHEMA gi_part FROM regress_gi_part_reader;
DROP ROLE regress_gi_part_reader;

DROP SCHEMA gi_part CASCADE;
