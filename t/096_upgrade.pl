# ALTER EXTENSION gpuidx UPDATE on a database that has gpuidx indexes (runs
# in both modes): installed at 0.1, indexes of both structures and one with
# INCLUDE, rows; then updated to 0.2.  Checked: the version, the indexes
# answer like their btree twins before and after (and after more writes),
# and the updated extension has exactly the objects, definitions, comments
# and privileges (ACLs and pg_init_privs) of a fresh CREATE EXTENSION of
# 0.2 in another database.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;

my $node = gpuidx_node('upgrade', "autovacuum = off\n");

$node->safe_psql('postgres', q{
CREATE EXTENSION gpuidx VERSION '0.1';
CREATE TABLE tb (id int PRIMARY KEY, k int8, v int4);
INSERT INTO tb SELECT g, CASE WHEN g % 89 = 0 THEN NULL ELSE hashint4(g) % 20000 END, g % 17
  FROM generate_series(1, 30000) g;
CREATE TABLE tv (LIKE tb);
INSERT INTO tv SELECT * FROM tb;
CREATE TABLE ti (LIKE tb);
INSERT INTO ti SELECT * FROM tb;
CREATE TABLE twin (LIKE tb);
INSERT INTO twin SELECT * FROM tb;
CREATE INDEX tb_gi ON tb USING gpuidx (k) WITH (structure = btree);
CREATE INDEX tv_gi ON tv USING gpuidx (k) WITH (structure = veb);
CREATE INDEX ti_gi ON ti USING gpuidx (k) INCLUDE (v);
CREATE INDEX twin_k ON twin (k) INCLUDE (v);
VACUUM ANALYZE tb; VACUUM ANALYZE tv; VACUUM ANALYZE ti; VACUUM ANALYZE twin;
});

# The rows of one gpuidx table and index against the btree twin, missing and
# extra both ways: gpuidx_lookup, = ANY (index scans forced), the as-of
# LATERAL join, and = ANY returning the included column (index-only where
# it can); then gpuidx_verify.  "0 0 0 0 0 0 0 0 true" when all agree.
my $check_fn = q{
CREATE OR REPLACE FUNCTION ucheck(tbl regclass, idx regclass, seed int) RETURNS text
LANGUAGE plpgsql AS $f$
DECLARE
  p int8[] := ARRAY(SELECT hashint4(g * 13 + seed) % 21000 FROM generate_series(1, 2000) g);
  r bigint[] := '{}';
  n bigint;
  q text;
  qs text[] := ARRAY[
    'SELECT probe, key FROM gpuidx_lookup(%2$s, $1)',
    'SELECT u.i::int, t.k FROM unnest($1) WITH ORDINALITY u(x, i) JOIN twin t ON t.k = u.x',
    'SELECT id, k FROM %1$s WHERE k = ANY ($1)',
    'SELECT id, k FROM twin WHERE k = ANY ($1)',
    'SELECT x, s.k FROM unnest($1[1:500]) x CROSS JOIN LATERAL (SELECT k FROM %1$s WHERE k <= x ORDER BY k DESC LIMIT 1) s',
    'SELECT x, s.k FROM unnest($1[1:500]) x CROSS JOIN LATERAL (SELECT k FROM twin WHERE k <= x ORDER BY k DESC LIMIT 1) s',
    'SELECT k, v FROM %1$s WHERE k = ANY ($1)',
    'SELECT k, v FROM twin WHERE k = ANY ($1)'];
  i int;
BEGIN
  PERFORM set_config('enable_seqscan', 'off', true);
  FOR i IN 1 .. cardinality(qs) BY 2 LOOP
    EXECUTE format('SELECT count(*) FROM (%s EXCEPT ALL %s) z', format(qs[i], tbl, quote_literal(idx::text)), qs[i + 1])
      INTO n USING p;
    r := r || n;
    EXECUTE format('SELECT count(*) FROM (%s EXCEPT ALL %s) z', qs[i + 1], format(qs[i], tbl, quote_literal(idx::text)))
      INTO n USING p;
    r := r || n;
  END LOOP;
  EXECUTE 'SELECT count(*) FROM unnest($1) u(x) JOIN twin t ON t.k = u.x' INTO n USING p;
  IF n = 0 THEN RAISE EXCEPTION 'the reference has no rows'; END IF;
  RETURN array_to_string(r, ' ') || ' ' || gpuidx_verify(idx);
END $f$;
};
$node->safe_psql('postgres', $check_fn);

# Every index against the twin, one assertion each.
sub check_indexes
{
	my ($label, $seed) = @_;
	for my $t (qw(tb tv ti))
	{
		is($node->safe_psql('postgres', "SELECT ucheck('$t', '${t}_gi', $seed)"),
			'0 0 0 0 0 0 0 0 true', "$label: $t (${t}_gi) answers like the btree twin");
	}
	return;
}

is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'gpuidx'"),
	'0.1', 'installed at 0.1');
check_indexes('0.1', 1);

$node->safe_psql('postgres', 'ALTER EXTENSION gpuidx UPDATE');
is($node->safe_psql('postgres', "SELECT extversion FROM pg_extension WHERE extname = 'gpuidx'"),
	'0.2', 'ALTER EXTENSION gpuidx UPDATE brings it to 0.2');
