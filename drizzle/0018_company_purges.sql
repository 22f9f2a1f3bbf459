CREATE TABLE "company_purges" (
	"company_id" uuid PRIMARY KEY NOT NULL,
	"deleted_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "notifications" DROP CONSTRAINT "notifications_webhook_id_webhooks_id_fk";
--> statement-breakpoint
ALTER TABLE "events" DROP CONSTRAINT "events_company_id_companies_id_fk";
--> statement-breakpoint
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_company_id_companies_id_fk";
--> statement-breakpoint
ALTER TABLE "deliveries" DROP CONSTRAINT "deliveries_destination_id_destinations_id_fk";
