# The gpuidx service under stress (service mode only), every answer checked
# against a btree twin (same rows, the same change applied to both in one
# transaction): (a) the service process, gpuidx_info and the image list;
# (b) kill -9 of the service mid-batch (a crash restart of the cluster: the
# session errors out, never a wrong answer, and the service comes back) and
# kill -TERM (the service restarts alone; the batch in flight is answered
# on the host, right); (c) statement_timeout while waiting on the service;
# (d) 50+ concurrent connections; (e) concurrent writers and readers, each
# reader comparing under one REPEATABLE READ snapshot; (f) a hot standby in
# service mode; (g) DROP INDEX, DROP TABLE, TRUNCATE and REINDEX free the
# old images from the store promptly, and a rolled-back DROP keeps them.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IPC::Run;
use Time::HiRes qw(time usleep);

use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;

plan skip_all => 'runs in the service-mode pass (GPUIDX_SERVICE=1)' if !service_mode();

# A primary that can stream to a standby and restarts after a crash.
my $node = PostgreSQL::Test::Cluster->new('service');
$node->init(allows_streaming => 1);
$node->append_conf('postgresql.conf', mode_conf() . q{
autovacuum = off
max_connections = 90
restart_after_crash = on
gpuidx.pending_limit = 1000000
});
$node->start;

