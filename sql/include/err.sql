-- err(q): run q, return 'ok' or the SQLSTATE and message of its error
-- (created in the calling test's schema).
CREATE FUNCTION err(q text) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END $f$;
