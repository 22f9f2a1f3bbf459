-- Partitions by time, step 2 of 3: validating the history bounds reads each table but takes only a SHARE
-- UPDATE EXCLUSIVE lock (reads and writes go on), so the next step's ATTACH needs no scan under its lock.
ALTER TABLE "notifications" VALIDATE CONSTRAINT "notifications_history_bound";--> statement-breakpoint
ALTER TABLE "fetch_attempts" VALIDATE CONSTRAINT "fetch_attempts_history_bound";--> statement-breakpoint
ALTER TABLE "notification_replays" VALIDATE CONSTRAINT "notification_replays_history_bound";--> statement-breakpoint
ALTER TABLE "events" VALIDATE CONSTRAINT "events_history_bound";--> statement-breakpoint
ALTER TABLE "deliveries" VALIDATE CONSTRAINT "deliveries_history_bound";--> statement-breakpoint
ALTER TABLE "delivery_attempts" VALIDATE CONSTRAINT "delivery_attempts_history_bound";--> statement-breakpoint
ALTER TABLE "audit_log" VALIDATE CONSTRAINT "audit_log_history_bound";
