-- Skyhook run as a role that may read and write its data but not change the schema, nor change or remove
-- an audit entry (SPEC §10.1; docs/operations.md, "A database role for the service").
--
-- Run as the database's owner, in Skyhook's database, after `skyhook migrate` (and again after each upgrade's
-- `skyhook migrate`: new tables need their grants). The role must exist first:
--   CREATE ROLE skyhook_service LOGIN PASSWORD '...';
GRANT USAGE ON SCHEMA public, drizzle TO skyhook_service;
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO skyhook_service;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO skyhook_service;
-- The migrations' journal: read at start-up to see that nothing is left to apply.
GRANT SELECT ON ALL TABLES IN SCHEMA drizzle TO skyhook_service;
-- The audit log: appended and read, never changed.
REVOKE UPDATE, DELETE, TRUNCATE ON audit_log FROM skyhook_service;
-- Its partitions too (SPEC §5.3): the grant above reached the partitions that exist now, and a TRUNCATE of a
-- partition would pass the table's own trigger. (Partitions made later are granted nothing: they are read
-- and written through audit_log.)
DO $$
DECLARE p regclass;
BEGIN
  FOR p IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'audit_log'::regclass LOOP
    EXECUTE format('REVOKE ALL ON %s FROM skyhook_service', p);
  END LOOP;
END
$$;
