-- Every batch function on the index named by psql variable idx, through err().
SELECT err(format('SELECT * FROM gpuidx_lookup(%L, ''{1}'')', :'idx'));
SELECT err(format('SELECT * FROM gpuidx_predecessor(%L, ''{1}'')', :'idx'));
SELECT err(format('SELECT * FROM gpuidx_successor(%L, ''{1}'')', :'idx'));
SELECT err(format('SELECT * FROM gpuidx_range(%L, ''{1}'', ''{2}'')', :'idx'));
SELECT err(format('SELECT gpuidx_range_count(%L, ''{1}'', ''{2}'')', :'idx'));
SELECT err(format('SELECT gpuidx_info(%L)', :'idx'));
SELECT err(format('SELECT gpuidx_verify(%L)', :'idx'));
