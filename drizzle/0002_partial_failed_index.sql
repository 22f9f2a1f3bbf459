DROP INDEX "notifications_status_idx";--> statement-breakpoint
CREATE INDEX "notifications_final_failed_idx" ON "notifications" USING btree ("id") WHERE status in ('failed', 'discarded');