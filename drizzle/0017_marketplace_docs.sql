ALTER TYPE "public"."authenticated_by" ADD VALUE 'resync';--> statement-breakpoint
ALTER TYPE "public"."fetch_outcome" ADD VALUE 'not_fetched';--> statement-breakpoint
DROP INDEX "resources_company_type_idx";--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "oauth_client_secret_expires_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "extra_base_urls" text[] DEFAULT '{}' NOT NULL;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "connection_last_used_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "declines" ADD COLUMN "resource_href" text;--> statement-breakpoint
ALTER TABLE "declines" ADD COLUMN "snapshot_version" integer;--> statement-breakpoint
CREATE INDEX "resources_company_type_id_idx" ON "resources" USING btree ("company_id","type","resource_id");--> statement-breakpoint
CREATE INDEX "resources_lifts_idx" ON "resources" USING gin (("body" -> 'sellerLift') jsonb_path_ops);--> statement-breakpoint
CREATE INDEX "declines_trip_message_idx" ON "declines" USING btree ("company_id","trip_message_id");