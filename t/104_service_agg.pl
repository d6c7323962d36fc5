# Service mode, GpuIndexAgg added up by the gpuidx service
# (GPUIDX_REQ_OP_AGG): the runs a backend sends, the totals and the fetch
# list it gets back, each result compared with a btree twin with the same
# INCLUDE.  Without a GPU the service adds up with the CPU engine under
# gpuidx.service_test_agg_cpu (the same requests a GPU image's runs send);
# with one, on the device.  Checked: all-visible (no fetch list), every
# page changed (a fetch list longer than the room a request leaves: read
# back from the service), a delta of new entries (the service's columns
# merged in rank order), = ANY of many keys, NULLs in included columns;
# a statement timeout while the service answers (the request abandoned,
# the next one right); and that without the test setting a CPU image's
# runs stay in the backend.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;

plan skip_all => 'runs in the service-mode pass (GPUIDX_SERVICE=1)' if !service_mode();

my $node = gpuidx_node('service_agg', q{
autovacuum = off
gpuidx.pending_limit = 1000000
});

$node->safe_psql('postgres', q{
CREATE EXTENSION gpuidx;
CREATE TABLE a (id int, k int8, v int4, w int8, f float8, b bool);
INSERT INTO a SELECT g, hashint4(g) % 40000, CASE WHEN g % 17 = 0 THEN NULL ELSE g % 1000 - 300 END,
    g::int8 * 1000003, CASE WHEN g % 29 = 0 THEN NULL ELSE g / 7.0 END, g % 3 = 0
  FROM generate_series(1, 150000) g;
CREATE TABLE ab AS TABLE a;
CREATE INDEX a_gi ON a USING gpuidx (k) INCLUDE (v, w, f, b);
CREATE INDEX ab_k ON ab (k) INCLUDE (v, w, f, b);
VACUUM ANALYZE a; VACUUM ANALYZE ab;
CREATE FUNCTION on_both(q text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE replace(q, '@T@', 'a');
  EXECUTE replace(q, '@T@', 'ab');
END $f$;
-- q on the gpuidx table through GpuIndexAgg (every other scan off) and on
-- the twin: the results as text, equal or not; where the gpuidx node
-- added up; and its heap fetches as none, partly or all of its entries
CREATE FUNCTION acheck(q text, OUT same boolean, OUT added_on text, OUT heap text)
LANGUAGE plpgsql AS $f$
DECLARE
  names text[] := '{gpuidx.enable_customscan, enable_seqscan, enable_indexscan, enable_bitmapscan, enable_indexonlyscan}';
  plan jsonb;
  n jsonb;
  mine text;
  twin text;
  i int;
BEGIN
  FOR i IN 1 .. cardinality(names) LOOP
    PERFORM set_config(names[i], 'off', true);
  END LOOP;
  EXECUTE 'EXPLAIN (ANALYZE, FORMAT JSON, TIMING OFF, SUMMARY OFF) ' || replace(q, '@T@', 'a') INTO plan;
  EXECUTE format('SELECT string_agg(x::text, '' | '') FROM (%s) x', replace(q, '@T@', 'a')) INTO mine;
  FOR i IN 1 .. cardinality(names) LOOP
    PERFORM set_config(names[i], 'on', true);
  END LOOP;
  EXECUTE format('SELECT string_agg(x::text, '' | '') FROM (%s) x', replace(q, '@T@', 'ab')) INTO twin;
  same := mine IS NOT DISTINCT FROM twin;
  n := jsonb_path_query_first(plan, 'strict $.** ? (@."Node Type" == "Custom Scan")');
  added_on := coalesce(n->>'Aggregated On', 'no GpuIndexAgg');
  heap := CASE WHEN (n->>'Heap Fetches')::bigint = 0 THEN 'none'
               WHEN (n->>'Heap Fetches')::bigint < (n->>'Entries')::bigint THEN 'partly'
               ELSE 'all' END;
END $f$;
});

# The engine the service holds the image on: where its runs add up.
my $engine = $node->safe_psql('postgres',
	q{SELECT gpuidx_info('a_gi')->>'engine'});
like($engine, qr/^(cpu|gpu)$/, "the service holds the image ($engine)");

my $wide = q{SELECT count(*), count(v), sum(v), avg(v), min(v), max(v), sum(w), min(w), max(w),
  count(f), min(f), max(f), bool_and(b), bool_or(b), sum(k) FROM @T@ WHERE k BETWEEN -30000 AND 35000};
my $keys = join(',', map { $_ * 37 % 80000 - 40000 } 1 .. 20000);
my $any = "SELECT count(*), sum(v), avg(w), min(f), max(k) FROM \@T\@ WHERE k = ANY ('{$keys}'::int8[])";
my $settings = q{SET gpuidx.service_test_agg_cpu = on; SET gpuidx.gpu_min_agg_entries = 0;};

# Runs one acheck in a fresh session with the test settings.
sub check
{
	my ($q, $extra) = @_;
	my $sql = $settings . ($extra // '') . "SELECT * FROM acheck(\$q\$$q\$q\$);";
	return $node->safe_psql('postgres', $sql);
}

is(check($wide), "t|$engine|none", 'all-visible: the service adds up, no fetch list');
is(check($any), "t|$engine|none", '= ANY of 20000 keys: the service adds up');

# Every page changed: more fetches than the room a request leaves (65536),
# read back from the service.
$node->safe_psql('postgres', q{SELECT on_both('UPDATE @T@ SET w = w + 1 WHERE id % 2 = 0')});
is(check($wide), "t|$engine|all", 'every page changed: the long fetch list comes back whole');
is(check($any), "t|$engine|all", '= ANY, every page changed');

# New entries: a delta in the shared image (the service's columns merged
# by rank; VACUUM would fold them into the base).  Their pages are not
# all-visible: the entries on them come back to be fetched.
$node->safe_psql('postgres', q{VACUUM a; VACUUM ab;});
# (the vacuumed version published first, so that the inserts extend it)
$node->safe_psql('postgres', q{SELECT gpuidx_info('a_gi')});
$node->safe_psql('postgres', q{
SELECT on_both('INSERT INTO @T@ SELECT -g, g * 7 % 70000 - 35000, NULLIF(g % 5, 0), g, g / 3.0, g % 2 = 0
  FROM generate_series(1, 4000) g');});
is($node->safe_psql('postgres', q{SELECT (gpuidx_info('a_gi')->>'delta_entries')::int > 0}),
	't', 'the image has a delta');
is(check($wide), "t|$engine|partly", 'with a delta: the service adds up, right');
like(check($any), qr/^t\|$engine\|(partly|none)$/, '= ANY with a delta');

# The included columns on the device count in gpuidx_info (GPU only).
if ($engine eq 'gpu')
{
	ok($node->safe_psql('postgres', q{SELECT (gpuidx_info('a_gi')->>'include_device_bytes')::bigint})
		  > 0, 'the service counts the included columns on the device');
}

# Without the test setting a CPU image's runs stay in the backend.
if ($engine eq 'cpu')
{
	is($node->safe_psql('postgres', q{SET gpuidx.gpu_min_agg_entries = 0;
		SELECT added_on FROM acheck($q$SELECT count(*) FROM @T@ WHERE k BETWEEN 0 AND 30000$q$)}),
		'host', 'a CPU image without the test setting: added up in the backend');
}

# A statement timeout while the service answers abandons the request; the
# next one on the slot is answered, right.
$node->append_conf('postgresql.conf', "gpuidx.service_test_delay = 3000\n");
$node->reload;
my ($out, $err) = ('', '');
$node->psql('postgres', $settings . q{SET statement_timeout = '1s';
	SELECT count(*), sum(v) FROM a WHERE k BETWEEN -30000 AND 35000;},
	stdout => \$out, stderr => \$err);
like($err, qr/statement timeout/, 'a timeout while the service adds up cancels the query');
$node->append_conf('postgresql.conf', "gpuidx.service_test_delay = 0\n");
$node->reload;
is(check($wide), "t|$engine|partly", 'after an abandoned request: right');

$node->stop;
done_testing();
