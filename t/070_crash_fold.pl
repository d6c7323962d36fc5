# kill -9 (immediate stop) while an insert folds a large pending list into a
# new base run: after recovery the index verifies and answers as a btree
# does; VACUUM then frees any pages the interrupted fold left behind, and
# the index verifies again.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::Bin/lib";
use GpuidxTest;
use IPC::Run;
use Time::HiRes qw(usleep);

my $node = gpuidx_node('crash_fold', q{
jit = off
gpuidx.pending_limit = 10000000
wal_consistency_checking = 'generic'
});
$node->safe_psql('postgres', q{
CREATE EXTENSION gpuidx;
CREATE TABLE f (k int8);
INSERT INTO f SELECT (random() * 100000)::int8 FROM generate_series(1, 300000);
CREATE INDEX f_g ON f USING gpuidx (k);
CREATE INDEX f_b ON f (k);
INSERT INTO f SELECT (random() * 100000)::int8 FROM generate_series(1, 200000);
});
is($node->safe_psql('postgres', q{SELECT (gpuidx_info('f_g')->>'pending_entries')::int > 0}),
	't', 'entries wait in the pending list');

# One insert past a pending limit of 1 folds everything; stop mid-way.
my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[
		'psql', '-X', '-d', $node->connstr('postgres'),
		'-c', 'SET gpuidx.pending_limit = 1',
		'-c', 'INSERT INTO f VALUES (424242)'
	],
	'>', \$out, '2>', \$err);
usleep(150_000);
$node->stop('immediate');
$h->finish;
$node->start;

is($node->safe_psql('postgres', q{SELECT gpuidx_verify('f_g')}), 't',
	'the index verifies after the crash');
my $same = q{
SELECT count(*) FROM (
  (SELECT probe, ctid FROM gpuidx_lookup('f_g', ARRAY(SELECT generate_series(0, 100000)::int8))
   EXCEPT ALL
   SELECT p.o::int, f.ctid FROM unnest(ARRAY(SELECT generate_series(0, 100000)::int8)) WITH ORDINALITY p(v, o)
     JOIN f ON f.k = p.v)
  UNION ALL
  (SELECT p.o::int, f.ctid FROM unnest(ARRAY(SELECT generate_series(0, 100000)::int8)) WITH ORDINALITY p(v, o)
     JOIN f ON f.k = p.v
   EXCEPT ALL
   SELECT probe, ctid FROM gpuidx_lookup('f_g', ARRAY(SELECT generate_series(0, 100000)::int8)))) d};
is($node->safe_psql('postgres', $same), '0', 'lookups equal the join after the crash');
is($node->safe_psql('postgres', q{SELECT count(*) FROM f}),
	$node->safe_psql('postgres', q{SELECT count(*) FROM gpuidx_lookup('f_g', ARRAY(SELECT generate_series(0, 100000)::int8))})
	  + ($node->safe_psql('postgres', q{SELECT count(*) FROM f WHERE k = 424242})),
	'every row is found through the index');

$node->safe_psql('postgres', 'VACUUM f');
is($node->safe_psql('postgres', q{SELECT gpuidx_verify('f_g')}), 't',
	'the index verifies after VACUUM reclaims the pages');
is($node->safe_psql('postgres', q{SELECT (gpuidx_info('f_g')->>'pending_entries')::int}), '0',
	'VACUUM folded the pending list');
is($node->safe_psql('postgres', $same), '0', 'lookups equal the join after VACUUM');

$node->stop;
done_testing();
