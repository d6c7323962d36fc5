# On the GPU engine (GPUIDX_ENGINE=gpu; skipped otherwise): a device memory
# limit too small for an image is a clear out-of-memory error, the backend
# survives and the next query works; under a limit that fits one image at a
# time, images are evicted least-recently-used and every answer stays right.
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
my ($rc, $out, $err) = $node->psql('postgres', q{
SET gpuidx.device_memory_limit = '1MB';
SELECT count(*) FROM gpuidx_lookup('a_g', ARRAY(SELECT g::int8 FROM generate_series(1, 1000) g));
}, extra_params => ['-v', 'VERBOSITY=verbose']);
isnt($rc, 0, 'a 1 MB device limit refuses a 10^6-key image');
like($err, qr/53200/, 'out of memory SQLSTATE');
like($err, qr/device_memory_limit/, 'the message names the limit');

is( $node->safe_psql('postgres', q{
SET gpuidx.device_memory_limit = '1MB';
DO $$ BEGIN PERFORM count(*) FROM gpuidx_lookup('a_g', ARRAY(SELECT g::int8 FROM generate_series(1, 1000) g)); EXCEPTION WHEN out_of_memory THEN NULL; END $$;
RESET gpuidx.device_memory_limit;
SELECT count(*) FROM gpuidx_lookup('a_g', ARRAY(SELECT g::int8 FROM generate_series(0, 1000) g));
SELECT gpuidx_info('a_g')->>'engine';
}), "1000\ngpu", 'after the error the same backend answers on the GPU');

# A batch the host answers needs no device image: with a limit too small for
# one, a 3-probe lookup still works.
is( $node->safe_psql('postgres', q{
SET gpuidx.device_memory_limit = '1MB';
SELECT count(*) FROM gpuidx_lookup('b_g', ARRAY[-1, -2, -3, 1]::int8[]);
}), '3', 'a small batch is answered on the host, with no device image');

# A limit that holds one image: alternating indexes evict each other.
my $bytes = $node->safe_psql('postgres', q{SELECT gpuidx_info('a_g')->>'device_bytes'});
cmp_ok($bytes, '>', 1_000_000, 'the image lives on the device');
my $limit_mb = int($bytes * 1.5 / 1048576) + 1;
is( $node->safe_psql('postgres', qq{
SET gpuidx.device_memory_limit = '${limit_mb}MB';
SELECT (SELECT count(*) FROM gpuidx_lookup('a_g', ARRAY(SELECT g::int8 FROM generate_series(5, 304) g)))
     + (SELECT count(*) FROM gpuidx_lookup('b_g', ARRAY(SELECT -g::int8 FROM generate_series(5, 404) g)))
     + (SELECT count(*) FROM gpuidx_lookup('a_g', ARRAY(SELECT g::int8 FROM generate_series(7, 506) g)))
     + (SELECT count(*) FROM gpuidx_lookup('b_g', ARRAY(SELECT -g::int8 FROM generate_series(7, 606) g)));
}), '1800', 'images evicted least-recently-used give the right answers');

$node->stop;
done_testing();
