# Crash recovery of gpuidx indexes: background inserts and deletes, a
# backend killed with SIGKILL (the postmaster resets all backends and replays
# WAL) and an immediate shutdown, with entries in the pending list and after
# folds; after each restart the index answers like PostgreSQL's btree and like
# sequential scans (every batch function, index/bitmap/custom scans).  A
# second table's index has INCLUDE columns: after each restart its
# index-only scans return the heap's values.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;

# The work run in the background: batches of inserts, each committed, with a
# delete now and then; runs until the server is killed.
my $work_sql = <<'SQL';
DO $$
BEGIN
  FOR i IN 1 .. 1000000 LOOP
    INSERT INTO t (k) SELECT (random() * 4000 - 2000)::int8 FROM generate_series(1, 50);
    INSERT INTO ti (k, v, f)
      SELECT CASE WHEN g = 1 THEN NULL ELSE (random() * 400)::int8 END,
             CASE WHEN g % 4 = 0 THEN NULL ELSE i * 100 + g END, random()
        FROM generate_series(1, 10) g;
    IF i % 10 = 0 THEN
      DELETE FROM t WHERE id IN (SELECT id FROM t WHERE k + 0 BETWEEN (i % 4000) - 2000 AND (i % 4000) - 1990 LIMIT 20);
      UPDATE ti SET v = -v WHERE k = i % 400;
    END IF;
    COMMIT;
  END LOOP;
END $$;
SQL


my $node = PostgreSQL::Test::Cluster->new('crash');
$node->init;
# Crash recovery checks every generic record it replays against a page image.
$node->append_conf('postgresql.conf', mode_conf() . qq{
restart_after_crash = on
autovacuum = off
wal_consistency_checking = 'generic'
});
$node->start;
$node->safe_psql('postgres', $setup_sql . $check_sql . $btree_sql . $include_sql);
verify($node, 'after build');
verify_include($node, 1, 'after build');
verify_btree($node, 'after build');

# The pending list at a crash: a limit high enough that every insert stays
# pending, then a limit low enough that the list folds again and again.
my $gen0 = $node->safe_psql('postgres', "SELECT gpuidx_info('t_gi')->>'generation'");

for my $round (['pending', 1000000], ['folding', 700])
{
	my ($name, $limit) = @$round;
	$node->append_conf('postgresql.conf', "gpuidx.pending_limit = $limit");
	$node->reload;
	my $before = $node->safe_psql('postgres', 'SELECT count(id) FROM t');

	# A transaction left open at the crash: its rows must never appear.
	my $open = $node->background_psql('postgres', on_error_stop => 0);
	$open->query_safe("BEGIN; INSERT INTO t (k) SELECT 5000000 + g FROM generate_series(1, 300) g;");

	# Inserts and deletes in the background, killed mid-work.
	my $bg = $node->background_psql('postgres', on_error_stop => 0);
	my $pid = $bg->query_safe('SELECT pg_backend_pid()');
	chomp $pid;
	$bg->query_until(qr/work-started/, "\\echo work-started\n$work_sql\n");
	ok( $node->poll_query_until('postgres', "SELECT count(id) > $before + 3000 FROM t"),
		"$name: background inserts progressed");
	my $info = $node->safe_psql('postgres',
		"SELECT (j->>'pending_entries')::bigint > 0, (j->>'generation')::bigint > $gen0 FROM gpuidx_info('t_gi') j");
	note "$name: pending>0, folded since build: $info";
	if ($name eq 'pending')
	{
		like($info, qr/^t\|/, "$name: entries are in the pending list at the crash");
	}
	else
	{
		like($info, qr/\|t$/, "$name: the pending list has folded before the crash");
	}

	if ($name eq 'pending')
	{
		# kill -9 a backend: the postmaster resets every backend and recovers
		# (wait for the reset to begin: until then a new connection may be
		# made and then thrown out by it)
		my $log_offset = -s $node->logfile;
		kill 'KILL', $pid;
		$node->wait_for_log(qr/all server processes terminated; reinitializing/, $log_offset);
	}
	else
	{
		# an immediate shutdown mid-work: no checkpoint, recovery from WAL
		$node->stop('immediate');
		$node->start;
	}
	eval { $bg->quit; };
	eval { $open->quit; };
	ok($node->poll_query_until('postgres', 'SELECT true'), "$name: server back after the crash");

	is($node->safe_psql('postgres', 'SELECT count(id) FROM t WHERE k BETWEEN 5000001 AND 5000300'),
		'0', "$name: the open transaction's rows are gone");
	verify($node, "$name: after crash recovery");
	verify_btree($node, "$name: after crash recovery");
	verify_include($node, 1, "$name: after crash recovery");

	# more work after recovery, then the list folds (VACUUM) and crash again
	$node->safe_psql('postgres',
		"INSERT INTO t (k) SELECT (random() * 4000 - 2000)::int8 FROM generate_series(1, 1000); "
		  . "DELETE FROM t WHERE id % 50 = 7;");
	verify($node, "$name: writes after recovery");
	$node->safe_psql('postgres', 'VACUUM t; VACUUM ti');
	is($node->safe_psql('postgres', "SELECT gpuidx_info('t_gi')->>'pending_entries'"),
		'0', "$name: VACUUM folded the pending list");
	$node->safe_psql('postgres',
		"INSERT INTO t (k) SELECT (random() * 4000 - 2000)::int8 FROM generate_series(1, 200);");
	$node->stop('immediate');
	$node->start;
	verify($node, "$name: after fold, inserts and a second crash");
	verify_btree($node, "$name: after fold, inserts and a second crash");
	verify_include($node, 1, "$name: after fold, inserts and a second crash");
}

# the index is still usable for writes and REINDEX after all this
$node->safe_psql('postgres', 'REINDEX INDEX t_gi; REINDEX INDEX ti_gi');
verify($node, 'after REINDEX');
verify_include($node, 1, 'after REINDEX');

$node->stop;
done_testing();
