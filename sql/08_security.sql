--
-- 08_security: the functions check SELECT privilege on the table (42501) and
-- return only the rows that row-level security policies allow.
--
\set schema gi_security
\i sql/include/setup.sql

SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_gpuidx_reader;
DROP ROLE IF EXISTS regress_gpuidx_noselect;
DROP ROLE IF EXISTS regress_gpuidx_owner;
RESET client_min_messages;
CREATE ROLE regress_gpuidx_reader;
CREATE ROLE regress_gpuidx_noselect;
GRANT USAGE ON SCHEMA gi_security TO regress_gpuidx_reader, regress_gpuidx_noselect;

CREATE TABLE s (id int, k int4, owner name);
INSERT INTO s SELECT g, g % 20, CASE WHEN g % 3 = 0 THEN 'regress_gpuidx_reader' ELSE 'someone_else' END
  FROM generate_series(1, 200) g;
CREATE INDEX s_gi ON s USING gpuidx (k);
GRANT SELECT ON s TO regress_gpuidx_reader;

-- no SELECT privilege: every function refuses with 42501
SET ROLE regress_gpuidx_noselect;
SELECT count(*) FROM s;
\set VERBOSITY sqlstate
SELECT * FROM gpuidx_lookup('s_gi', '{1}');
SELECT * FROM gpuidx_predecessor('s_gi', '{1}');
SELECT * FROM gpuidx_successor('s_gi', '{1}');
SELECT * FROM gpuidx_range('s_gi', '{1}', '{2}');
SELECT gpuidx_range_count('s_gi', '{1}', '{2}');
-- an empty batch is refused as well
SELECT * FROM gpuidx_lookup('s_gi', '{}');
\set VERBOSITY default
SELECT * FROM gpuidx_lookup('s_gi', '{1}');
RESET ROLE;

-- with SELECT privilege and no RLS, the reader sees everything
SET ROLE regress_gpuidx_reader;
SELECT count(*) FROM gpuidx_lookup('s_gi', '{1, 2, 3}');
SELECT gpuidx_range_count('s_gi', '{0}', '{19}');
RESET ROLE;

-- privilege revoked again
REVOKE SELECT ON s FROM regress_gpuidx_reader;
SET ROLE regress_gpuidx_reader;
SELECT count(*) FROM gpuidx_lookup('s_gi', '{1}');
RESET ROLE;
GRANT SELECT ON s TO regress_gpuidx_reader;

-- row-level security: the reader sees only its own rows
ALTER TABLE s ENABLE ROW LEVEL SECURITY;
CREATE POLICY s_own ON s FOR SELECT USING (owner = current_user);
-- keys 0..19; the reader's rows are those with id % 3 = 0.  Make key 19 and
-- key 0 belong to someone else only, to see predecessor/successor skip them.
UPDATE s SET owner = 'someone_else' WHERE k IN (0, 19);
SET ROLE regress_gpuidx_reader;
SELECT count(*) AS visible_rows, min(k), max(k) FROM s;
SELECT r.probe, r.key, s.id, s.owner FROM gpuidx_lookup('s_gi', '{1, 2, 19}') r JOIN s ON s.ctid = r.ctid
 ORDER BY 1, 2, 3;
SELECT count(*) AS rows_not_allowed FROM gpuidx_range('s_gi', '{0}', '{100}') r
 WHERE NOT EXISTS (SELECT 1 FROM s WHERE s.ctid = r.ctid);
SELECT count(*) AS all_rows FROM gpuidx_range('s_gi', '{0}', '{100}');
SELECT gpuidx_range_count('s_gi', '{0, 19, 1}', '{100, 19, 1}');
-- the same answers as SQL through the policy
SELECT count(*) FROM s WHERE k BETWEEN 0 AND 100;
SELECT count(*) FROM s WHERE k = 1;
-- predecessor and successor: as the query "largest/smallest visible key",
-- through the policy; hidden keys 19 and 0 are skipped
SELECT r.probe, r.key, s.id FROM gpuidx_predecessor('s_gi', '{100, 19, 0}') r JOIN s ON s.ctid = r.ctid
 ORDER BY 1, 2, 3;
SELECT x.k, s.id FROM (SELECT k FROM s WHERE k <= 100 ORDER BY k DESC LIMIT 1) x JOIN s USING (k) ORDER BY 2;
SELECT r.probe, r.key, s.id FROM gpuidx_successor('s_gi', '{-5, 0, 19}') r JOIN s ON s.ctid = r.ctid
 ORDER BY 1, 2, 3;
SELECT x.k, s.id FROM (SELECT k FROM s WHERE k >= -5 ORDER BY k LIMIT 1) x JOIN s USING (k) ORDER BY 2;
RESET ROLE;
-- the owner (here a superuser) is not subject to the policy
SELECT count(*) FROM gpuidx_range('s_gi', '{0}', '{100}');
SELECT count(*) FROM gpuidx_lookup('s_gi', '{19}');
-- a restrictive policy on top narrows it further
CREATE POLICY s_small ON s AS RESTRICTIVE FOR SELECT USING (k < 10);
SET ROLE regress_gpuidx_reader;
SELECT count(*) FROM gpuidx_range('s_gi', '{0}', '{100}');
SELECT count(*) FROM s;
SELECT DISTINCT probe, key FROM gpuidx_predecessor('s_gi', '{100}');
RESET ROLE;
-- FORCE ROW LEVEL SECURITY applies the policies to the table owner too
CREATE ROLE regress_gpuidx_owner;
GRANT USAGE, CREATE ON SCHEMA gi_security TO regress_gpuidx_owner;
ALTER TABLE s OWNER TO regress_gpuidx_owner;
ALTER TABLE s FORCE ROW LEVEL SECURITY;
SET ROLE regress_gpuidx_owner;
SELECT count(*) FROM s;
SELECT count(*) FROM gpuidx_range('s_gi', '{0}', '{100}');
RESET ROLE;
ALTER TABLE s NO FORCE ROW LEVEL SECURITY;
SET ROLE regress_gpuidx_owner;
SELECT count(*) FROM gpuidx_range('s_gi', '{0}', '{100}');
RESET ROLE;

SET client_min_messages = warning;
DROP SCHEMA gi_security CASCADE;
DROP ROLE regress_gpuidx_reader;
DROP ROLE regress_gpuidx_noselect;
DROP ROLE regress_gpuidx_owner;
