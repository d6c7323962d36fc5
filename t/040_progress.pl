# CREATE INDEX reports its phases in pg_stat_progress_create_index: an
# expression index on a deliberately slow function keeps the table scan
# going long enough for another session to watch it.
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

my $node = gpuidx_node('progress', q{
jit = off
});

$node->safe_psql('postgres', q{
CREATE EXTENSION gpuidx;
CREATE TABLE p (k int8);
INSERT INTO p SELECT g FROM generate_series(1, 3000) g;
-- Marked immutable so an index may use it; sleeps 1 ms a row.
CREATE FUNCTION slow_key(int8) RETURNS int8 LANGUAGE plpgsql IMMUTABLE AS
  $$BEGIN PERFORM pg_sleep(0.001); RETURN $1; END$$;
});

my ($out, $err) = ('', '');
my $h = IPC::Run::start(
	[
		'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr('postgres'),
		'-c', 'CREATE INDEX p_slow ON p USING gpuidx (slow_key(k))'
	],
	'>', \$out, '2>', \$err);

my %seen;
my $max_done = 0;
for (my $i = 0; $i < 1200 && $h->pumpable; $i++)
{
	my $row = $node->safe_psql('postgres',
		q{SELECT phase || '|' || blocks_done || '|' || blocks_total
		  FROM pg_stat_progress_create_index WHERE relid = 'p'::regclass});
	if ($row ne '')
	{
		my ($phase, $done, $total) = split /\|/, $row;
		$seen{$phase} = 1;
		$max_done = $done if $done > $max_done;
	}
	$h->pump_nb;
	usleep(20_000);
}
ok($h->finish, 'CREATE INDEX succeeded') or diag($err);

ok($seen{'building index: scanning table'},
	'the gpuidx phase "scanning table" was reported')
  or diag('phases seen: ' . join(', ', sort keys %seen));
cmp_ok($max_done, '>', 0, 'blocks done advanced during the scan');
is($node->safe_psql('postgres', q{SELECT count(*) FROM gpuidx_lookup('p_slow', ARRAY[1, 2, 3000, 3001])}),
	'3', 'the index answers after the build');
is($node->safe_psql('postgres', q{SELECT count(*) FROM pg_stat_progress_create_index}),
	'0', 'progress row gone after the build');

$node->stop;
done_testing();
