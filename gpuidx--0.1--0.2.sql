-- gpuidx 0.1 -> 0.2: the gpuidx service (shared_preload_libraries = 'gpuidx')
\echo Use "ALTER EXTENSION gpuidx UPDATE TO '0.2'" to load this file. \quit

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
