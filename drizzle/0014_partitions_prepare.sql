-- Partitions by time (SPEC §5.3; docs/decisions.md, "Partitions"), step 1 of 3: each step is its own
-- migration, so each commits on its own and holds its locks only for its moment.
--
-- Ids that carry their time (src/db/schema/partitioned.ts): the seconds since 2020-01-01 UTC shifted left by
-- 22 bits, the low 22 bits from the table's sequence.
CREATE FUNCTION skyhook_time_id(seq regclass) RETURNS bigint LANGUAGE sql VOLATILE AS $$
  SELECT ((floor(extract(epoch FROM clock_timestamp()))::bigint - 1577836800) << 22) | (nextval(seq) & 4194303)
$$;--> statement-breakpoint
-- The smallest id made at `at`: a partition's bound.
CREATE FUNCTION skyhook_id_at(at timestamptz) RETURNS bigint LANGUAGE sql IMMUTABLE AS $$
  SELECT (floor(extract(epoch FROM at))::bigint - 1577836800) << 22
$$;--> statement-breakpoint
-- Every row the previous version made has a small id (an identity or a serial): below the ids of
-- 2025-01-01, the bound of the history partition each table becomes. NOT VALID: added at once (a brief lock),
-- checked for new rows from now on, validated by the next migration without blocking writes.
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_history_bound" CHECK (id < 662086772326400) NOT VALID;--> statement-breakpoint
ALTER TABLE "fetch_attempts" ADD CONSTRAINT "fetch_attempts_history_bound" CHECK (id < 662086772326400) NOT VALID;--> statement-breakpoint
ALTER TABLE "notification_replays" ADD CONSTRAINT "notification_replays_history_bound" CHECK (id < 662086772326400) NOT VALID;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_history_bound" CHECK (id < 662086772326400) NOT VALID;--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_history_bound" CHECK (id < 662086772326400) NOT VALID;--> statement-breakpoint
ALTER TABLE "delivery_attempts" ADD CONSTRAINT "delivery_attempts_history_bound" CHECK (id < 662086772326400) NOT VALID;--> statement-breakpoint
ALTER TABLE "audit_log" ADD CONSTRAINT "audit_log_history_bound" CHECK (id < 662086772326400) NOT VALID;--> statement-breakpoint
-- A replay or a delivery attempt may sit in a later day's partition than its parent, which retention drops
-- first: the code deletes them with their webhook, company or destination instead of a cascading key.
ALTER TABLE "notification_replays" DROP CONSTRAINT "notification_replays_notification_id_notifications_id_fk";--> statement-breakpoint
ALTER TABLE "delivery_attempts" DROP CONSTRAINT "delivery_attempts_delivery_id_deliveries_id_fk";
