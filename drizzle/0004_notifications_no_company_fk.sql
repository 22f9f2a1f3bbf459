ALTER TABLE "notifications" DROP CONSTRAINT "notifications_company_id_companies_id_fk";
