ALTER TYPE "public"."outbound_status" ADD VALUE 'unknown';--> statement-breakpoint
ALTER TABLE "quotes" ADD COLUMN "error" text;