like($node->safe_psql('postgres', q{SELECT pg_get_indexdef('tb_gi'::regclass) || ' / ' || pg_get_indexdef('tv_gi'::regclass)}),
	qr/structure=btree.* \/ .*structure=veb/, 'the indexes keep their structures');
check_indexes('0.2', 2);

# writes after the update
$node->safe_psql('postgres', q{
INSERT INTO tb SELECT g, hashint4(g) % 20000, g % 17 FROM generate_series(30001, 34000) g;
INSERT INTO tv SELECT g, hashint4(g) % 20000, g % 17 FROM generate_series(30001, 34000) g;
INSERT INTO ti SELECT g, hashint4(g) % 20000, g % 17 FROM generate_series(30001, 34000) g;
INSERT INTO twin SELECT g, hashint4(g) % 20000, g % 17 FROM generate_series(30001, 34000) g;
DELETE FROM tb WHERE id % 31 = 0; DELETE FROM tv WHERE id % 31 = 0;
DELETE FROM ti WHERE id % 31 = 0; DELETE FROM twin WHERE id % 31 = 0;
UPDATE tb SET v = v + 1 WHERE id % 29 = 0; UPDATE tv SET v = v + 1 WHERE id % 29 = 0;
UPDATE ti SET v = v + 1 WHERE id % 29 = 0; UPDATE twin SET v = v + 1 WHERE id % 29 = 0;
});
check_indexes('0.2 after writes', 3);

# The extension's objects as text, one row each: the object, its
# definition (functions: result, arguments, flags, C symbol; views: the
# query), its ACL and its comment; then the extension's initial privileges.
my $objects_sql = q{
WITH m AS (
  SELECT classid, objid, objsubid FROM pg_depend
   WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
     AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'gpuidx'))
SELECT string_agg(line, E'\n' ORDER BY line) FROM (
  SELECT pg_describe_object(m.classid, m.objid, m.objsubid)
         || coalesce(' | ' || (SELECT format('%s -> %s; %s %s %s %s; acl %s', pg_get_function_arguments(p.oid),
                                            pg_get_function_result(p.oid), p.provolatile, p.proparallel,
                                            p.proisstrict, p.prosrc, coalesce(p.proacl::text, 'default'))
                                 FROM pg_proc p WHERE m.classid = 'pg_proc'::regclass AND p.oid = m.objid), '')
         || coalesce(' | ' || (SELECT format('%s; acl %s', pg_get_viewdef(c.oid), coalesce(c.relacl::text, 'default'))
                                 FROM pg_class c WHERE m.classid = 'pg_class'::regclass AND c.oid = m.objid), '')
         || coalesce(' | comment ' || (SELECT d.description FROM pg_description d
                                        WHERE d.classoid = m.classid AND d.objoid = m.objid AND d.objsubid = 0), '')
         AS line
    FROM m
  UNION ALL
  SELECT 'init_privs ' || pg_describe_object(i.classoid, i.objoid, i.objsubid) || ' ' || i.privtype::text || ' ' || i.initprivs::text
    FROM pg_init_privs i JOIN m ON m.classid = i.classoid AND m.objid = i.objoid) x;
};

$node->safe_psql('postgres', 'CREATE DATABASE fresh');
$node->safe_psql('fresh', 'CREATE EXTENSION gpuidx');
is($node->safe_psql('fresh', "SELECT extversion FROM pg_extension WHERE extname = 'gpuidx'"),
	'0.2', 'a fresh CREATE EXTENSION is 0.2');
my $fresh = $node->safe_psql('fresh', $objects_sql);
my $updated = $node->safe_psql('postgres', $objects_sql);
like($fresh, qr/function gpuidx_service_images\(\).*acl \{.*pg_read_all_stats=X/,
	'fresh 0.2: gpuidx_service_images() is executable by pg_read_all_stats only');
like($fresh, qr/view gpuidx_service_images .*; acl \{[^}]*pg_read_all_stats=r/s,
	'fresh 0.2: the view is readable by pg_read_all_stats');
like($fresh, qr/init_privs function gpuidx_service_images\(\) e /,
	'fresh 0.2: the initial privileges are recorded');
is($updated, $fresh, 'the updated extension has the fresh 0.2 objects, definitions, comments and privileges');

# the 0.2 objects work after the update
is($node->safe_psql('postgres', 'SELECT count(*) >= 0 FROM gpuidx_service_images'), 't',
	'the 0.2 view answers after the update');
$node->safe_psql('postgres', 'CREATE ROLE plain LOGIN');
my ($ret, $out, $err) = $node->psql('postgres', 'SELECT * FROM gpuidx_service_images', extra_params => [ '-U', 'plain' ]);
like($err, qr/permission denied/, 'an unprivileged role may not read the service images');
if (service_mode())
{
	is($node->safe_psql('postgres', q{
SELECT count(DISTINCT index) FROM gpuidx_service_images
 WHERE index IN ('tb_gi'::regclass, 'tv_gi'::regclass, 'ti_gi'::regclass) AND is_current}),
		'3', 'service mode: the service holds the three indexes after the update');
}

$node->stop;
done_testing();
