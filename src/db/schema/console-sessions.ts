import { index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { apiKeys } from './access.js';
import { bytea } from './webhooks.js';

/**
 * Signed-in operator console sessions (SPEC §13). The cookie carries a random id; only its SHA-256 is
 * kept, so reading this table gives no session. In PostgreSQL, not Redis: the console must work while
 * Redis is down, when an operator needs it most (docs/decisions.md, "Console").
 */
export const consoleSessions = pgTable(
  'console_sessions',
  {
    idSha256: bytea('id_sha256').primaryKey(),
    /** The session's CSRF token, sent back by every state-changing form. */
    csrfToken: text('csrf_token').notNull(),
    /** The key signed in with (its role and reach are read from it at each request: a revoked key ends its sessions); null: ADMIN_TOKEN. */
    keyId: uuid('key_id').references(() => apiKeys.id, { onDelete: 'cascade' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  // Expired sessions are removed at each sign-in.
  (t) => [index('console_sessions_expires_idx').on(t.expiresAt)],
);

