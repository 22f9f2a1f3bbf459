-- IF NOT EXISTS: on a large table an operator may build these first with CREATE INDEX CONCURRENTLY (same names),
-- so that this migration does not hold the receiver's inserts while it builds them (docs/operations.md).
CREATE INDEX IF NOT EXISTS "notifications_type_idx" ON "notifications" USING btree ("type","id");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "notifications_resource_id_idx" ON "notifications" USING btree ("resource_id","id");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "notifications_href_idx" ON "notifications" USING btree ("href","id");--> statement-breakpoint
CREATE INDEX IF NOT EXISTS "notifications_webhook_idx" ON "notifications" USING btree ("webhook_id","id");