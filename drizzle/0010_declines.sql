CREATE TYPE "public"."rfq_action_target" AS ENUM('snapshot_href', 'assumed_path');--> statement-breakpoint
CREATE TABLE "declines" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"company_id" uuid NOT NULL,
	"request_id" text NOT NULL,
	"act_as_account" text,
	"status" "outbound_status" DEFAULT 'sending' NOT NULL,
	"decline_reason" text NOT NULL,
	"body" jsonb NOT NULL,
	"target" "rfq_action_target" NOT NULL,
	"target_url" text NOT NULL,
	"trip_message_id" text,
	"response" jsonb,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "quotes" ADD COLUMN "target" "rfq_action_target";--> statement-breakpoint
ALTER TABLE "quotes" ADD COLUMN "target_url" text;--> statement-breakpoint
ALTER TABLE "declines" ADD CONSTRAINT "declines_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "declines_company_request_key" ON "declines" USING btree ("company_id","request_id");--> statement-breakpoint
CREATE INDEX "declines_company_created_idx" ON "declines" USING btree ("company_id","created_at");