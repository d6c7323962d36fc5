# The structure an index was built with (chosen by gpuidx.default_structure
# when CREATE INDEX gave none) survives every rebuild made under another
# default: REINDEX, REINDEX CONCURRENTLY, REINDEX TABLE, and pg_dump restored
# into another database by a session with the other default.
use strict;
use warnings;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;

my $engine = $ENV{GPUIDX_ENGINE} // 'auto';
my $node = PostgreSQL::Test::Cluster->new('structure_kept');
$node->init;
$node->append_conf('postgresql.conf', qq{
gpuidx.engine = '$engine'
autovacuum = off
});
$node->start;

# the structure of each index, as the image built from its pages reports
sub structures
{
	my ($db, $session_default) = @_;
	return $node->safe_psql($db,
		"SET gpuidx.default_structure = $session_default; "
		  . "SELECT string_agg(c.relname || '=' || (gpuidx_info(c.oid)->>'structure'), ' ' ORDER BY c.relname) "
		  . "FROM pg_class c JOIN pg_am a ON a.oid = c.relam WHERE a.amname = 'gpuidx' AND c.relkind = 'i'");
}

$node->safe_psql('postgres', q{
CREATE EXTENSION gpuidx;
CREATE TABLE s (id int, k int8);
INSERT INTO s SELECT g, g % 300 FROM generate_series(1, 5000) g;
SET gpuidx.default_structure = veb;
CREATE INDEX s_veb ON s USING gpuidx (k);
SET gpuidx.default_structure = btree;
CREATE INDEX s_btree ON s USING gpuidx ((k + 1));
CREATE INDEX s_explicit ON s USING gpuidx ((k + 2)) WITH (structure = veb);
});
my $built = 's_btree=btree s_explicit=veb s_veb=veb';
is(structures('postgres', 'btree'), $built, 'built as the session defaults chose');

$node->safe_psql('postgres', 'SET gpuidx.default_structure = btree; REINDEX INDEX s_veb; '
	  . 'SET gpuidx.default_structure = veb; REINDEX INDEX s_btree;');
is(structures('postgres', 'btree'), $built, 'REINDEX under the other default keeps them');

$node->safe_psql('postgres', 'SET gpuidx.default_structure = btree; REINDEX INDEX CONCURRENTLY s_veb;');
$node->safe_psql('postgres', 'SET gpuidx.default_structure = veb; REINDEX INDEX CONCURRENTLY s_btree;');
is(structures('postgres', 'btree'), $built, 'REINDEX CONCURRENTLY under the other default keeps them');

$node->safe_psql('postgres', 'SET gpuidx.default_structure = btree; REINDEX TABLE s;');
$node->safe_psql('postgres', 'SET gpuidx.default_structure = veb; REINDEX TABLE CONCURRENTLY s;');
is(structures('postgres', 'veb'), $built, 'REINDEX TABLE (CONCURRENTLY) keeps them');

# dump, and restore under each default
my $dump = $node->basedir . '/s.sql';
$node->command_ok([ 'pg_dump', '-d', $node->connstr('postgres'), '-f', $dump ], 'pg_dump');
for my $default ('btree', 'veb')
{
	my $db = "restored_$default";
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	{
		local $ENV{PGOPTIONS} = "-c gpuidx.default_structure=$default";
		$node->command_ok([ 'psql', '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', $node->connstr($db), '-f', $dump ],
			"restore with default $default");
	}
	is(structures($db, $default), $built, "restored with default $default: structures kept");
	is($node->safe_psql($db, "SET enable_seqscan = off; SELECT count(*) FROM s WHERE k = ANY ('{1,2,3}')"),
		'51', "restored with default $default: the index answers");
}

$node->stop;
done_testing();
