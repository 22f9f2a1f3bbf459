-- Partitions by time, step 3 of 3 (SPEC §5.3; docs/decisions.md, "Partitions"). Each growing table becomes
-- a table partitioned by ranges of its id, and the old table, renamed <table>_history, its first partition:
-- attached, not copied. Its indexes and keys are matched to the new table's (same definitions), and its
-- validated history bound spares ATTACH the scan, so the brief ACCESS EXCLUSIVE locks of the renames are all
-- this step holds (the migrator's lock_timeout retries it whole rather than queue behind a long read).
-- Then a default partition (a catch only: nothing lands there in normal running, a metric says if something
-- does) and the partitions of today and the next two days; the partitions job makes the rest ahead.
DO $$
DECLARE
  t text;
  idx record;
  fk record;
  identity boolean;
  day date;
  part text;
BEGIN
  FOREACH t IN ARRAY ARRAY['notifications', 'fetch_attempts', 'notification_replays', 'events', 'deliveries', 'delivery_attempts', 'audit_log'] LOOP
    CREATE TEMP TABLE old_indexes ON COMMIT DROP AS
      SELECT c.relname AS name, pg_get_indexdef(i.indexrelid) AS def, i.indisunique AS is_unique, i.indisprimary AS is_primary
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = t::regclass;
    CREATE TEMP TABLE old_keys ON COMMIT DROP AS
      SELECT conname AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint WHERE conrelid = t::regclass AND contype = 'f';
    SELECT a.attidentity <> '' INTO identity FROM pg_attribute a WHERE a.attrelid = t::regclass AND a.attname = 'id';

    -- The old table, its rows and indexes under names of their own.
    FOR idx IN SELECT * FROM old_indexes LOOP
      EXECUTE format('ALTER INDEX %I RENAME TO %I', idx.name, t || '_history' || substr(idx.name, length(t) + 1));
    END LOOP;
    EXECUTE format('ALTER TABLE %I RENAME TO %I', t, t || '_history');
    IF identity THEN
      EXECUTE format('ALTER TABLE %I ALTER COLUMN id DROP IDENTITY', t || '_history');
    ELSE
      EXECUTE format('ALTER TABLE %I ALTER COLUMN id DROP DEFAULT', t || '_history');
      EXECUTE format('DROP SEQUENCE %I', t || '_id_seq');
    END IF;
    IF t = 'audit_log' THEN
      DROP TRIGGER audit_log_append_only ON audit_log_history;
      DROP TRIGGER audit_log_no_truncate ON audit_log_history;
    END IF;

    -- The partitioned table: the same columns, a sequence instead of an identity, the same indexes and keys.
    EXECUTE format('CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING STORAGE INCLUDING COMMENTS) PARTITION BY RANGE (id)', t, t || '_history');
    EXECUTE format('CREATE SEQUENCE %I OWNED BY %I.id', t || '_id_seq', t);
    EXECUTE format('ALTER TABLE %I ALTER COLUMN id SET DEFAULT skyhook_time_id(%L::regclass)', t, t || '_id_seq');
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (id)', t, t || '_pkey');
    FOR idx IN SELECT * FROM old_indexes WHERE NOT is_unique LOOP
      EXECUTE idx.def; -- names the table `t`: now the partitioned one
    END LOOP;
    -- A unique index without the id (events' (company_id, seq)) stays one per partition.
    FOR fk IN SELECT * FROM old_keys LOOP
      EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I %s', t, fk.name, fk.def);
    END LOOP;
    IF t = 'audit_log' THEN
      CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log FOR EACH ROW EXECUTE FUNCTION audit_log_append_only();
      CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only();
    END IF;

    EXECUTE format('ALTER TABLE %I ATTACH PARTITION %I FOR VALUES FROM (MINVALUE) TO (662086772326400)', t, t || '_history');
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', t || '_history', t || '_history_bound');
    -- When its rows end: retention drops it whole once this time is past (src/db/partitions.ts).
    EXECUTE format('COMMENT ON TABLE %I IS %L', t || '_history', 'rows made before ' || to_char(now() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'));
    EXECUTE format('CREATE TABLE %I PARTITION OF %I DEFAULT', t || '_default', t);
    FOR day IN SELECT generate_series((now() AT TIME ZONE 'UTC')::date, (now() AT TIME ZONE 'UTC')::date + 2, '1 day')::date LOOP
      part := t || '_p' || to_char(day, 'YYYYMMDD');
      EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES FROM (%s) TO (%s)', part, t,
        skyhook_id_at(day::timestamp AT TIME ZONE 'UTC'), skyhook_id_at((day + 1)::timestamp AT TIME ZONE 'UTC'));
      IF t = 'events' THEN
        EXECUTE format('CREATE UNIQUE INDEX %I ON %I (company_id, seq)', part || '_company_seq_idx', part);
      END IF;
    END LOOP;
    DROP TABLE old_indexes;
    DROP TABLE old_keys;
  END LOOP;

  -- The views read the tables by name: made again, they read the partitioned tables, not their history.
  FOR idx IN SELECT viewname AS name, definition AS def FROM pg_views WHERE schemaname = 'public' AND definition ~ '_history\M' LOOP
    EXECUTE format('CREATE OR REPLACE VIEW %I AS %s', idx.name,
      regexp_replace(idx.def, '\m(notifications|fetch_attempts|notification_replays|events|deliveries|delivery_attempts|audit_log)_history\M', '\1', 'g'));
  END LOOP;
END
$$;
