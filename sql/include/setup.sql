-- A test's own schema (psql variable schema), dropped first if a run left it.
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS gpuidx;
DROP SCHEMA IF EXISTS :schema CASCADE;
CREATE SCHEMA :schema;
RESET client_min_messages;
SET search_path = :schema, public;
