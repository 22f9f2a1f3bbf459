import { pgEnum, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';

/** `unauthorized` pauses the company's fetches until its token is replaced (SPEC §5). */
export const connectionStatus = pgEnum('connection_status', ['ok', 'unauthorized']);
/** Which spelling of the webhook-settings PUT the company's marketplace answered (SPEC §6). */
export const settingsPathForm = pgEnum('settings_path_form', ['plural', 'singular']);

export const companies = pgTable('companies', {
  id: uuid('id').primaryKey().defaultRandom(),
  name: text('name').notNull(),
  apiBaseUrl: text('api_base_url').notNull(),
  /** AES-256-GCM with SECRET_KEY; never returned, never logged. */
  apiTokenEncrypted: text('api_token_encrypted').notNull(),
  connectionStatus: connectionStatus('connection_status').notNull().default('ok'),
  connectionError: text('connection_error'),
  settingsPathForm: settingsPathForm('settings_path_form').notNull().default('plural'),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

export type CompanyRow = typeof companies.$inferSelect;
