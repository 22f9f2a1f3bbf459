CREATE TYPE "public"."connection_status" AS ENUM('ok', 'unauthorized');--> statement-breakpoint
CREATE TYPE "public"."settings_path_form" AS ENUM('plural', 'singular');--> statement-breakpoint
CREATE TYPE "public"."auth_type" AS ENUM('BASIC', 'OAUTH');--> statement-breakpoint
CREATE TYPE "public"."authenticated_by" AS ENUM('basic', 'oauth');--> statement-breakpoint
CREATE TYPE "public"."fetch_outcome" AS ENUM('stored', 'gone');--> statement-breakpoint
CREATE TYPE "public"."notification_status" AS ENUM('received', 'queued', 'processed', 'failed', 'discarded');--> statement-breakpoint
CREATE TABLE "companies" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"name" text NOT NULL,
	"api_base_url" text NOT NULL,
	"api_token_encrypted" text NOT NULL,
	"connection_status" "connection_status" DEFAULT 'ok' NOT NULL,
	"connection_error" text,
	"settings_path_form" "settings_path_form" DEFAULT 'plural' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhooks" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"company_id" uuid NOT NULL,
	"remote_id" text NOT NULL,
	"remote_version" integer,
	"endpoint_key" text NOT NULL,
	"target_uri" text NOT NULL,
	"client_identifier" text NOT NULL,
	"auth_type" "auth_type" NOT NULL,
	"secret_sha256" "bytea",
	"secret_encrypted" text,
	"previous_secret_sha256" "bytea",
	"previous_secret_encrypted" text,
	"previous_secret_expires_at" timestamp with time zone,
	"event_types" text[] NOT NULL,
	"display_name" text NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "webhooks_endpoint_key_unique" UNIQUE("endpoint_key"),
	CONSTRAINT "webhooks_client_identifier_unique" UNIQUE("client_identifier")
);
--> statement-breakpoint
CREATE TABLE "notifications" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "notifications_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"company_id" uuid NOT NULL,
	"webhook_id" uuid NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL,
	"resource_id" text NOT NULL,
	"type" text NOT NULL,
	"href" text NOT NULL,
	"body" jsonb NOT NULL,
	"authenticated_by" "authenticated_by" NOT NULL,
	"status" "notification_status" DEFAULT 'received' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"last_error" text,
	"outcome" "fetch_outcome",
	"snapshot_version" integer,
	"processed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "events" (
	"id" bigint PRIMARY KEY GENERATED ALWAYS AS IDENTITY (sequence name "events_id_seq" INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START WITH 1 CACHE 1),
	"company_id" uuid NOT NULL,
	"type" text NOT NULL,
	"resource_id" text NOT NULL,
	"href" text NOT NULL,
	"snapshot_version" integer NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "resources" (
	"company_id" uuid NOT NULL,
	"href" text NOT NULL,
	"type" text NOT NULL,
	"resource_id" text NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"fetched_at" timestamp with time zone NOT NULL,
	"gone" boolean DEFAULT false NOT NULL,
	"body" jsonb,
	CONSTRAINT "resources_company_id_href_pk" PRIMARY KEY("company_id","href")
);
--> statement-breakpoint
ALTER TABLE "webhooks" ADD CONSTRAINT "webhooks_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_webhook_id_webhooks_id_fk" FOREIGN KEY ("webhook_id") REFERENCES "public"."webhooks"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "events" ADD CONSTRAINT "events_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "resources" ADD CONSTRAINT "resources_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "webhooks_company_idx" ON "webhooks" USING btree ("company_id");--> statement-breakpoint
CREATE INDEX "notifications_pending_idx" ON "notifications" USING btree ("company_id","href") WHERE status in ('received', 'queued');--> statement-breakpoint
CREATE INDEX "notifications_unqueued_idx" ON "notifications" USING btree ("received_at") WHERE status = 'received';--> statement-breakpoint
CREATE INDEX "notifications_company_idx" ON "notifications" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "notifications_status_idx" ON "notifications" USING btree ("status","id");--> statement-breakpoint
CREATE INDEX "notifications_received_at_idx" ON "notifications" USING btree ("received_at");--> statement-breakpoint
CREATE INDEX "events_company_idx" ON "events" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "resources_company_type_idx" ON "resources" USING btree ("company_id","type");