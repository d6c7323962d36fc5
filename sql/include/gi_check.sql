--
-- gi_check.sql: the gi_check() fixture, loaded by sql/05..07 (psql \i) and
-- by the TAP tests (t/lib/GpuidxTest.pm reads this file).
--
-- gi_check(idx, probes, lo, hi): compare every batch function on index idx with
-- the same question answered by PostgreSQL without any index (sequential
-- scans; predecessor/successor by a running max/min over the sorted keys).
-- Works for partial and expression indexes (the index's own expression and
-- predicate are used).  One row per function: rows in the reference answer,
-- reference rows missing from gpuidx's answer, extra rows in gpuidx's answer.
-- Read-only, so it also runs on a hot standby.
CREATE FUNCTION gi_check(idx regclass, probes bigint[], lo bigint[], hi bigint[])
RETURNS TABLE(fn text, ref_rows bigint, missing bigint, extra bigint)
LANGUAGE plpgsql AS $f$
DECLARE
  tbl regclass; e text; pr text; q text;
  cmp constant text := 'SELECT (SELECT count(*) FROM r__), '
     '(SELECT count(*) FROM (SELECT * FROM r__ EXCEPT ALL SELECT * FROM g__) x), '
     '(SELECT count(*) FROM (SELECT * FROM g__ EXCEPT ALL SELECT * FROM r__) y)';
BEGIN
  SELECT i.indrelid, pg_get_indexdef(idx, 1, true),
         coalesce(pg_get_expr(i.indpred, i.indrelid, true), 'true')
    INTO tbl, e, pr FROM pg_index i WHERE i.indexrelid = idx;
  PERFORM set_config('enable_indexscan', 'off', true);
  PERFORM set_config('enable_indexonlyscan', 'off', true);
  PERFORM set_config('enable_bitmapscan', 'off', true);
  PERFORM set_config('gpuidx.enable_customscan', 'off', true);
  PERFORM set_config('gpuidx.enable_customjoin', 'off', true);

  fn := 'lookup';
  q := format('WITH g__ AS (SELECT * FROM gpuidx_lookup(%L, $1)), '
              'r__ AS (SELECT u.pi__::int, (%s)::bigint, t.ctid FROM unnest($1) WITH ORDINALITY u(pv__, pi__) '
              'JOIN %s t ON (%s) = u.pv__ WHERE %s) ', idx, e, tbl, e, pr) || cmp;
  EXECUTE q INTO ref_rows, missing, extra USING probes;
  RETURN NEXT;

  fn := 'predecessor';
  q := format('WITH ks__ AS (SELECT DISTINCT (%s)::bigint AS kk FROM %s t WHERE %s AND (%s) IS NOT NULL), '
              'm__ AS (SELECT typ__, pi__, max(kk) OVER (ORDER BY pv__, typ__ ROWS UNBOUNDED PRECEDING) AS best__ '
              '      FROM (SELECT 0 AS typ__, NULL::bigint AS pi__, kk, kk AS pv__ FROM ks__ '
              '            UNION ALL SELECT 1, u.pi__, NULL, u.pv__ FROM unnest($1) WITH ORDINALITY u(pv__, pi__) '
              '            WHERE u.pv__ IS NOT NULL) s), '
              'g__ AS (SELECT * FROM gpuidx_predecessor(%L, $1)), '
              'r__ AS (SELECT m__.pi__::int, (%s)::bigint, t.ctid FROM m__ JOIN %s t ON (%s) = m__.best__ '
              '      WHERE m__.typ__ = 1 AND %s) ', e, tbl, pr, e, idx, e, tbl, e, pr) || cmp;
  EXECUTE q INTO ref_rows, missing, extra USING probes;
  RETURN NEXT;

  fn := 'successor';
  q := format('WITH ks__ AS (SELECT DISTINCT (%s)::bigint AS kk FROM %s t WHERE %s AND (%s) IS NOT NULL), '
              'm__ AS (SELECT typ__, pi__, min(kk) OVER (ORDER BY pv__ DESC, typ__ ROWS UNBOUNDED PRECEDING) AS best__ '
              '      FROM (SELECT 0 AS typ__, NULL::bigint AS pi__, kk, kk AS pv__ FROM ks__ '
              '            UNION ALL SELECT 1, u.pi__, NULL, u.pv__ FROM unnest($1) WITH ORDINALITY u(pv__, pi__) '
              '            WHERE u.pv__ IS NOT NULL) s), '
              'g__ AS (SELECT * FROM gpuidx_successor(%L, $1)), '
              'r__ AS (SELECT m__.pi__::int, (%s)::bigint, t.ctid FROM m__ JOIN %s t ON (%s) = m__.best__ '
              '      WHERE m__.typ__ = 1 AND %s) ', e, tbl, pr, e, idx, e, tbl, e, pr) || cmp;
  EXECUTE q INTO ref_rows, missing, extra USING probes;
  RETURN NEXT;

  fn := 'range';
  q := format('WITH g__ AS (SELECT * FROM gpuidx_range(%L, $1, $2)), '
              'r__ AS (SELECT u.pi__::int, (%s)::bigint, t.ctid FROM unnest($1, $2) WITH ORDINALITY u(lo__, hi__, pi__) '
              'JOIN %s t ON (%s) >= u.lo__ AND (%s) <= u.hi__ WHERE %s) ', idx, e, tbl, e, e, pr) || cmp;
  EXECUTE q INTO ref_rows, missing, extra USING lo, hi;
  RETURN NEXT;

  fn := 'range_count';
  q := format('WITH c__ AS (SELECT u.pi__, (SELECT count(*) FROM %s t WHERE (%s) >= u.lo__ AND (%s) <= u.hi__ AND %s) AS n '
              '           FROM unnest($1, $2) WITH ORDINALITY u(lo__, hi__, pi__)), '
              'g__ AS (SELECT i AS pi__, n FROM unnest(gpuidx_range_count(%L, $1, $2)) WITH ORDINALITY x(n, i)), '
              'r__ AS (SELECT pi__, n FROM c__) ', tbl, e, e, pr, idx) || cmp;
  EXECUTE q INTO ref_rows, missing, extra USING lo, hi;
  RETURN NEXT;
END $f$;
