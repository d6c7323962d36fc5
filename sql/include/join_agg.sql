--
-- join_agg.sql: the tables and functions of sql/34_join_agg.sql and
-- sql/35_join_agg_parallel.sql (GpuIndexAgg over GpuIndexJoin), included
-- (psql \i) after sql/include/setup.sql set search_path to the test's
-- schema.  t (gpuidx, with INCLUDE) and tb (its btree twin) are the inner
-- tables, o and the small o* tables the outer ones; jacheck compares one
-- query's answers, state_checks every case (cases()) under each setting,
-- node_checks reads EXPLAIN ANALYZE, change_rows changes t and tb alike.
--
-- t: int8 keys that are multiples of 3 (so that keys inserted or moved
-- later, 3m+1 and 3m+2, are new ones), three rows a key (duplicates), keys
-- from -2100 to 5697 and two far ones near the int8 extremes (the second
-- twice), NULL keys.  Every included column is a function of the key alone
-- (through j), so which of a key's rows LIMIT 1 takes does not change an
-- answer; every accepted type, with NULLs, NaN, infinities, values whose
-- sums leave int8, dates and timestamps on both sides of 2000-01-01
CREATE TABLE t (id int, k int8, c_i2 int2, c_i4 int4, c_i8 int8, c_f4 float4,
                c_f8 float8, c_d date, c_ts timestamp, c_tz timestamptz,
                c_b bool, c_o oid, pad text)
  WITH (autovacuum_enabled = off);
INSERT INTO t
SELECT g, CASE WHEN g % 500 = 0 THEN NULL ELSE (j - 700) * 3 END,
       CASE WHEN j % 11 = 0 THEN NULL ELSE (j * 37 % 60000 - 30000)::int2 END,
       CASE WHEN j % 13 = 0 THEN NULL ELSE j * 1047290 - 1000000000 END,
       CASE WHEN j % 7 = 0 THEN NULL
            WHEN j % 3 = 0 THEN 9223372036854775807 - j
            WHEN j % 3 = 1 THEN -9223372036854775807 + j
            ELSE j::int8 * 1000000007 END,
       CASE WHEN j % 17 = 0 THEN NULL WHEN j = 1234 THEN 'NaN'
            WHEN j = 1345 THEN '-Infinity' ELSE j / 7.0 END,
       CASE WHEN j % 5 = 0 THEN NULL WHEN j = 1432 THEN 'Infinity'
            WHEN j = 1501 THEN '-Infinity' ELSE j * 1.25 - 3333.5 END,
       CASE WHEN j % 19 = 0 THEN NULL WHEN j = 1777 THEN 'infinity'
            ELSE date '1995-01-01' + j * 3 END,
       CASE WHEN j % 23 = 0 THEN NULL WHEN j = 77 THEN '-infinity'
            ELSE timestamp '1998-01-01' + j * interval '77 minutes' END,
       CASE WHEN j % 29 = 0 THEN NULL
            ELSE timestamptz '1999-12-31 12:00+00' + j * interval '13 hours' END,
       CASE WHEN j % 31 = 0 THEN NULL ELSE j % 3 = 0 END,
       CASE WHEN j % 37 = 0 THEN NULL ELSE (j::int8 * 2654435761 % 4294967296)::oid END,
       'pad' || g
  FROM generate_series(1, 6000) g, LATERAL (SELECT g % 2000 AS j) x;
INSERT INTO t VALUES
  (-1, -9223372036854775000, -32768, -2147483648, -9223372036854775808, 0.5,
   -1e308, '4713-01-01 BC', '4713-01-01 00:00 BC', NULL, true, 0, 'far low'),
  (-2, 9223372036854775000, 32767, 2147483647, 9223372036854775807, 3.4e38,
   1e308, '5874897-12-31', NULL, '2200-01-01 00:00+00', NULL, 4294967295, 'far high'),
  (-3, 9223372036854775000, 32767, 2147483647, 9223372036854775807, 3.4e38,
   1e308, '5874897-12-31', NULL, '2200-01-01 00:00+00', NULL, 4294967295, 'far high');
CREATE TABLE tb (LIKE t) WITH (autovacuum_enabled = off);
INSERT INTO tb SELECT * FROM t;
CREATE INDEX t_gi ON t USING gpuidx (k)
  INCLUDE (c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o);
CREATE INDEX tb_bt ON tb USING btree (k)
  INCLUDE (c_i2, c_i4, c_i8, c_f4, c_f8, c_d, c_ts, c_tz, c_b, c_o);

