--
-- join_check.sql: the functions that compare GpuIndexJoin's answers with the
-- btree twin's, included (psql \i) by sql/include/join_differential.sql and
-- sql/30_join_edge.sql after they set search_path to their schema.
--
-- jcheck(what, q, base) runs query q (with @T@ for the inner table) four
-- ways: on the btree twin base||'b' with gpuidx.enable_customjoin = off and
-- the planner free (the reference); on base (the gpuidx-indexed table) with
-- GpuIndexJoin forced (hash, merge and nested-loop joins off; "node" says
-- the plan has Custom Scan (GpuIndexJoin)); on base with GpuIndexJoin off
-- and nested loops forced (gpuidx index scans as the inner side, "nl_");
-- and on base with the planner free ("pl_").  Each answer is compared with
-- the reference with EXCEPT ALL both ways: every missing/extra count must be
-- 0, and rows (the reference's row count) shows whether the answer is empty.
--
-- uses_join(q): whether q's plan, under the current settings, has the node
CREATE FUNCTION uses_join(q text) RETURNS boolean LANGUAGE plpgsql AS $f$
DECLARE
  line text;
  found boolean := false;
BEGIN
  FOR line IN EXECUTE 'EXPLAIN (COSTS OFF) ' || q LOOP
    found := found OR line LIKE '%Custom Scan (GpuIndexJoin)%';
  END LOOP;
  RETURN found;
END $f$;

-- tdiff(a, b): rows of temp table b (the reference), and the rows of each
-- missing from the other (EXCEPT ALL)
CREATE FUNCTION tdiff(a text, b text, OUT rows bigint, OUT missing bigint, OUT extra bigint)
LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE format('SELECT count(*) FROM %I', b) INTO rows;
  EXECUTE format('SELECT count(*) FROM (TABLE %I EXCEPT ALL TABLE %I) x', b, a) INTO missing;
  EXECUTE format('SELECT count(*) FROM (TABLE %I EXCEPT ALL TABLE %I) x', a, b) INTO extra;
END $f$;

-- jcheck(what, q, base): q with @T@ for the inner table, run on base||'b'
-- (the btree twin, the reference) and on base (gpuidx) as the header says.
-- The settings it changes are put back, so it also runs inside a
-- transaction block.
CREATE FUNCTION jcheck(label text, q text, base text DEFAULT 't')
RETURNS TABLE(what text, node boolean, rows bigint, missing bigint, extra bigint,
              nl_missing bigint, nl_extra bigint, pl_missing bigint, pl_extra bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  names text[] := '{gpuidx.enable_customjoin, enable_hashjoin, enable_mergejoin, enable_nestloop, enable_seqscan, client_min_messages}';
  saved text[] := '{}';
  i int;
  gi text := replace(q, '@T@', base);
BEGIN
  FOR i IN 1 .. cardinality(names) LOOP
    saved := saved || current_setting(names[i]);
  END LOOP;
  PERFORM set_config('client_min_messages', 'warning', true);
  DROP TABLE IF EXISTS pg_temp.j_ref, pg_temp.j_gi, pg_temp.j_nl, pg_temp.j_pl;
  what := label;
  -- the reference: the btree twin, GpuIndexJoin off, any plan
  PERFORM set_config('gpuidx.enable_customjoin', 'off', true);
  EXECUTE 'CREATE TEMP TABLE j_ref AS ' || replace(q, '@T@', base || 'b');
  -- GpuIndexJoin forced
  PERFORM set_config('gpuidx.enable_customjoin', 'on', true);
  PERFORM set_config('enable_hashjoin', 'off', true);
  PERFORM set_config('enable_mergejoin', 'off', true);
  PERFORM set_config('enable_nestloop', 'off', true);
  node := uses_join(gi);
  EXECUTE 'CREATE TEMP TABLE j_gi AS ' || gi;
  -- GpuIndexJoin off, a nested loop over gpuidx index scans
  PERFORM set_config('gpuidx.enable_customjoin', 'off', true);
  PERFORM set_config('enable_nestloop', 'on', true);
  PERFORM set_config('enable_seqscan', 'off', true);
  EXECUTE 'CREATE TEMP TABLE j_nl AS ' || gi;
  -- the planner's own choice
  FOR i IN 1 .. cardinality(names) - 1 LOOP
    PERFORM set_config(names[i], saved[i], true);
  END LOOP;
  EXECUTE 'CREATE TEMP TABLE j_pl AS ' || gi;
  SELECT d.rows, d.missing, d.extra INTO rows, missing, extra FROM tdiff('j_gi', 'j_ref') d;
  SELECT d.missing, d.extra INTO nl_missing, nl_extra FROM tdiff('j_nl', 'j_ref') d;
  SELECT d.missing, d.extra INTO pl_missing, pl_extra FROM tdiff('j_pl', 'j_ref') d;
  DROP TABLE j_ref, j_gi, j_nl, j_pl;
  PERFORM set_config(names[cardinality(names)], saved[cardinality(names)], true);
  RETURN NEXT;
END $f$;

-- cursor_diff(a, b): fetch every row of the open cursors a (gpuidx) and b
-- (the reference) and compare them as text, as tdiff does
CREATE FUNCTION cursor_diff(a refcursor, b refcursor, OUT rows bigint, OUT missing bigint, OUT extra bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  r record;
BEGIN
  CREATE TEMP TABLE c_a (v text);
  CREATE TEMP TABLE c_b (v text);
  LOOP
    FETCH a INTO r;
    EXIT WHEN NOT FOUND;
    INSERT INTO c_a VALUES (r::text);
  END LOOP;
  LOOP
    FETCH b INTO r;
    EXIT WHEN NOT FOUND;
    INSERT INTO c_b VALUES (r::text);
  END LOOP;
  SELECT d.rows, d.missing, d.extra INTO rows, missing, extra FROM tdiff('c_a', 'c_b') d;
  DROP TABLE c_a, c_b;
END $f$;
