CREATE TYPE "public"."fetch_attempt_outcome" AS ENUM('stored', 'gone', 'retry', 'failed', 'soft_error', 'unauthorized');--> statement-breakpoint
CREATE TABLE "fetch_attempts" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "fetch_attempts_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"company_id" uuid NOT NULL,
	"href" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone NOT NULL,
	"http_status" integer,
	"outcome" "fetch_attempt_outcome" NOT NULL,
	"error" text,
	"snapshot_version" integer,
	"notification_ids" bigint[] NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notification_replays" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "notification_replays_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"notification_id" bigint NOT NULL,
	"replayed_at" timestamp with time zone DEFAULT now() NOT NULL,
	"previous_status" "notification_status" NOT NULL,
	"previous_queued_at" timestamp with time zone,
	"previous_finished_at" timestamp with time zone,
	"previous_error" text
);
--> statement-breakpoint
DROP VIEW "public"."failures_by_reason";--> statement-breakpoint
ALTER TABLE "notifications" ADD COLUMN "queued_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "notifications" ADD COLUMN "finished_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "notifications" ADD COLUMN "fetch_attempt_ids" bigint[];--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "changes" jsonb;--> statement-breakpoint
-- Rows stored before finished_at: their final time was kept in processed_at, failed ones' too.
UPDATE "notifications" SET "finished_at" = coalesce("processed_at", "received_at") WHERE "status" IN ('processed', 'failed', 'discarded');--> statement-breakpoint
UPDATE "notifications" SET "processed_at" = NULL WHERE "status" <> 'processed' AND "processed_at" IS NOT NULL;--> statement-breakpoint
ALTER TABLE "notification_replays" ADD CONSTRAINT "notification_replays_notification_id_notifications_id_fk" FOREIGN KEY ("notification_id") REFERENCES "public"."notifications"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "notification_replays_notification_idx" ON "notification_replays" USING btree ("notification_id");--> statement-breakpoint
CREATE INDEX "events_resource_idx" ON "events" USING btree ("company_id","href","id");--> statement-breakpoint
CREATE VIEW "public"."fetches_by_resource" AS (SELECT a.company_id, c.name AS company, a.href,
             count(*) AS fetches,
             count(*) FILTER (WHERE a.outcome NOT IN ('stored', 'gone')) AS failures,
             max(a.started_at) AS last_fetched_at,
             max(a.started_at) FILTER (WHERE a.outcome NOT IN ('stored', 'gone')) AS last_failed_at,
             (array_agg(a.error ORDER BY a.id DESC) FILTER (WHERE a.error IS NOT NULL))[1] AS last_error
      FROM fetch_attempts a JOIN companies c ON c.id = a.company_id
      GROUP BY 1, 2, 3);--> statement-breakpoint
CREATE VIEW "public"."failures_by_reason" AS (SELECT n.company_id, c.name AS company, n.type,
             regexp_replace(coalesce(n.last_error, 'unknown'), '^gave up after \d+ attempts: ', '') AS reason,
             count(*) AS failures, min(n.finished_at) AS first_failed_at, max(n.finished_at) AS last_failed_at
      FROM notifications n JOIN companies c ON c.id = n.company_id
      WHERE n.status = 'failed'
      GROUP BY 1, 2, 3, 4);