-- o: the outer side.  Probes across the keys (on them and between them),
-- below -2100 (their predecessor is the far low key) and above 5697 (their
-- successor the far high one), NULL probes, probes below the smallest key
-- (no predecessor: an inner join drops the row, a left join keeps it with
-- NULLs) and above the largest (no successor), the far keys themselves, and
-- the keys of the NaN, infinity and -infinity rows.  y: an int4 column
CREATE TABLE o (id int, x int8, y int4) WITH (autovacuum_enabled = off);
INSERT INTO o SELECT g, CASE WHEN g % 97 = 0 THEN NULL ELSE (g * 7919) % 8400 - 2300 END,
       (g * 31) % 1700 - 250
  FROM generate_series(1, 3000) g;
INSERT INTO o (id, x, y) VALUES
  (-1, -9223372036854775808, 1), (-2, -9223372036854775808, 2), (-3, -9223372036854775001, 3),
  (-4, 9223372036854775807, 4), (-5, 9223372036854775001, 5), (-6, -9223372036854775000, 6),
  (-7, 9223372036854775000, 7), (-8, 9223372036854774999, 8), (-9, NULL, 9),
  (-10, (1234 - 700) * 3 + 1, 10), (-11, (1345 - 700) * 3, 11), (-12, (1432 - 700) * 3 + 2, 12),
  (-13, (1501 - 700) * 3 - 1, 13), (-14, (1777 - 700) * 3, 14), (-15, (77 - 700) * 3, 15);
-- os: probes whose answers hold no NaN or infinity (keys 300 to 900)
CREATE TABLE os (id int, x int8) WITH (autovacuum_enabled = off);
INSERT INTO os SELECT g, 300 + g * 13 % 600 FROM generate_series(1, 60) g;
-- ob: probes on keys whose c_b is true (bool_and true)
CREATE TABLE ob (id int, x int8) WITH (autovacuum_enabled = off);
INSERT INTO ob SELECT j, (j - 700) * 3 FROM generate_series(3, 1500, 33) j WHERE j % 31 <> 0;
-- oe: probes near the int8 extremes only: their predecessors are the far
-- high key 5 times, the far low one once, and their successors the far high
-- key 4 times and the far low one twice (sums of the key and of c_i8 leave
-- int8), some have none
CREATE TABLE oe (id int, x int8) WITH (autovacuum_enabled = off);
INSERT INTO oe VALUES (1, 9223372036854775001), (2, 9223372036854775002), (3, 9223372036854775003),
  (4, 9223372036854775005), (5, -9223372036854774999), (6, 9223372036854774999),
  (7, 9223372036854774900), (8, -9223372036854775001), (9, -9223372036854775808),
  (10, 9223372036854775807), (11, 9223372036854774993), (12, 9223372036854774992);
-- o0: no row; on: probes none of which has a predecessor
CREATE TABLE o0 (id int, x int8) WITH (autovacuum_enabled = off);
CREATE TABLE onone (id int, x int8) WITH (autovacuum_enabled = off);
INSERT INTO onone SELECT g, -9223372036854775001 - g FROM generate_series(1, 5) g;
VACUUM ANALYZE t, tb, o, os, ob, oe, o0, onone;

-- answer_of(q): q's (rows, answer), or (0, its error's SQLSTATE and
-- message): a query that raises an error must raise the same one each way
CREATE FUNCTION answer_of(q text, OUT rows int, OUT answer text)
LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE q INTO rows, answer;
EXCEPTION WHEN OTHERS THEN
  rows := 0;
  answer := 'error ' || SQLSTATE || ': ' || SQLERRM;
END $f$;

-- jacheck(what, q): q (with @T@ for the inner table) run three ways: on the
-- btree twin tb (the reference, planner free); on t with GpuIndexJoin
-- forced (hash, merge and nested-loop joins off) and gpuidx.enable_customagg
-- on ("pushed": the plan has Custom Scan (GpuIndexAgg) and Custom Scan
-- (GpuIndexJoin); "join": it has GpuIndexJoin; both read from EXPLAIN of
-- the query as run, inside its wrapper; "gather": it has a Gather, a
-- parallel plan); on t the same way with
-- gpuidx.enable_customagg off (Aggregate over GpuIndexJoin).  Answers are
-- the result rows as text, sorted; same_on / same_off compare them with the
-- reference (IS NOT DISTINCT FROM).  Settings are put back, so it also runs
-- inside a transaction block.
CREATE FUNCTION jacheck(label text, q text, OUT what text, OUT join_node boolean,
                        OUT pushed boolean, OUT rows int, OUT same_on boolean,
                        OUT same_off boolean, OUT gather boolean)
