CREATE TYPE "public"."outbound_status" AS ENUM('sending', 'created');--> statement-breakpoint
CREATE TABLE "leads" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"company_id" uuid NOT NULL,
	"client_identifier" text NOT NULL,
	"kind" text NOT NULL,
	"status" "outbound_status" DEFAULT 'sending' NOT NULL,
	"remote_id" text,
	"request" jsonb NOT NULL,
	"response" jsonb,
	"resource_href" text,
	"snapshot_version" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "quotes" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"company_id" uuid NOT NULL,
	"seller_unique_quote_identifier" text NOT NULL,
	"request_id" text NOT NULL,
	"act_as_account" text,
	"status" "outbound_status" DEFAULT 'sending' NOT NULL,
	"submission" jsonb NOT NULL,
	"trip_message_id" text,
	"seller_quote_id" text,
	"lift_id" text,
	"response" jsonb,
	"resource_href" text,
	"snapshot_version" integer,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "leads" ADD CONSTRAINT "leads_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "quotes" ADD CONSTRAINT "quotes_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "leads_company_client_identifier_key" ON "leads" USING btree ("company_id","client_identifier");--> statement-breakpoint
CREATE INDEX "leads_remote_id_idx" ON "leads" USING btree ("company_id","remote_id");--> statement-breakpoint
CREATE UNIQUE INDEX "quotes_company_seller_quote_key" ON "quotes" USING btree ("company_id","seller_unique_quote_identifier");--> statement-breakpoint
CREATE INDEX "quotes_lift_idx" ON "quotes" USING btree ("company_id","lift_id");--> statement-breakpoint
CREATE INDEX "quotes_trip_message_idx" ON "quotes" USING btree ("company_id","trip_message_id");--> statement-breakpoint
CREATE VIEW "public"."backlog" AS (SELECT c.id AS company_id, c.name AS company,
             count(n.id) AS pending,
             min(n.received_at) AS oldest_pending_at,
             coalesce(extract(epoch FROM now() - min(n.received_at)), 0)::int AS oldest_pending_age_s
      FROM companies c
      LEFT JOIN notifications n ON n.company_id = c.id AND n.status IN ('received', 'queued')
      GROUP BY c.id, c.name);--> statement-breakpoint
CREATE VIEW "public"."failures_by_reason" AS (SELECT n.company_id, c.name AS company, n.type,
             regexp_replace(coalesce(n.last_error, 'unknown'), '^gave up after \d+ attempts: ', '') AS reason,
             count(*) AS failures, max(n.processed_at) AS last_failed_at
      FROM notifications n JOIN companies c ON c.id = n.company_id
      WHERE n.status = 'failed'
      GROUP BY 1, 2, 3, 4);--> statement-breakpoint
CREATE VIEW "public"."throughput_hourly" AS (SELECT date_trunc('hour', n.received_at) AS hour, n.company_id, c.name AS company,
             count(*) AS received,
             count(*) FILTER (WHERE n.status = 'processed') AS processed,
             count(*) FILTER (WHERE n.status = 'failed') AS failed,
             round((percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM n.processed_at - n.received_at) * 1000)
                    FILTER (WHERE n.status = 'processed'))::numeric, 1) AS p50_ms
      FROM notifications n JOIN companies c ON c.id = n.company_id
      GROUP BY 1, 2, 3);