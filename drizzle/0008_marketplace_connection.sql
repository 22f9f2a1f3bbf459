CREATE TYPE "public"."connection_profile" AS ENUM('bearer', 'avinode');--> statement-breakpoint
CREATE TYPE "public"."credentials_status" AS ENUM('unchecked', 'accepted', 'refused', 'unreachable');--> statement-breakpoint
ALTER TABLE "companies" ALTER COLUMN "api_token_encrypted" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "connection_profile" "connection_profile" DEFAULT 'bearer' NOT NULL;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "auth_token_encrypted" text;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "oauth_token_url" text;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "oauth_client_id" text;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "oauth_client_secret_encrypted" text;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "product" text;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "api_version" text;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "credentials_revision" integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "credentials_status" "credentials_status" DEFAULT 'unchecked' NOT NULL;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "credentials_checked_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "companies" ADD COLUMN "credentials_error" text;