LANGUAGE plpgsql AS $f$
DECLARE
  names text[] := '{gpuidx.enable_customagg, gpuidx.enable_customjoin, enable_hashjoin, enable_mergejoin, enable_nestloop}';
  saved text[] := '{}';
  i int;
  line text;
  agg_node boolean := false;
  wrap text := 'SELECT count(*)::int, coalesce(string_agg(x::text, '' | '' ORDER BY x::text), ''(no row)'') FROM (%s) x';
  gi text := format(wrap, replace(q, '@T@', 't'));
  ref text;
  r_on text;
  r_off text;
BEGIN
  FOR i IN 1 .. cardinality(names) LOOP
    saved := saved || current_setting(names[i]);
  END LOOP;
  what := label;
  SELECT r.rows, r.answer INTO rows, ref FROM answer_of(format(wrap, replace(q, '@T@', 'tb'))) r;
  PERFORM set_config('gpuidx.enable_customagg', 'on', true);
  PERFORM set_config('gpuidx.enable_customjoin', 'on', true);
  FOR i IN 3 .. 5 LOOP
    PERFORM set_config(names[i], 'off', true);
  END LOOP;
  join_node := false;
  gather := false;
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || gi LOOP
    gather := gather OR line LIKE '%Gather%';
    join_node := join_node OR line LIKE '%Custom Scan (GpuIndexJoin)%';
    agg_node := agg_node OR line LIKE '%Custom Scan (GpuIndexAgg)%';
  END LOOP;
  pushed := join_node AND agg_node;
  r_on := (SELECT r.answer FROM answer_of(gi) r);
  PERFORM set_config('gpuidx.enable_customagg', 'off', true);
  r_off := (SELECT r.answer FROM answer_of(gi) r);
  FOR i IN 1 .. cardinality(names) LOOP
    PERFORM set_config(names[i], saved[i], true);
  END LOOP;
  same_on := r_on IS NOT DISTINCT FROM ref;
  same_off := r_off IS NOT DISTINCT FROM ref;
END $f$;

-- the cases: (what, query).  forms are the four as-of shapes over outer
-- table %1$s with subquery columns %2$s
CREATE FUNCTION asof_form(form text, outer_table text, cols text) RETURNS text
LANGUAGE sql IMMUTABLE AS $f$
SELECT CASE form
  WHEN 'pred' THEN format('%1$s CROSS JOIN LATERAL (SELECT %2$s FROM @T@ t WHERE t.k <= %1$s.x ORDER BY t.k DESC LIMIT 1) s', outer_table, cols)
  WHEN 'pred left' THEN format('%1$s LEFT JOIN LATERAL (SELECT %2$s FROM @T@ t WHERE t.k <= %1$s.x ORDER BY t.k DESC LIMIT 1) s ON true', outer_table, cols)
  WHEN 'succ' THEN format('%1$s CROSS JOIN LATERAL (SELECT %2$s FROM @T@ t WHERE t.k >= %1$s.x ORDER BY t.k LIMIT 1) s', outer_table, cols)
  WHEN 'succ left' THEN format('%1$s LEFT JOIN LATERAL (SELECT %2$s FROM @T@ t WHERE t.k >= %1$s.x ORDER BY t.k LIMIT 1) s ON true', outer_table, cols)
END $f$;