$node->safe_psql('postgres', q{
CREATE EXTENSION gpuidx;
CREATE TABLE s (id int PRIMARY KEY, k int8, v int4);
INSERT INTO s SELECT g, CASE WHEN g % 101 = 0 THEN NULL ELSE hashint4(g) % 50000 END, g % 13
  FROM generate_series(1, 60000) g;
CREATE TABLE sb AS TABLE s;
ALTER TABLE sb ADD PRIMARY KEY (id);
CREATE INDEX s_gi ON s USING gpuidx (k);
CREATE INDEX sb_k ON sb (k);
ANALYZE s; ANALYZE sb;
-- the same change on both tables, in one transaction
CREATE FUNCTION on_both(q text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE replace(q, '@T@', 's');
  EXECUTE replace(q, '@T@', 'sb');
END $f$;
-- 3000 probes for a seed (a batch the service answers)
CREATE FUNCTION sprobes(seed int) RETURNS int8[] LANGUAGE sql IMMUTABLE AS $f$
  SELECT ARRAY(SELECT hashint4(g * 7 + seed) % 52000 FROM generate_series(1, 3000) g)
$f$;
-- gpuidx against the btree twin under one snapshot: missing and extra rows
-- of gpuidx_lookup, of = ANY (index scans forced) and of the as-of LATERAL
-- join, then the number of reference rows of the lookup
CREATE FUNCTION scheck(seed int) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
  p int8[] := sprobes(seed);
  a bigint; b bigint; c bigint; d bigint; e bigint; f bigint; n bigint;
BEGIN
  PERFORM set_config('enable_seqscan', 'off', true);
  SELECT count(*) INTO a FROM (SELECT probe, key FROM gpuidx_lookup('s_gi', p)
    EXCEPT ALL SELECT u.i::int, t.k FROM unnest(p) WITH ORDINALITY u(x, i) JOIN sb t ON t.k = u.x) z;
  SELECT count(*) INTO b FROM (SELECT u.i::int, t.k FROM unnest(p) WITH ORDINALITY u(x, i) JOIN sb t ON t.k = u.x
    EXCEPT ALL SELECT probe, key FROM gpuidx_lookup('s_gi', p)) z;
  SELECT count(*) INTO c FROM (SELECT id, k, v FROM s WHERE k = ANY (p)
    EXCEPT ALL SELECT id, k, v FROM sb WHERE k = ANY (p)) z;
  SELECT count(*) INTO d FROM (SELECT id, k, v FROM sb WHERE k = ANY (p)
    EXCEPT ALL SELECT id, k, v FROM s WHERE k = ANY (p)) z;
  SELECT count(*) INTO e FROM (SELECT x, q.k FROM unnest(p[1:1000]) x CROSS JOIN LATERAL
      (SELECT k FROM s WHERE s.k <= x ORDER BY k DESC LIMIT 1) q
    EXCEPT ALL SELECT x, q.k FROM unnest(p[1:1000]) x CROSS JOIN LATERAL
      (SELECT k FROM sb WHERE sb.k <= x ORDER BY k DESC LIMIT 1) q) z;
  SELECT count(*) INTO f FROM (SELECT x, q.k FROM unnest(p[1:1000]) x CROSS JOIN LATERAL
      (SELECT k FROM sb WHERE sb.k <= x ORDER BY k DESC LIMIT 1) q
    EXCEPT ALL SELECT x, q.k FROM unnest(p[1:1000]) x CROSS JOIN LATERAL
      (SELECT k FROM s WHERE s.k <= x ORDER BY k DESC LIMIT 1) q) z;
  SELECT count(*) INTO n FROM unnest(p) u(x) JOIN sb t ON t.k = u.x;
  RETURN format('%s %s %s %s %s %s %s', a, b, c, d, e, f, n);
END $f$;
});

my $right = qr/^0 0 0 0 0 0 [1-9][0-9]*$/;
my $psql = $node->installed_command('psql');

# One lookup batch of 3000 probes, as "rows:sum of keys"; and the btree
# twin's answer to the same question.
my $batch_sql = "SELECT count(*) || ':' || sum(key) FROM gpuidx_lookup('s_gi', sprobes(5))";
my $batch_ref_sql = "SELECT count(*) || ':' || sum(t.k) FROM unnest(sprobes(5)) u(x) JOIN sb t ON t.k = u.x";

# The pid of the gpuidx service ('' when none runs).
sub service_pid
{
	return $node->safe_psql('postgres',
		"SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE backend_type = 'gpuidx service'");
}

# Set gpuidx.service_test_delay (ms; 0 resets it) and give the service time
# to read it.
sub set_delay
{
	my ($ms) = @_;
	my $sql = $ms ? "ALTER SYSTEM SET gpuidx.service_test_delay = $ms" : 'ALTER SYSTEM RESET gpuidx.service_test_delay';
	$node->safe_psql('postgres', "$sql; SELECT pg_reload_conf();");
	usleep(500_000);
}

# A psql running $sql in the background: (harness, \stdout, \stderr).
sub start_psql
{
	my ($n, $sql) = @_;
	my ($out, $err) = ('', '');
	my $h = IPC::Run::start([ $psql, '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $n->connstr('postgres'), '-c', $sql ],
		'<', \undef, '>', \$out, '2>', \$err);
	return ($h, \$out, \$err);
}

# Wait until a backend running $batch_sql waits on the service (wait
# event Extension); true when it does within 10 s.
sub batch_in_flight
{
	my $t0 = time();
	while (time() - $t0 < 10)
	{
		return 1 if $node->safe_psql('postgres', q{
SELECT count(*) > 0 FROM pg_stat_activity
 WHERE backend_type = 'client backend' AND wait_event_type = 'Extension'
   AND query LIKE '%gpuidx_lookup(''s_gi'', sprobes(5))%'}) eq 't';
		usleep(50_000);
	}
	return 0;
}

# --- (a) the service, gpuidx_info and the image list -------------------------
$node->poll_query_until('postgres',
	"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'gpuidx service'")
  or die 'the gpuidx service did not start';
like(service_pid(), qr/^\d+$/, '(a) one gpuidx service in pg_stat_activity');
like($node->safe_psql('postgres', 'SELECT scheck(1)'), $right, '(a) answers equal the btree twin');
is($node->safe_psql('postgres', "SELECT gpuidx_info('s_gi')->>'service'"), 'true',
	'(a) gpuidx_info says the image lives in the service');
is($node->safe_psql('postgres', q{
SELECT count(*), bool_and(database = current_database()), bool_and(shared_bytes > 0), bool_and(entries >= 60000)
  FROM gpuidx_service_images WHERE index = 's_gi'::regclass AND is_current}),
	'1|t|t|t', '(a) gpuidx_service_images lists the index with its database and bytes');
my $batch_ref = $node->safe_psql('postgres', $batch_ref_sql);
like($batch_ref, qr/^[1-9]\d*:-?\d+$/, '(b) the reference batch has rows');
is($node->safe_psql('postgres', $batch_sql), $batch_ref, '(b) the batch equals the btree twin before any kill');

# --- (b) kill -9 of the service mid-batch ------------------------------------
{
	set_delay(3000);
	my $old = service_pid();
	my ($h, $out, $err) = start_psql($node, $batch_sql);
	ok(batch_in_flight(), '(b) the batch waits on the service');
	ok(kill('KILL', $old), '(b) kill -9 of the service');
	$h->finish;
	my $rc = $? >> 8;
	chomp(my $got = $$out);
	# A SIGKILLed background worker makes the postmaster restart every
	# process: the session is ended; an answer, if one came, must be right.
	if ($rc == 0)
	{
		is($got, $batch_ref, '(b) kill -9: the answer that came is right');
	}
	else
	{
		is($got, '', '(b) kill -9: no answer from the failed session');
		like($$err, qr/terminating connection|server closed the connection|connection to server was lost/,
			'(b) kill -9: the session ends with a clear error');
	}
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'gpuidx service'")
	  or die 'the gpuidx service did not come back after kill -9';
	my $new = service_pid();
	isnt($new, $old, '(b) kill -9: the service came back with a new pid');
	set_delay(0);
	is($node->safe_psql('postgres', $batch_sql), $batch_ref, '(b) kill -9: the batch is right after the restart');
	like($node->safe_psql('postgres', 'SELECT scheck(2)'), $right, '(b) kill -9: answers equal the btree twin after the restart');
	is($node->safe_psql('postgres', "SELECT gpuidx_info('s_gi')->>'service'"), 'true',
		'(b) kill -9: the image lives in the service again');
}

# --- (b) kill -TERM: the service exits cleanly and restarts alone ------------
{
	my $bystander = $node->background_psql('postgres', on_error_stop => 0);
	is($bystander->query_safe('SELECT 1'), '1', '(b) a session opened before kill -TERM');
	set_delay(3000);
	my $old = service_pid();
	my ($h, $out, $err) = start_psql($node, $batch_sql);
	ok(batch_in_flight(), '(b) the batch waits on the service');
	ok(kill('TERM', $old), '(b) kill -TERM of the service');
	# while it is away (restart after 1 s): answered on the host, right
	is($node->safe_psql('postgres', $batch_sql), $batch_ref, '(b) kill -TERM: a batch while the service is away is right');
	$h->finish;
	chomp(my $got = $$out);
	is($? >> 8, 0, '(b) kill -TERM: the batch in flight did not fail');
	is($got, $batch_ref, '(b) kill -TERM: the batch in flight is right');
	$node->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'gpuidx service' AND pid <> $old")
	  or die 'the gpuidx service did not come back after kill -TERM';
	set_delay(0);
	my ($one, $ret) = $bystander->query('SELECT 1');
	is("$one|$ret", '1|0', '(b) kill -TERM: no cluster restart (the older session lives on)');
	like($bystander->query_safe('SELECT scheck(3)'), $right, '(b) kill -TERM: answers right after the service returned');
	is($node->safe_psql('postgres', $batch_sql), $batch_ref, '(b) kill -TERM: the batch is right after the service returned');
	$bystander->quit;
}

# --- (c) cancel while waiting on the service ---------------------------------
{
	my $session = $node->background_psql('postgres', on_error_stop => 0);
	$session->query_safe('\set VERBOSITY verbose');
	is($session->query_safe($batch_sql), $batch_ref, '(c) the session answers before the delay');
	set_delay(8000);
	my $t0 = time();
	my ($out, $ret) = $session->query("SET statement_timeout = '200ms'; $batch_sql");
	my $elapsed = time() - $t0;
	is($ret, 1, '(c) the batch waiting on the service errors out');
	like($session->{stderr}, qr/57014/, '(c) with SQLSTATE 57014 (query_canceled)');
	cmp_ok($elapsed, '<', 4, '(c) promptly (well before the 8 s delay)');
	$session->{stderr} = '';
	set_delay(0);
	($out, $ret) = $session->query("SET statement_timeout = 0; $batch_sql");
	is("$out|$ret", "$batch_ref|0", '(c) the same session then answers right');
	$session->quit;
}

# --- (d) 50+ concurrent connections ------------------------------------------
{
	my $clients = 54;
	my @runs;
	for my $c (1 .. $clients)
	{
		push @runs, [ start_psql($node, "SELECT scheck($c); SELECT scheck(" . ($c + 100) . ')') ];
	}
	# while they run: one service process, each image version listed once
	usleep(1_000_000);
	is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'gpuidx service'"),
		'1', '(d) one service process under 54 clients');
	is($node->safe_psql('postgres', q{
SELECT count(*) = count(DISTINCT image_id), count(*) FILTER (WHERE is_current AND index = 's_gi'::regclass)
  FROM gpuidx_service_images}), 't|1', '(d) images listed once per version, one current image of s_gi');
	my ($ok, $failed) = (0, '');
	for my $r (@runs)
	{
		my ($h, $out, $err) = @$r;
		$h->finish;
		my @lines = split /\n/, $$out;
		if ($? == 0 && @lines == 2 && (grep { $_ =~ $right } @lines) == 2)
		{
			$ok++;
		}
		else
		{
			$failed .= "[$$out|$$err]";
		}
	}
	is($ok, $clients, "(d) all $clients clients' answers equal the btree twin") or diag($failed);
	is($node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'gpuidx service'"),
		'1', '(d) still one service process');
}

# --- (e) concurrent writers and readers --------------------------------------
{
	my @writers;
	for my $w (0 .. 2)
	{
		my $sql = '';
		for my $i (1 .. 25)
		{
			my $base = 100000 + $w * 100000 + $i * 200;
			# each writer touches only its own ids (id % 3 = w): no deadlocks
			$sql .= "SELECT on_both('INSERT INTO \@T\@ SELECT g, hashint4(g) % 50000, g % 13 "
			  . "FROM generate_series($base, $base + 199) g WHERE g % 3 = $w');\n";
			$sql .= "SELECT on_both('UPDATE \@T\@ SET k = k + 1 WHERE id % 3 = $w AND id % 101 = $i');\n";
			$sql .= "SELECT on_both('DELETE FROM \@T\@ WHERE id % 3 = $w AND id % 211 = $i');\n";
		}
		push @writers, [ start_psql($node, $sql) ];
	}
	my @readers;
	for my $r (1 .. 4)
	{
		my $sql = '';
		$sql .= "BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT scheck(" . ($r * 10 + $_) . "); COMMIT;\n"
		  for 1 .. 6;
		push @readers, [ start_psql($node, $sql) ];
	}
	for my $w (@writers)
	{
		my ($h, $out, $err) = @$w;
		$h->finish;
		is($? >> 8, 0, '(e) a writer finished without error') or diag($$err);
	}
	for my $r (@readers)
	{
		my ($h, $out, $err) = @$r;
		$h->finish;
		my @lines = grep { $_ ne '' } split /\n/, $$out;
		is($? >> 8, 0, '(e) a reader finished without error') or diag($$err);
		is(scalar(grep { $_ =~ $right } @lines), 6,
			'(e) each of its 6 snapshots: gpuidx answers equal the btree twin') or diag($$out);
	}
	like($node->safe_psql('postgres', 'SELECT scheck(77)'), $right, '(e) after the writers: answers equal the btree twin');
	is($node->safe_psql('postgres', q{
SET enable_seqscan = off; SET enable_bitmapscan = off;
SELECT (SELECT count(*) FROM (SELECT id, k FROM s WHERE k >= -9223372036854775808
                              EXCEPT ALL SELECT id, k FROM sb WHERE k IS NOT NULL) x),
       (SELECT count(*) FROM (SELECT id, k FROM sb WHERE k IS NOT NULL
                              EXCEPT ALL SELECT id, k FROM s WHERE k >= -9223372036854775808) y)}),
		'0|0', '(e) after the writers: every key of the index equals the twin');
}

# --- (f) a hot standby in service mode ---------------------------------------
{
	$node->backup('svc_backup');
	my $standby = PostgreSQL::Test::Cluster->new('service_standby');
	$standby->init_from_backup($node, 'svc_backup', has_streaming => 1);
	$standby->start;
	$node->safe_psql('postgres', q{
SELECT on_both('INSERT INTO @T@ SELECT g, hashint4(g) % 50000, 1 FROM generate_series(500001, 520000) g');
SELECT on_both('DELETE FROM @T@ WHERE id % 37 = 0');
});
	$node->wait_for_catchup($standby, 'replay', $node->lsn('insert'));
	$standby->poll_query_until('postgres',
		"SELECT count(*) = 1 FROM pg_stat_activity WHERE backend_type = 'gpuidx service'")
	  or die 'no gpuidx service on the standby';
	is($standby->safe_psql('postgres', 'SELECT pg_is_in_recovery()'), 't', '(f) the standby is in recovery');
	like($standby->safe_psql('postgres', 'SELECT scheck(5)'), $right, '(f) standby: answers equal the btree twin');
	is($standby->safe_psql('postgres', "SELECT gpuidx_info('s_gi')->>'service'"), 'true',
		'(f) standby: gpuidx_info says service');
	# more changes, replayed: the standby's image follows
	$node->safe_psql('postgres', q{
SELECT on_both('INSERT INTO @T@ SELECT g, hashint4(g) % 50000, 2 FROM generate_series(520001, 530000) g');
SELECT on_both('UPDATE @T@ SET k = k - 3 WHERE id % 41 = 0');
});
	$node->wait_for_catchup($standby, 'replay', $node->lsn('insert'));
	like($standby->safe_psql('postgres', 'SELECT scheck(6)'), $right, '(f) standby after more replay: answers equal the btree twin');
	$standby->stop;
}

# --- (g) dropped and replaced indexes leave the store promptly ---------------

# Wait up to $secs for $sql to return 't'; the seconds it took, or undef.
sub within
{
	my ($sql, $secs) = @_;
	my $t0 = time();
	while (time() - $t0 < $secs)
	{
		return time() - $t0 if $node->safe_psql('postgres', $sql) eq 't';
		usleep(100_000);
	}
	return undef;
}

$node->safe_psql('postgres', q{
CREATE FUNCTION gtable(name text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
  EXECUTE format('CREATE TABLE %I (id int, k int8)', name);
  EXECUTE format('INSERT INTO %I SELECT g, g %% 3000 FROM generate_series(1, 20000) g', name);
  EXECUTE format('CREATE INDEX %I ON %I USING gpuidx (k)', name || '_gi', name);
END $f$;
-- a batch on the index (publishes its image): rows found
CREATE FUNCTION gtouch(idx regclass) RETURNS bigint LANGUAGE sql AS $f$
  SELECT count(*) FROM gpuidx_lookup(idx, ARRAY(SELECT g::int8 FROM generate_series(1, 1000) g))
$f$;
SELECT gtable('g_drop'), gtable('g_droptable'), gtable('g_trunc'), gtable('g_reindex'), gtable('g_rollback');
});

for my $t (qw(g_drop g_droptable g_trunc g_reindex g_rollback))
{
	is($node->safe_psql('postgres', "SELECT gtouch('${t}_gi')"), '7000', "(g) $t: the index answers");
}
my %oid;
my %ids;
for my $t (qw(g_drop g_droptable g_trunc g_reindex g_rollback))
{
	$oid{$t} = $node->safe_psql('postgres', "SELECT '${t}_gi'::regclass::oid");
	$ids{$t} = $node->safe_psql('postgres',
		"SELECT string_agg(image_id::text, ',') FROM gpuidx_service_images() WHERE index_oid = $oid{$t}");
	like($ids{$t}, qr/^\d+(,\d+)*$/, "(g) $t: its image is in the store");
}

# Are the images $ids all gone from the store?
sub gone_sql
{
	my ($ids) = @_;
	return "SELECT count(*) = 0 FROM gpuidx_service_images() WHERE image_id IN ($ids)";
}

$node->safe_psql('postgres', 'DROP INDEX g_drop_gi');
ok(defined within(gone_sql($ids{g_drop}), 5), '(g) DROP INDEX: its images leave the store within 5 s');

$node->safe_psql('postgres', 'DROP TABLE g_droptable');
ok(defined within(gone_sql($ids{g_droptable}), 5), '(g) DROP TABLE: its index\'s images leave the store within 5 s');

$node->safe_psql('postgres', 'TRUNCATE g_trunc');
ok(defined within(gone_sql($ids{g_trunc}), 5), '(g) TRUNCATE: the old relfilenode\'s images leave the store within 5 s');
$node->safe_psql('postgres', 'INSERT INTO g_trunc SELECT g, g % 500 FROM generate_series(1, 3000) g');
is($node->safe_psql('postgres', "SELECT gtouch('g_trunc_gi')"), '2994', '(g) TRUNCATE: the index answers the new rows');

$node->safe_psql('postgres', 'REINDEX INDEX g_reindex_gi');
ok(defined within(gone_sql($ids{g_reindex}), 5), '(g) REINDEX: the old relfilenode\'s images leave the store within 5 s');
is($node->safe_psql('postgres', "SELECT gtouch('g_reindex_gi')"), '7000', '(g) REINDEX: the index answers the same');
is($node->safe_psql('postgres',
	"SELECT count(*) FROM gpuidx_service_images WHERE index = 'g_reindex_gi'::regclass AND is_current"),
	'1', '(g) REINDEX: one current image of the new relfilenode');

$node->safe_psql('postgres', 'BEGIN; DROP INDEX g_rollback_gi; ROLLBACK;');
usleep(1_500_000);    # past the service's housekeeping
is($node->safe_psql('postgres',
	"SELECT count(*) FROM gpuidx_service_images() WHERE index_oid = $oid{g_rollback} AND is_current"),
	'1', '(g) a rolled-back DROP INDEX keeps the image');
is($node->safe_psql('postgres', "SELECT gtouch('g_rollback_gi')"), '7000', '(g) and the index still answers');

# a drop in a subtransaction that rolls back, then a committed one
$node->safe_psql('postgres', 'BEGIN; SAVEPOINT a; DROP TABLE g_rollback; ROLLBACK TO a; COMMIT;');
usleep(1_500_000);
is($node->safe_psql('postgres',
	"SELECT count(*) FROM gpuidx_service_images() WHERE index_oid = $oid{g_rollback} AND is_current"),
	'1', '(g) a DROP TABLE rolled back to a savepoint keeps the image');
$node->safe_psql('postgres', 'BEGIN; SAVEPOINT a; DROP TABLE g_rollback; RELEASE a; COMMIT;');
ok(defined within("SELECT count(*) = 0 FROM gpuidx_service_images() WHERE index_oid = $oid{g_rollback}", 5),
	'(g) a DROP TABLE committed through a savepoint frees the images');

# DROP DATABASE frees the images of its indexes
$node->safe_psql('postgres', 'CREATE DATABASE gdb');
$node->safe_psql('gdb', q{
CREATE EXTENSION gpuidx;
CREATE TABLE x (k int8);
INSERT INTO x SELECT g % 3000 FROM generate_series(1, 20000) g;
CREATE INDEX x_gi ON x USING gpuidx (k);
});
is($node->safe_psql('gdb', "SELECT count(*) FROM gpuidx_lookup('x_gi', ARRAY(SELECT g::int8 FROM generate_series(1, 1000) g))"),
	'7000', '(g) an index in another database answers');
my $gdb_ids = $node->safe_psql('postgres', q{
SELECT string_agg(image_id::text, ',') FROM gpuidx_service_images() s JOIN pg_database d ON d.oid = s.database_oid
 WHERE d.datname = 'gdb'});
like($gdb_ids, qr/^\d+(,\d+)*$/, '(g) its image is in the store, under its database');
$node->safe_psql('postgres', 'DROP DATABASE gdb');
ok(defined within(gone_sql($gdb_ids), 5), '(g) DROP DATABASE: its images leave the store within 5 s');

like($node->safe_psql('postgres', 'SELECT scheck(9)'), $right, '(g) the other index still answers right');

$node->stop;
done_testing();
