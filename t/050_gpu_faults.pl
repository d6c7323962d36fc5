# On the GPU engine (GPUIDX_ENGINE=gpu; skipped otherwise): a device memory
# limit too small for an image is a clear out-of-memory error, the backend
# survives and the next query works; under a limit that fits one image at a
# time, images are evicted least-recently-used and every answer stays right.
# Per backend the limit is the session's setting; in service mode it is the
# service's (postgresql.conf, reloaded), for all backends together.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;

my $engine = $ENV{GPUIDX_ENGINE} // 'auto';
plan skip_all => 'needs GPUIDX_ENGINE=gpu (a GPU machine)' if $engine ne 'gpu';

my $node = gpuidx_node('gpu_faults', q{
jit = off
});
my $service = GpuidxTest::service_mode();

# SQL that puts the device memory limit in force (undef: the default) for
# the statements that follow: a SET per backend, the server's configuration
# in service mode (the service rereads it on reload; give it a moment).
sub limit_sql
{
	my ($limit) = @_;
	if (!$service)
	{
		return defined $limit
		  ? "SET gpuidx.device_memory_limit = '$limit';"
		  : "RESET gpuidx.device_memory_limit;";
	}
	$node->safe_psql('postgres',
		defined $limit
		? "ALTER SYSTEM SET gpuidx.device_memory_limit = '$limit'"
		: "ALTER SYSTEM RESET gpuidx.device_memory_limit");
	$node->safe_psql('postgres', 'SELECT pg_reload_conf(); SELECT pg_sleep(0.5);');
	return '';
}
$node->safe_psql('postgres', q{
CREATE EXTENSION gpuidx;
CREATE TABLE a (k int8);
CREATE TABLE b (k int8);
INSERT INTO a SELECT g FROM generate_series(1, 1000000) g;
INSERT INTO b SELECT -g FROM generate_series(1, 1000000) g;
CREATE INDEX a_g ON a USING gpuidx (k);
CREATE INDEX b_g ON b USING gpuidx (k);
});

# Batches of 1000 probes go to the device (gpuidx.gpu_min_batch is 256; the
# host answers smaller ones without building a device image at all).
# Too small a limit: a clear error with SQLSTATE 53200, and the session goes on.
my ($rc, $out, $err) = $node->psql('postgres', limit_sql('1MB') . q{
SELECT count(*) FROM gpuidx_lookup('a_g', ARRAY(SELECT g::int8 FROM generate_series(1, 1000) g));
}, extra_params => ['-v', 'VERBOSITY=verbose']);
isnt($rc, 0, 'a 1 MB device limit refuses a 10^6-key image');
like($err, qr/53200/, 'out of memory SQLSTATE');
like($err, qr/device_memory_limit/, 'the message names the limit');

my $set_1mb = limit_sql('1MB');
$node->safe_psql('postgres', $set_1mb . q{
DO $$ BEGIN PERFORM count(*) FROM gpuidx_lookup('a_g', ARRAY(SELECT g::int8 FROM generate_series(1, 1000) g)); EXCEPTION WHEN out_of_memory THEN NULL; END $$;
});
is( $node->safe_psql('postgres', limit_sql(undef) . q{
SELECT count(*) FROM gpuidx_lookup('a_g', ARRAY(SELECT g::int8 FROM generate_series(0, 1000) g));
SELECT gpuidx_info('a_g')->>'engine';
}), "1000\ngpu", 'after the error the same backend answers on the GPU');

# A batch the host answers needs no device image: with a limit too small for
# one, a 3-probe lookup still works.
is( $node->safe_psql('postgres', limit_sql('1MB') . q{
SELECT count(*) FROM gpuidx_lookup('b_g', ARRAY[-1, -2, -3, 1]::int8[]);
}), '3', 'a small batch is answered on the host, with no device image');

# A limit that holds one image: alternating indexes evict each other.
my $bytes = $node->safe_psql('postgres', q{SELECT gpuidx_info('a_g')->>'device_bytes'});
cmp_ok($bytes, '>', 1_000_000, 'the image lives on the device');
my $limit_mb = int($bytes * 1.5 / 1048576) + 1;
is( $node->safe_psql('postgres', limit_sql("${limit_mb}MB") . qq{
SELECT (SELECT count(*) FROM gpuidx_lookup('a_g', ARRAY(SELECT g::int8 FROM generate_series(5, 304) g)))
     + (SELECT count(*) FROM gpuidx_lookup('b_g', ARRAY(SELECT -g::int8 FROM generate_series(5, 404) g)))
     + (SELECT count(*) FROM gpuidx_lookup('a_g', ARRAY(SELECT g::int8 FROM generate_series(7, 506) g)))
     + (SELECT count(*) FROM gpuidx_lookup('b_g', ARRAY(SELECT -g::int8 FROM generate_series(7, 606) g)));
}), '1800', 'images evicted least-recently-used give the right answers');

$node->stop;
done_testing();
