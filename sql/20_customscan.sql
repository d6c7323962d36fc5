-- GpuIndexScan: every supported qual shape gives the rows a seq scan gives,
-- compared with EXCEPT ALL both ways; plans shown without costs.
CREATE EXTENSION IF NOT EXISTS gpuidx;
SET client_min_messages = warning;
DROP SCHEMA IF EXISTS cs CASCADE;
CREATE SCHEMA cs;
SET search_path = cs, public;
RESET client_min_messages;
-- (count(*) over these scans would be GpuIndexAgg's: sql/33_agg.sql)
SET gpuidx.enable_customagg = off;

SELECT setseed(0.2);
CREATE TABLE t (id int, k int8, k4 int4, pad text);
INSERT INTO t
SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE (random() * 2000)::int8 - 1000 END,
       (random() * 200)::int4 - 100, 'x'
FROM generate_series(1, 20000) g;
INSERT INTO t VALUES (20001, 9223372036854775807, 2147483647, 'max'),
                     (20002, -9223372036854775808, -2147483648, 'min');
CREATE INDEX t_k ON t USING gpuidx (k);
CREATE INDEX t_k4 ON t USING gpuidx (k4);
ANALYZE t;

-- The reference: the same query with every index path off.
CREATE FUNCTION check_same(q text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	a bigint;
	b bigint;
	n bigint;
	line text;
	used boolean := false;
BEGIN
	SET LOCAL gpuidx.enable_customscan = on;
	SET LOCAL enable_seqscan = off;
	SET LOCAL enable_indexscan = off;
	SET LOCAL enable_bitmapscan = off;
	FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
		used := used OR line LIKE '%GpuIndexScan%';
	END LOOP;
	EXECUTE 'CREATE TEMP TABLE got ON COMMIT DROP AS ' || q;
	SET LOCAL gpuidx.enable_customscan = off;
	SET LOCAL enable_seqscan = on;
	EXECUTE 'CREATE TEMP TABLE want ON COMMIT DROP AS ' || q;
	SELECT count(*) INTO a FROM (SELECT * FROM got EXCEPT ALL SELECT * FROM want) x;
	SELECT count(*) INTO b FROM (SELECT * FROM want EXCEPT ALL SELECT * FROM got) x;
	SELECT count(*) INTO n FROM want;
	DROP TABLE got;
	DROP TABLE want;
	RETURN format('gpuscan=%s extra=%s missing=%s rows=%s', used, a, b,
				  CASE WHEN n > 0 THEN 'some' ELSE 'none' END);
END $$;

SET enable_seqscan = off;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE k = ANY('{1,2,3}');
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE k IN (5, 6) OR k BETWEEN 100 AND 120;
EXPLAIN (COSTS OFF) SELECT id FROM t WHERE 10 > k AND k >= -10 AND pad = 'x';
EXPLAIN (COSTS OFF) SELECT * FROM t WHERE k4 = ANY('{1,3000000000}'::bigint[]);
RESET enable_seqscan;
RESET enable_indexscan;
RESET enable_bitmapscan;

SELECT check_same($q$SELECT id, k FROM t WHERE k = ANY('{1,2,3,-1000,1000,NULL}')$q$);
SELECT check_same($q$SELECT id, k FROM t WHERE k = ANY('{}'::int8[])$q$);
SELECT check_same($q$SELECT id, k FROM t WHERE k = ANY(NULL::int8[])$q$);
SELECT check_same($q$SELECT id, k FROM t WHERE k = (SELECT NULL::int8)$q$);
SELECT check_same($q$SELECT id, k FROM t WHERE k IN (5, 6) OR k BETWEEN 100 AND 120$q$);
SELECT check_same($q$SELECT id, k FROM t WHERE k < -990 OR k > 990$q$);
SELECT check_same($q$SELECT id, k FROM t WHERE k <= -9223372036854775808 OR k >= 9223372036854775807$q$);
SELECT check_same($q$SELECT id, k FROM t WHERE k < -9223372036854775808$q$);
SELECT check_same($q$SELECT id, k FROM t WHERE k > 9223372036854775807$q$);
SELECT check_same($q$SELECT id, k FROM t WHERE 10 > k AND k >= -10 AND pad = 'x'$q$);
SELECT check_same($q$SELECT id, k FROM t WHERE (k BETWEEN 0 AND 50 AND k <> 25) OR k = 700$q$);
SELECT check_same($q$SELECT id, k FROM t WHERE k BETWEEN 50 AND 0$q$);
SELECT check_same($q$SELECT id FROM t WHERE k = (SELECT 7::int8)$q$);
SELECT check_same($q$SELECT id FROM t WHERE k = ANY(ARRAY(SELECT generate_series(-1000, 1000, 7)::int8))$q$);
SELECT check_same($q$SELECT id, k4 FROM t WHERE k4 = ANY('{1,3000000000,-3000000000}'::bigint[])$q$);
SELECT check_same($q$SELECT id, k4 FROM t WHERE k4 > 2000000000::int8 OR k4 < -50::int2$q$);
SELECT check_same($q$SELECT id, k4 FROM t WHERE k4 >= 2147483647 OR k4 <= -2147483648$q$);

-- ctid comes out right, and UPDATE / DELETE through the scan work.
SELECT check_same($q$SELECT ctid AS tid, id, k FROM t WHERE k = ANY('{1,2,3,-1000,1000}')$q$);
SET enable_seqscan = off;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) UPDATE t SET pad = 'y' WHERE k = ANY('{7,8}');
UPDATE t SET pad = 'y' WHERE k = ANY('{7,8}');
RESET enable_seqscan;
RESET enable_indexscan;
RESET enable_bitmapscan;
SELECT count(*) = (SELECT count(*) FROM t WHERE k IN (7, 8)) AS all_updated
FROM t WHERE pad = 'y';

-- Updated, deleted and rolled-back rows.
UPDATE t SET k = k + 1 WHERE id % 10 = 0;
DELETE FROM t WHERE id % 13 = 0;
BEGIN;
INSERT INTO t SELECT g, 5, 5, 'rolled back' FROM generate_series(30001, 30100) g;
ROLLBACK;
SELECT check_same($q$SELECT id, k FROM t WHERE k IN (4, 5, 6) OR k BETWEEN 300 AND 310$q$);
-- key only: no column but k is needed, so all-visible pages skip the heap
SELECT check_same($q$SELECT k FROM t WHERE k IN (4, 5, 6) OR k BETWEEN 300 AND 310$q$);
SELECT check_same($q$SELECT count(*) AS n FROM t WHERE k BETWEEN -500 AND 500$q$);
VACUUM t;
SELECT check_same($q$SELECT id, k FROM t WHERE k IN (4, 5, 6) OR k BETWEEN 300 AND 310$q$);
SELECT check_same($q$SELECT k FROM t WHERE k IN (4, 5, 6) OR k BETWEEN 300 AND 310$q$);
SELECT check_same($q$SELECT k4 FROM t WHERE k4 = ANY('{1,2,3,-100,100}'::int8[])$q$);
SELECT check_same($q$SELECT count(*) AS n FROM t WHERE k BETWEEN -500 AND 500$q$);
SET enable_seqscan = off;
SET enable_indexscan = off;
SET enable_bitmapscan = off;
EXPLAIN (COSTS OFF) SELECT k FROM t WHERE k IN (4, 5, 6);
EXPLAIN (COSTS OFF) SELECT k, id FROM t WHERE k IN (4, 5, 6);
RESET enable_seqscan;
RESET enable_indexscan;
RESET enable_bitmapscan;

-- Generic plans with parameters, and rescans as the inner side of a join.
PREPARE q(int8[], int8, int8) AS
	SELECT count(*) FROM t WHERE k = ANY($1) OR k BETWEEN $2 AND $3;
SET plan_cache_mode = force_generic_plan;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_indexscan = off;
EXPLAIN (COSTS OFF) EXECUTE q('{1}', 0, 0);
EXECUTE q('{1,2,3}', 10, 20);
EXECUTE q('{}', 20, 10);
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_indexscan;
SET gpuidx.enable_customscan = off;
EXECUTE q('{1,2,3}', 10, 20);
EXECUTE q('{}', 20, 10);
RESET gpuidx.enable_customscan;
RESET plan_cache_mode;
DEALLOCATE q;

CREATE TABLE outer_keys (lo int8, hi int8);
INSERT INTO outer_keys VALUES (1, 3), (100, 100), (500, 490), (-5, 5);
SELECT check_same($q$SELECT o.lo, t.id FROM outer_keys o, LATERAL (SELECT id FROM t WHERE k BETWEEN o.lo AND o.hi OR k = -o.lo) t$q$);

-- A cursor moving both ways sees the same rows.
BEGIN;
SET LOCAL enable_seqscan = off;
SET LOCAL enable_bitmapscan = off;
SET LOCAL enable_indexscan = off;
DECLARE c SCROLL CURSOR FOR SELECT id FROM t WHERE k = ANY('{1,2}') ORDER BY id;
FETCH 2 FROM c;
FETCH BACKWARD 1 FROM c;
FETCH LAST FROM c;
CLOSE c;
COMMIT;
SELECT count(*) FROM t WHERE k = ANY('{1,2}');

-- Row-level security applies to the scan like to any other.
CREATE ROLE gpuidx_cs_reader;
GRANT USAGE ON SCHEMA cs TO gpuidx_cs_reader;
GRANT SELECT ON t TO gpuidx_cs_reader;
ALTER TABLE t ENABLE ROW LEVEL SECURITY;
CREATE POLICY even_only ON t FOR SELECT TO gpuidx_cs_reader USING (id % 2 = 0);
SET ROLE gpuidx_cs_reader;
SET enable_seqscan = off;
SET enable_bitmapscan = off;
SET enable_indexscan = off;
SELECT count(*) AS odd_rows_seen FROM t WHERE k = ANY('{1,2,3,4,5}') AND id % 2 = 1;
SELECT count(*) > 0 AS even_rows_seen FROM t WHERE k = ANY('{1,2,3,4,5}');
RESET enable_seqscan;
RESET enable_bitmapscan;
RESET enable_indexscan;
RESET ROLE;

DROP SCHEMA cs CASCADE;
DROP ROLE gpuidx_cs_reader;