CREATE FUNCTION cases() RETURNS TABLE(n int, what text, q text)
LANGUAGE sql AS $f$
WITH forms(fno, form) AS (VALUES (1, 'pred'), (2, 'pred left'), (3, 'succ'), (4, 'succ left')),
groups(gno, grp, aggs) AS (VALUES
  (1, 'count(*)', 'count(*)'),
  (2, 'key', 'count(s.k), sum(s.k), avg(s.k), min(s.k), max(s.k)'),
  (3, 'int2', 'count(s.c_i2), sum(s.c_i2), avg(s.c_i2), min(s.c_i2), max(s.c_i2)'),
  (4, 'int4', 'count(s.c_i4), sum(s.c_i4), avg(s.c_i4), min(s.c_i4), max(s.c_i4)'),
  (5, 'int8', 'count(s.c_i8), sum(s.c_i8), avg(s.c_i8), min(s.c_i8), max(s.c_i8)'),
  (6, 'floats', 'count(s.c_f4), min(s.c_f4), max(s.c_f4), count(s.c_f8), min(s.c_f8), max(s.c_f8)'),
  (7, 'dates', 'count(s.c_d), min(s.c_d), max(s.c_d), count(s.c_ts), min(s.c_ts), max(s.c_ts), count(s.c_tz), min(s.c_tz), max(s.c_tz)'),
  (8, 'bool oid', 'count(s.c_b), bool_and(s.c_b), bool_or(s.c_b), every(s.c_b), count(s.c_o), min(s.c_o), max(s.c_o)'),
  (9, 'mixed', 'count(*), sum(s.c_i4), avg(s.c_i2), min(s.c_ts), max(s.k), count(s.c_f8), bool_or(s.c_b)')),
allcols(c) AS (VALUES ('t.k, t.c_i2, t.c_i4, t.c_i8, t.c_f4, t.c_f8, t.c_d, t.c_ts, t.c_tz, t.c_b, t.c_o')),
matrix AS (
  SELECT fno * 100 + gno AS n, grp || ', ' || form AS what,
         format('SELECT %s FROM %s', aggs, asof_form(form, 'o', c)) AS q
    FROM forms, groups, allcols),
