-- gpuidx 0.2
\echo Use "CREATE EXTENSION gpuidx" to load this file. \quit

CREATE FUNCTION gpuidx_handler(internal) RETURNS index_am_handler
	AS 'MODULE_PATHNAME' LANGUAGE C;

CREATE ACCESS METHOD gpuidx TYPE INDEX HANDLER gpuidx_handler;
COMMENT ON ACCESS METHOD gpuidx IS 'GPU-resident index for batched integer lookups';

-- One family for int2/int4/int8 with cross-type operators (as btree's
-- integer_ops), so an int4 column can be probed with bigint[] arrays.
CREATE OPERATOR FAMILY integer_ops USING gpuidx;

CREATE OPERATOR CLASS int2_ops DEFAULT FOR TYPE int2 USING gpuidx FAMILY integer_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >;

CREATE OPERATOR CLASS int4_ops DEFAULT FOR TYPE int4 USING gpuidx FAMILY integer_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >;

CREATE OPERATOR CLASS int8_ops DEFAULT FOR TYPE int8 USING gpuidx FAMILY integer_ops AS
	OPERATOR 1 <,
	OPERATOR 2 <=,
	OPERATOR 3 =,
	OPERATOR 4 >=,
	OPERATOR 5 >;

ALTER OPERATOR FAMILY integer_ops USING gpuidx ADD
	OPERATOR 1 < (int2, int4),
	OPERATOR 2 <= (int2, int4),
	OPERATOR 3 = (int2, int4),
	OPERATOR 4 >= (int2, int4),
	OPERATOR 5 > (int2, int4),
	OPERATOR 1 < (int2, int8),
	OPERATOR 2 <= (int2, int8),
	OPERATOR 3 = (int2, int8),
	OPERATOR 4 >= (int2, int8),
	OPERATOR 5 > (int2, int8),
	OPERATOR 1 < (int4, int2),
	OPERATOR 2 <= (int4, int2),
	OPERATOR 3 = (int4, int2),
	OPERATOR 4 >= (int4, int2),
	OPERATOR 5 > (int4, int2),
	OPERATOR 1 < (int4, int8),
	OPERATOR 2 <= (int4, int8),
	OPERATOR 3 = (int4, int8),
	OPERATOR 4 >= (int4, int8),
	OPERATOR 5 > (int4, int8),
	OPERATOR 1 < (int8, int2),
	OPERATOR 2 <= (int8, int2),
	OPERATOR 3 = (int8, int2),
	OPERATOR 4 >= (int8, int2),
	OPERATOR 5 > (int8, int2),
	OPERATOR 1 < (int8, int4),
	OPERATOR 2 <= (int8, int4),
	OPERATOR 3 = (int8, int4),
	OPERATOR 4 >= (int8, int4),
	OPERATOR 5 > (int8, int4);

CREATE FUNCTION gpuidx_lookup(idx regclass, keys bigint[])
	RETURNS TABLE(probe int, key bigint, ctid tid)
	AS 'MODULE_PATHNAME', 'gpuidx_lookup' LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuidx_lookup(regclass, bigint[]) IS 'Batch: the visible tuples whose key equals each probe';

CREATE FUNCTION gpuidx_predecessor(idx regclass, keys bigint[])
	RETURNS TABLE(probe int, key bigint, ctid tid)
	AS 'MODULE_PATHNAME', 'gpuidx_predecessor' LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuidx_predecessor(regclass, bigint[]) IS 'Batch: the tuples of the largest visible key <= each probe';

CREATE FUNCTION gpuidx_successor(idx regclass, keys bigint[])
	RETURNS TABLE(probe int, key bigint, ctid tid)
	AS 'MODULE_PATHNAME', 'gpuidx_successor' LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuidx_successor(regclass, bigint[]) IS 'Batch: the tuples of the smallest visible key >= each probe';

CREATE FUNCTION gpuidx_range(idx regclass, lo bigint[], hi bigint[])
	RETURNS TABLE(probe int, key bigint, ctid tid)
	AS 'MODULE_PATHNAME', 'gpuidx_range' LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuidx_range(regclass, bigint[], bigint[]) IS 'Batch: the visible tuples with lo <= key <= hi, per range';

CREATE FUNCTION gpuidx_range_count(idx regclass, lo bigint[], hi bigint[])
	RETURNS bigint[]
	AS 'MODULE_PATHNAME', 'gpuidx_range_count' LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuidx_range_count(regclass, bigint[], bigint[]) IS 'Batch: the number of visible tuples with lo <= key <= hi, per range';

CREATE FUNCTION gpuidx_info(idx regclass) RETURNS jsonb
	AS 'MODULE_PATHNAME', 'gpuidx_info' LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuidx_info(regclass) IS 'Structure, engine, entries, memory and timings of a gpuidx index';

CREATE FUNCTION gpuidx_verify(idx regclass) RETURNS boolean
	AS 'MODULE_PATHNAME', 'gpuidx_verify' LANGUAGE C STRICT STABLE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuidx_verify(regclass) IS 'Check the on-disk structure of a gpuidx index and that its image agrees; true or an error';

CREATE FUNCTION gpuidx_service_images(
		OUT index_oid oid, OUT database_oid oid, OUT image_id bigint,
		OUT is_current boolean, OUT entries bigint, OUT shared_bytes bigint,
		OUT engine_host_bytes bigint, OUT engine_device_bytes bigint,
		OUT engines text, OUT pins int, OUT loaded_at timestamptz,
		OUT last_use bigint)
	RETURNS SETOF record
	AS 'MODULE_PATHNAME', 'gpuidx_service_images' LANGUAGE C STRICT VOLATILE PARALLEL RESTRICTED;
COMMENT ON FUNCTION gpuidx_service_images() IS 'The index images the gpuidx service holds (all databases); none outside service mode';

CREATE VIEW gpuidx_service_images AS
	SELECT index_oid::regclass AS index, d.datname AS database, s.image_id,
		   s.is_current, s.entries, s.shared_bytes, s.engine_host_bytes,
		   s.engine_device_bytes, s.engines, s.pins, s.loaded_at, s.last_use
	  FROM gpuidx_service_images() s
	  LEFT JOIN pg_database d ON d.oid = s.database_oid;
COMMENT ON VIEW gpuidx_service_images IS 'The index images the gpuidx service holds; index names resolve in the current database only';

-- What the service holds in every database is for monitoring roles.
REVOKE ALL ON FUNCTION gpuidx_service_images() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION gpuidx_service_images() TO pg_read_all_stats;
GRANT SELECT ON gpuidx_service_images TO pg_read_all_stats;
