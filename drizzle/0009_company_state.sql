ALTER TABLE "companies" ADD COLUMN "paused_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "fetch_concurrency" integer;--> statement-breakpoint
-- Companies paused before this column existed: since their last update, the best known time.
UPDATE "companies" SET "paused_at" = "updated_at" WHERE "connection_status" = 'unauthorized';