extra(n, what, q) AS (VALUES
  -- other outer tables: answers without NaN or infinity, bool_and true, the
  -- int8 extremes (sums leave int8), no outer row, no answer at all
  (1001, 'no NaN floats, pred', format('SELECT count(s.c_f4), min(s.c_f4), max(s.c_f4), min(s.c_f8), max(s.c_f8) FROM %s',
    asof_form('pred', 'os', 't.c_f4, t.c_f8'))),
  (1002, 'no NaN floats, succ left', format('SELECT min(s.c_f4), max(s.c_f4), min(s.c_f8), max(s.c_f8) FROM %s',
    asof_form('succ left', 'os', 't.c_f4, t.c_f8'))),
  (1003, 'bool all true, pred', format('SELECT count(*), bool_and(s.c_b), bool_or(s.c_b), every(s.c_b) FROM %s',
    asof_form('pred', 'ob', 't.c_b'))),
  (1004, 'bool all true, succ left', format('SELECT bool_and(s.c_b), every(s.c_b), count(s.c_b) FROM %s',
    asof_form('succ left', 'ob', 't.c_b'))),
  (1005, 'int8 extremes, pred', format('SELECT count(*), sum(s.k), avg(s.k), min(s.k), max(s.k), sum(s.c_i8), avg(s.c_i8), sum(s.c_i4), sum(s.c_i2) FROM %s',
    asof_form('pred', 'oe', 't.k, t.c_i8, t.c_i4, t.c_i2'))),
  (1006, 'int8 extremes, pred left', format('SELECT count(*), count(s.k), sum(s.k), avg(s.c_i8), min(s.c_d), max(s.c_o) FROM %s',
    asof_form('pred left', 'oe', 't.k, t.c_i8, t.c_d, t.c_o'))),
  (1007, 'int8 extremes, succ', format('SELECT count(*), sum(s.k), avg(s.k), sum(s.c_i8), max(s.c_f4), min(s.c_tz) FROM %s',
    asof_form('succ', 'oe', 't.k, t.c_i8, t.c_f4, t.c_tz'))),
  (1008, 'int8 extremes, succ left', format('SELECT count(*), count(s.k), sum(s.k), sum(s.c_i8), min(s.c_ts) FROM %s',
    asof_form('succ left', 'oe', 't.k, t.c_i8, t.c_ts'))),
  (1009, 'no outer row, pred', format('SELECT count(*), count(s.k), sum(s.k), avg(s.c_i4), min(s.c_d), bool_or(s.c_b) FROM %s',
    asof_form('pred', 'o0', 't.k, t.c_i4, t.c_d, t.c_b'))),
  (1010, 'no outer row, succ left', format('SELECT count(*), sum(s.c_i8), max(s.c_f8), every(s.c_b) FROM %s',
    asof_form('succ left', 'o0', 't.c_i8, t.c_f8, t.c_b'))),
  (1011, 'no answer, pred', format('SELECT count(*), count(s.k), sum(s.k), avg(s.c_i2), max(s.c_ts), bool_and(s.c_b) FROM %s',
    asof_form('pred', 'onone', 't.k, t.c_i2, t.c_ts, t.c_b'))),
  (1012, 'no answer, pred left', format('SELECT count(*), count(s.k), sum(s.k), avg(s.c_i2), max(s.c_ts), bool_and(s.c_b) FROM %s',
    asof_form('pred left', 'onone', 't.k, t.c_i2, t.c_ts, t.c_b'))),
  -- the subquery's own columns, in another order, only those read; the
  -- same aggregate twice; expressions of aggregates; HAVING
  (1013, 'few columns, reordered', $$SELECT max(s.c_o), count(*), sum(s.k), min(s.c_i2) FROM o CROSS JOIN LATERAL
    (SELECT t.c_o, t.c_i2, t.k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$),
  (1014, 'included column only', $$SELECT sum(s.c_i4), avg(s.c_i4) FROM o LEFT JOIN LATERAL
    (SELECT t.c_i4 FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s ON true$$),
  (1015, 'count(*) only, key not selected', $$SELECT count(*) FROM o CROSS JOIN LATERAL
    (SELECT t.c_b FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s$$),
  (1016, 'same aggregate twice', $$SELECT sum(s.c_i4), count(*), sum(s.c_i4), min(s.c_tz), min(s.c_tz) FROM o CROSS JOIN LATERAL
    (SELECT t.c_i4, t.c_tz FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$),
  (1017, 'expressions of aggregates', $$SELECT sum(s.c_i4) * 2 + count(*), max(s.k) / 4 - min(s.k) / 4, avg(s.c_i2)::int,
    count(s.c_f8) > 100 FROM o LEFT JOIN LATERAL
    (SELECT t.k, t.c_i4, t.c_i2, t.c_f8 FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true$$),
  (1018, 'an expression that overflows', $$SELECT count(*), max(s.k) - min(s.k) FROM o LEFT JOIN LATERAL
    (SELECT t.k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s ON true$$),
  (1019, 'HAVING kept', $$SELECT count(*), sum(s.c_i4), max(s.c_d) FROM o CROSS JOIN LATERAL
    (SELECT t.c_i4, t.c_d FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s HAVING count(*) > 10$$),
  (1020, 'HAVING rejects', $$SELECT count(*), sum(s.c_i4) FROM o LEFT JOIN LATERAL
    (SELECT t.c_i4, t.c_i2 FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s ON true HAVING sum(s.c_i2) > 1000000000$$),
  (1021, 'HAVING on an aggregate not selected', $$SELECT count(s.k) FROM o CROSS JOIN LATERAL
    (SELECT t.k, t.c_b FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s HAVING bool_or(s.c_b)$$),
  -- not taken by GpuIndexAgg: the answers still equal
  -- an outer filter; a correlated subquery (a rescan with a new parameter);
  -- an int4 probe of the int8 key
  (1022, 'outer filter', $$SELECT count(*), sum(s.c_i4), max(s.c_d) FROM o CROSS JOIN LATERAL
    (SELECT t.c_i4, t.c_d FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s WHERE o.y > 100$$),
  (1023, 'correlated subquery', $$SELECT g, (SELECT sum(s.c_i8) FROM o LEFT JOIN LATERAL
    (SELECT t.c_i8 FROM @T@ t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s ON true WHERE o.y < g) AS s,
    (SELECT count(*) FROM o CROSS JOIN LATERAL
    (SELECT t.k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s WHERE o.y >= g) AS c
    FROM generate_series(-300, 1500, 450) g$$),
  (1024, 'int4 probe', $$SELECT count(*), sum(s.k), min(s.c_o), bool_and(s.c_b) FROM o CROSS JOIN LATERAL
    (SELECT t.k, t.c_o, t.c_b FROM @T@ t WHERE t.k <= o.y ORDER BY t.k DESC LIMIT 1) s$$),
  -- a window on the key (a second probe, the subquery's other bound): not
  -- taken, the answers still equal
  (1025, 'window, pred', $$SELECT count(*), count(s.k), sum(s.k), sum(s.c_i4) FROM os CROSS JOIN LATERAL
    (SELECT t.k, t.c_i4 FROM @T@ t WHERE t.k <= os.x AND t.k > os.x - 2 ORDER BY t.k DESC LIMIT 1) s$$),
  (1026, 'window, succ left', $$SELECT count(*), count(s.k), sum(s.k), max(s.c_i8) FROM os LEFT JOIN LATERAL
    (SELECT t.k, t.c_i8 FROM @T@ t WHERE t.k >= os.x AND t.k < os.x + 2 ORDER BY t.k LIMIT 1) s ON true$$),
  -- more outer rows than planned (a volatile filter, a third by the
  -- planner's default): the sink, sized by the estimate, fills and is
  -- added up inside a chunk
  (1027, 'more rows than planned', $$SELECT count(*), sum(s.k), sum(s.c_i4), max(s.c_d) FROM
    (SELECT * FROM o WHERE random() >= 0) o CROSS JOIN LATERAL
    (SELECT t.k, t.c_i4, t.c_d FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$),
  (2001, 'not pushed: outer column', $$SELECT count(*), sum(o.y), sum(s.c_i4) FROM o CROSS JOIN LATERAL
    (SELECT t.c_i4 FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$),
  (2002, 'not pushed: min of outer probe', $$SELECT min(o.x), max(s.k) FROM o CROSS JOIN LATERAL
    (SELECT t.k FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$),
  (2003, 'not pushed: sum(float8)', $$SELECT count(*), sum(s.c_f8) FROM os CROSS JOIN LATERAL
    (SELECT t.c_f8 FROM @T@ t WHERE t.k <= os.x ORDER BY t.k DESC LIMIT 1) s$$),
  (2004, 'not pushed: avg(float4)', $$SELECT avg(s.c_f4) FROM os LEFT JOIN LATERAL
    (SELECT t.c_f4 FROM @T@ t WHERE t.k >= os.x ORDER BY t.k LIMIT 1) s ON true$$),
  (2005, 'not pushed: LIMIT 2', $$SELECT count(*), sum(s.c_i4), min(s.k) FROM o CROSS JOIN LATERAL
    (SELECT t.k, t.c_i4 FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 2) s$$),
  (2006, 'not pushed: subquery filter', $$SELECT count(*), sum(s.c_i4) FROM o CROSS JOIN LATERAL
    (SELECT t.c_i4 FROM @T@ t WHERE t.k <= o.x AND t.c_i4 IS NOT NULL ORDER BY t.k DESC LIMIT 1) s$$),
  (2007, 'not pushed: DISTINCT', $$SELECT count(DISTINCT s.c_b), count(*) FROM o CROSS JOIN LATERAL
    (SELECT t.c_b FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$),
  (2008, 'not pushed: FILTER', $$SELECT count(*) FILTER (WHERE s.c_b), sum(s.c_i4) FROM o CROSS JOIN LATERAL
    (SELECT t.c_b, t.c_i4 FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$),
  (2009, 'not pushed: ORDER BY in aggregate', $$SELECT min(s.c_i4 ORDER BY s.c_i4), count(*) FROM o CROSS JOIN LATERAL
    (SELECT t.c_i4 FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$),
  (2010, 'not pushed: GROUP BY', $$SELECT s.c_b, count(*), sum(s.c_i4), min(s.k) FROM o CROSS JOIN LATERAL
    (SELECT t.k, t.c_i4, t.c_b FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s GROUP BY s.c_b$$),
  (2011, 'not pushed: expression argument', $$SELECT sum(s.c_i2 + 1), count(*) FROM o CROSS JOIN LATERAL
    (SELECT t.c_i2 FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$),
  (2012, 'not pushed: column outside aggregates', $$SELECT count(*), sum(s.c_i4) FROM o CROSS JOIN LATERAL
    (SELECT t.c_i4 FROM @T@ t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s HAVING min(o.y) < 0$$)
)
SELECT * FROM matrix UNION ALL SELECT * FROM extra
$f$;

CREATE TEMP TABLE ja_runs (config int, n int, what text, join_node boolean,
  pushed boolean, rows int, same_on boolean, same_off boolean, gather boolean);

-- state_checks(parallel): every case, into ja_runs, each run by jacheck
-- under four settings: the default engine with gpuidx.gpu_min_agg_entries
-- = 0 (a GPU image adds up on the device), the same with
-- gpuidx.batch_chunk at its smallest (1024: the join's outer rows in
-- several chunks, the answers added up a chunk at a time), the default
-- engine with gpuidx.gpu_min_agg_entries at its maximum (the host), and
-- gpuidx.engine = cpu.  With parallel, parallel plans are made free (each
-- process adds up its share of the join; PostgreSQL's Gather and Finalize
-- Aggregate above) and the chunks setting is left out.  pushed and gather
-- (the plan has a Gather): yes (every setting), no (none) or which;
-- answers: equal, or which runs differ from the reference.  Settings are
-- put back.
CREATE FUNCTION state_checks(parallel boolean DEFAULT false)
RETURNS TABLE(what text, join_node boolean, pushed text, gather text, rows int, answers text)
LANGUAGE plpgsql AS $f$
DECLARE
  names text[] := '{gpuidx.engine, gpuidx.gpu_min_agg_entries, gpuidx.batch_chunk, max_parallel_workers_per_gather, parallel_setup_cost, parallel_tuple_cost, min_parallel_table_scan_size}';
  saved text[] := '{}';
  configs text[] := '{device, chunks, host, cpu}';
  i int;
  c int;
  r record;
BEGIN
  FOR i IN 1 .. cardinality(names) LOOP
    saved := saved || current_setting(names[i]);
  END LOOP;
  IF parallel THEN
    PERFORM set_config('max_parallel_workers_per_gather', '2', true);
    PERFORM set_config('parallel_setup_cost', '0', true);
    PERFORM set_config('parallel_tuple_cost', '0', true);
    PERFORM set_config('min_parallel_table_scan_size', '0', true);
  END IF;
  TRUNCATE ja_runs;
  FOR c IN 1 .. 4 LOOP
    CONTINUE WHEN parallel AND c = 2;
    PERFORM set_config('gpuidx.engine', CASE WHEN c = 4 THEN 'cpu' ELSE saved[1] END, true);
    PERFORM set_config('gpuidx.gpu_min_agg_entries', CASE WHEN c <= 2 THEN '0' ELSE '2147483647' END, true);
    PERFORM set_config('gpuidx.batch_chunk', CASE WHEN c = 2 THEN '1024' ELSE saved[3] END, true);
    FOR r IN SELECT * FROM cases() ORDER BY 1 LOOP
      INSERT INTO ja_runs SELECT c, r.n, j.* FROM jacheck(r.what, r.q) j;
    END LOOP;
  END LOOP;
  FOR i IN 1 .. cardinality(names) LOOP
    PERFORM set_config(names[i], saved[i], true);
  END LOOP;
  RETURN QUERY
  SELECT min(j.what), bool_and(j.join_node),
         CASE WHEN bool_and(j.pushed) THEN 'yes' WHEN NOT bool_or(j.pushed) THEN 'no'
              ELSE string_agg(configs[j.config], ',' ORDER BY j.config) FILTER (WHERE j.pushed) END,
         CASE WHEN bool_and(j.gather) THEN 'yes' WHEN NOT bool_or(j.gather) THEN 'no'
              ELSE string_agg(configs[j.config], ',' ORDER BY j.config) FILTER (WHERE j.gather) END,
         min(j.rows),
         CASE WHEN bool_and(j.same_on AND j.same_off) AND min(j.rows) = max(j.rows) THEN 'equal'
              ELSE 'DIFFERENT: ' || concat_ws(', ',
                string_agg(configs[j.config] || ' on', ', ' ORDER BY j.config) FILTER (WHERE NOT j.same_on),
                string_agg(configs[j.config] || ' off', ', ' ORDER BY j.config) FILTER (WHERE NOT j.same_off)) END
    FROM ja_runs j GROUP BY j.n ORDER BY j.n;
END $f$;

-- nodes(q, reads): q's custom nodes under EXPLAIN ANALYZE (FORMAT JSON)
-- with GpuIndexJoin forced.  GpuIndexAgg: how many of the rows it added
-- up came from the image (From Image; the others are Rows From The Join,
-- walked) as none, partly or all, and whether it added up where it should
-- (Aggregated On): on the host for every engine and setting (the CPU
-- engine's threads gather the answers' entries; the device's run over
-- one-entry ranges measured slower, customagg_exec.c), whatever q reads.
-- GpuIndexJoin: its heap fetches as none or some
CREATE FUNCTION nodes(q text, reads text DEFAULT 'include')
RETURNS TABLE(node text, from_image text, added_as_expected boolean, heap text)
LANGUAGE plpgsql AS $f$
DECLARE
  plan jsonb;
  n jsonb;
  names text[] := '{gpuidx.enable_customjoin, enable_hashjoin, enable_mergejoin, enable_nestloop}';
  saved text[] := '{}';
  i int;
BEGIN
  FOR i IN 1 .. cardinality(names) LOOP
    saved := saved || current_setting(names[i]);
    PERFORM set_config(names[i], CASE WHEN i = 1 THEN 'on' ELSE 'off' END, true);
  END LOOP;
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF, SUMMARY OFF) ' || q INTO plan;
  FOR i IN 1 .. cardinality(names) LOOP
    PERFORM set_config(names[i], saved[i], true);
  END LOOP;
  FOR n IN SELECT jsonb_path_query(plan, 'strict $.** ? (@."Node Type" == "Custom Scan")') LOOP
    node := n->>'Custom Plan Provider';
    from_image := NULL;
    added_as_expected := NULL;
    heap := NULL;
    IF node = 'GpuIndexAgg' THEN
      from_image := CASE WHEN (n->>'From Image')::bigint = 0 THEN 'none'
                         WHEN (n->>'Rows From The Join')::bigint > 0 THEN 'partly'
                         ELSE 'all' END;
      added_as_expected := n->>'Aggregated On' = 'host';
    ELSIF node = 'GpuIndexJoin' THEN
      heap := CASE WHEN (n->>'Heap Fetches')::bigint = 0 THEN 'none' ELSE 'some' END;
    END IF;
    RETURN NEXT;
  END LOOP;
END $f$;

-- node_checks(): nodes of a pushed query reading included columns and of
-- one reading the key, with the device adding up (where the image is a GPU
-- one), with the host, and under gpuidx.engine = cpu (the host)
CREATE FUNCTION node_checks()
RETURNS TABLE(adding_up text, query text, node text, from_image text,
              added_as_expected boolean, heap text)
LANGUAGE plpgsql AS $f$
DECLARE
  saved_min text := current_setting('gpuidx.gpu_min_agg_entries');
  saved_engine text := current_setting('gpuidx.engine');
  m text;
BEGIN
  FOREACH m IN ARRAY '{device, host, cpu}'::text[] LOOP
    PERFORM set_config('gpuidx.engine', CASE WHEN m = 'cpu' THEN 'cpu' ELSE saved_engine END, true);
    PERFORM set_config('gpuidx.gpu_min_agg_entries', CASE WHEN m = 'host' THEN '2147483647' ELSE '0' END, true);
    adding_up := m;
    query := 'include';
    RETURN QUERY SELECT adding_up, query, x.* FROM nodes($$SELECT count(*), sum(s.c_i4), min(s.c_tz), bool_or(s.c_b)
      FROM o CROSS JOIN LATERAL (SELECT t.c_i4, t.c_tz, t.c_b FROM t WHERE t.k <= o.x ORDER BY t.k DESC LIMIT 1) s$$) x;
    query := 'key';
    RETURN QUERY SELECT adding_up, query, x.* FROM nodes($$SELECT count(s.k), sum(s.k), max(s.k)
      FROM o LEFT JOIN LATERAL (SELECT t.k FROM t WHERE t.k >= o.x ORDER BY t.k LIMIT 1) s ON true$$, 'key') x;
  END LOOP;
  PERFORM set_config('gpuidx.engine', saved_engine, true);
  PERFORM set_config('gpuidx.gpu_min_agg_entries', saved_min, true);
END $f$;

-- change_rows(): included columns updated (not HOT: new entries), whole
-- keys and single duplicates deleted, keys moved to new values (3m+1), a
-- HOT update; in t and tb alike, not vacuumed (answers on those pages walk
-- the heap).  Every change keeps a key's rows alike.
CREATE FUNCTION change_rows() RETURNS void
LANGUAGE plpgsql AS $f$
DECLARE
  tab text;
BEGIN
  FOREACH tab IN ARRAY '{t, tb}'::text[] LOOP
    EXECUTE format($$UPDATE %I SET c_i2 = NULL, c_i8 = -c_i8, c_b = NOT c_b, c_ts = c_ts + interval '1 day'
      WHERE k BETWEEN 300 AND 900$$, tab);
    EXECUTE format('DELETE FROM %I WHERE k BETWEEN 1500 AND 1560 OR id = -3', tab);
    EXECUTE format('DELETE FROM %I WHERE id %% 3 = 0 AND k BETWEEN 2400 AND 3000', tab);
    EXECUTE format('UPDATE %I SET k = k + 1 WHERE k BETWEEN 4000 AND 4100', tab);
    EXECUTE format($$UPDATE %I SET pad = 'hot' WHERE k BETWEEN -1500 AND -1200$$, tab);
  END LOOP;
END $f$;
