CREATE TYPE "public"."delivery_status" AS ENUM('pending', 'delivered', 'failed', 'skipped', 'expired');--> statement-breakpoint
CREATE TABLE "deliveries" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"company_id" uuid NOT NULL,
	"destination_id" uuid NOT NULL,
	"event_id" bigint NOT NULL,
	"href" text NOT NULL,
	"resource_type" text NOT NULL,
	"resource_id" text NOT NULL,
	"version" integer NOT NULL,
	"status" "delivery_status" DEFAULT 'pending' NOT NULL,
	"replay" boolean DEFAULT false NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_error" text,
	"last_status" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"delivered_at" timestamp with time zone,
	"finished_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "delivery_attempts" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"delivery_id" bigint NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"duration_ms" integer NOT NULL,
	"url" text NOT NULL,
	"http_status" integer,
	"error" text,
	"response" text,
	"probe" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE "destinations" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"company_id" uuid NOT NULL,
	"url" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"resource_types" text[],
	"event_types" text[],
	"secret_encrypted" text NOT NULL,
	"previous_secret_encrypted" text,
	"previous_secret_expires_at" timestamp with time zone,
	"max_concurrency" integer,
	"rate_per_second" integer,
	"timeout_ms" integer,
	"disabled_at" timestamp with time zone,
	"disabled_reason" text,
	"disabled_by" text,
	"failing_since" timestamp with time zone,
	"failing_error" text,
	"next_probe_at" timestamp with time zone,
	"consecutive_failures" integer DEFAULT 0 NOT NULL,
	"last_attempt_at" timestamp with time zone,
	"last_success_at" timestamp with time zone,
	"deleted_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "event_sequences" (
	"company_id" uuid PRIMARY KEY NOT NULL,
	"last" bigint NOT NULL
);
--> statement-breakpoint
DROP INDEX "events_company_idx";--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "seq" bigint;--> statement-breakpoint
-- Events stored before: numbered per company in id order, and each company's sequence set after them.
UPDATE "events" e SET "seq" = n.seq FROM (SELECT id, row_number() OVER (PARTITION BY company_id ORDER BY id) AS seq FROM "events") n WHERE e.id = n.id;--> statement-breakpoint
ALTER TABLE "events" ALTER COLUMN "seq" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "event_types" text[] DEFAULT '{}' NOT NULL;--> statement-breakpoint
ALTER TABLE "events" ADD COLUMN "snapshot" jsonb;--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_destination_id_destinations_id_fk" FOREIGN KEY ("destination_id") REFERENCES "public"."destinations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "delivery_attempts" ADD CONSTRAINT "delivery_attempts_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "destinations" ADD CONSTRAINT "destinations_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "event_sequences" ADD CONSTRAINT "event_sequences_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
INSERT INTO "event_sequences" ("company_id", "last") SELECT company_id, max(seq) FROM "events" GROUP BY company_id;--> statement-breakpoint
CREATE INDEX "deliveries_pending_idx" ON "deliveries" USING btree ("destination_id","href","version") WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX "deliveries_destination_idx" ON "deliveries" USING btree ("destination_id","id");--> statement-breakpoint
CREATE INDEX "deliveries_company_idx" ON "deliveries" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "delivery_attempts_delivery_idx" ON "delivery_attempts" USING btree ("delivery_id");--> statement-breakpoint
CREATE INDEX "destinations_company_idx" ON "destinations" USING btree ("company_id") WHERE deleted_at IS NULL;--> statement-breakpoint
CREATE UNIQUE INDEX "events_company_seq_idx" ON "events" USING btree ("company_id","seq");