# Streaming replication of gpuidx indexes: a standby made from a base backup
# replays the primary's work (inserts into the pending list, deletes, key
# updates, an aborted transaction, VACUUM, folds by the pending limit,
# REINDEX, TRUNCATE); after each step, with the standby caught up, every batch
# function and index scan on the standby gives exactly the primary's answer,
# and both answer like sequential scans and PostgreSQL's btree.  A second
# table's index has INCLUDE columns: its replayed pages and image must hold
# the heap's values (index-only scans on the primary).
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;


my $primary = PostgreSQL::Test::Cluster->new('primary');
$primary->init(allows_streaming => 1);
# wal_consistency_checking: the standby checks each replayed generic record
# (the pending appends' hand-made deltas among them) against a page image.
$primary->append_conf('postgresql.conf', mode_conf() . qq{
autovacuum = off
wal_consistency_checking = 'generic'
});
$primary->start;
$primary->safe_psql('postgres', $setup_sql . $check_sql . $btree_sql . $include_sql);

# The standby starts from a base backup taken after the index was built.
$primary->backup('bk');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'bk', has_streaming => 1);
$standby->append_conf('postgresql.conf', qq{
hot_standby_feedback = on
});
$standby->start;

# What the standby must answer exactly like the primary: every function's
# full output (ctids included: a physical replica has the same heap), and
# queries through the index; ordered so the text can be compared.
my $args = "(SELECT keys FROM probes)";
my $rargs = "(SELECT lo FROM probes), (SELECT hi FROM probes)";
my %answers = (
	lookup => "SELECT probe, key, ctid FROM gpuidx_lookup('t_gi', $args) ORDER BY 1, 2, 3",
	predecessor => "SELECT probe, key, ctid FROM gpuidx_predecessor('t_gi', $args) ORDER BY 1, 2, 3",
	successor => "SELECT probe, key, ctid FROM gpuidx_successor('t_gi', $args) ORDER BY 1, 2, 3",
	range => "SELECT probe, key, ctid FROM gpuidx_range('t_gi', $rargs) ORDER BY 1, 2, 3",
	range_count => "SELECT gpuidx_range_count('t_gi', $rargs)",
	info => "SELECT j->>'structure', j->>'key_bytes', j->>'entries', j->>'base_entries', "
	  . "j->>'pending_entries', j->>'generation' FROM gpuidx_info('t_gi') j",
	index_scan => "SET gpuidx.enable_customscan = off; SET enable_seqscan = off; SET enable_bitmapscan = off; "
	  . "SELECT ctid, k FROM t WHERE k = ANY (${args}::bigint[]) ORDER BY k, ctid",
	backward_scan => "SET gpuidx.enable_customscan = off; SET enable_seqscan = off; "
	  . "SELECT u.i, x.k FROM unnest($args) WITH ORDINALITY u(v, i) "
	  . "CROSS JOIN LATERAL (SELECT k FROM t WHERE k <= u.v ORDER BY k DESC LIMIT 1) x ORDER BY 1",
	custom_scan => "SET enable_seqscan = off; SET enable_indexscan = off; SET enable_bitmapscan = off; "
	  . "SELECT id, k FROM t WHERE k BETWEEN -500 AND 500 ORDER BY id");

sub compare_nodes
{
	my ($label) = @_;
	$primary->wait_for_catchup($standby, 'replay', $primary->lsn('insert'));
	for my $what (sort keys %answers)
	{
		my $p = $primary->safe_psql('postgres', $answers{$what});
		my $s = $standby->safe_psql('postgres', $answers{$what});
		my $lines = () = $p =~ /\n/g;
		ok($p eq $s, "$label: standby answers $what like the primary ($lines lines)");
	}
	# and both answer like sequential scans, and the primary like a btree
	verify($standby, "$label: standby");
	verify($primary, "$label: primary");
	verify_btree($primary, "$label: primary");
	verify_include($standby, 0, "$label: standby");
	verify_include($primary, 1, "$label: primary");
	return;
}

compare_nodes('after backup');

# Work on the primary: pending inserts, deletes, key updates, an aborted
# transaction, then VACUUM (fold), then folds by the pending limit.
$primary->safe_psql('postgres', q{
INSERT INTO t (k) SELECT (random() * 4000 - 2000)::int8 FROM generate_series(1, 3000);
DELETE FROM t WHERE id % 11 = 0;
UPDATE t SET k = k + 1 WHERE id % 7 = 0 AND k < 9000000000000000000;
INSERT INTO ti (k, v, f) SELECT g % 300, g, -g FROM generate_series(1, 1000) g;
INSERT INTO ti (k, v, f) VALUES (NULL, 1, 1), (7, NULL, NULL);
UPDATE ti SET v = v + 1000000 WHERE id % 5 = 0;
DELETE FROM ti WHERE id % 13 = 0;
});
$primary->safe_psql('postgres', q{
BEGIN;
INSERT INTO t (k) SELECT 5000000 + g FROM generate_series(1, 500) g;
ROLLBACK;
});
my $pending = $primary->safe_psql('postgres', "SELECT (gpuidx_info('t_gi')->>'pending_entries')::bigint > 0");
is($pending, 't', 'primary has pending entries');
compare_nodes('pending entries');

$primary->safe_psql('postgres', 'VACUUM t; VACUUM ti');
is($primary->safe_psql('postgres', "SELECT gpuidx_info('t_gi')->>'pending_entries'"), '0',
	'VACUUM folded the pending list');
compare_nodes('after VACUUM');

$primary->append_conf('postgresql.conf', 'gpuidx.pending_limit = 500');
$primary->reload;
my $gen = $primary->safe_psql('postgres', "SELECT gpuidx_info('t_gi')->>'generation'");
for my $i (1 .. 8)
{
	$primary->safe_psql('postgres',
		"INSERT INTO t (k) SELECT (random() * 4000 - 2000)::int8 FROM generate_series(1, 300); "
		  . "DELETE FROM t WHERE id % 97 = $i; "
		  . "INSERT INTO ti (k, v, f) SELECT g, g * $i, NULL FROM generate_series(1, 100) g; "
		  . "UPDATE ti SET f = $i WHERE k = $i;");
}
ok($primary->safe_psql('postgres', "SELECT (gpuidx_info('t_gi')->>'generation')::bigint > $gen") eq 't',
	'the pending list folded on the primary');
compare_nodes('after folds');

# a query on the standby while the primary keeps changing the index
$primary->safe_psql('postgres', 'REINDEX INDEX t_gi; INSERT INTO t (k) SELECT g FROM generate_series(-100, 100) g;');
compare_nodes('after REINDEX and more inserts');
$primary->safe_psql('postgres', 'TRUNCATE t; INSERT INTO t (k) SELECT (random() * 4000 - 2000)::int8 FROM generate_series(1, 2000);');
compare_nodes('after TRUNCATE and refill');

$standby->stop;
$primary->stop;
done_testing();
