# A session that planned with gpuidx keeps planning GpuIndexScan after
# another session drops and re-creates the extension (the access method gets
# a new OID): nothing may hold on to the old one.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $engine = $ENV{GPUIDX_ENGINE} // 'auto';
my $node = PostgreSQL::Test::Cluster->new('am_recreated');
$node->init;
$node->append_conf('postgresql.conf', qq{
gpuidx.engine = '$engine'
autovacuum = off
});
$node->start;

my $setup = q{
CREATE EXTENSION gpuidx;
CREATE TABLE r (id int, k int8);
INSERT INTO r SELECT g, g % 1000 FROM generate_series(1, 20000) g;
CREATE INDEX r_gi ON r USING gpuidx (k);
ANALYZE r;
};
$node->safe_psql('postgres', $setup);
my $old_am = $node->safe_psql('postgres', "SELECT oid FROM pg_am WHERE amname = 'gpuidx'");

my $long = $node->background_psql('postgres', on_error_stop => 0);
$long->query_safe('SET enable_seqscan = off; SET enable_indexscan = off; SET enable_bitmapscan = off;');
my $explain = "EXPLAIN (COSTS OFF) SELECT * FROM r WHERE k = ANY ('{1,2,3}');";
my $count = "SELECT count(*) FROM r WHERE k = ANY ('{1,2,3}');";
like($long->query_safe($explain), qr/GpuIndexScan/, 'GpuIndexScan planned at first');
is($long->query_safe($count), '60', 'and answers');

for my $round (1 .. 2)
{
	$node->safe_psql('postgres', 'DROP EXTENSION gpuidx CASCADE; DROP TABLE r;' . $setup);
	my $new_am = $node->safe_psql('postgres', "SELECT oid FROM pg_am WHERE amname = 'gpuidx'");
	isnt($new_am, $old_am, "round $round: the access method has a new OID");
	$old_am = $new_am;
	like($long->query_safe($explain), qr/GpuIndexScan/,
		"round $round: the long-lived session plans GpuIndexScan again");
	is($long->query_safe($count), '60', "round $round: and answers");
}

$long->quit;
$node->stop;
done_testing();
