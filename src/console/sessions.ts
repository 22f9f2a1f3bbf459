/**
 * Console sessions, server-side in PostgreSQL (console_sessions): sign-in with the admin token creates
 * one, each console request looks it up by the cookie's id (its SHA-256: one primary-key read), sign-out
 * deletes it. A session lasts SESSION_TTL_MS from sign-in, whatever happens in between.
 */
import { and, eq, gt, lt } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { consoleSessions } from '../db/schema/index.js';
import { randomToken, sha256 } from '../lib/crypto.js';

/** SPEC §13: a session expires 12 hours after sign-in. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export interface ConsoleSession {
  /** The cookie's value (only at creation: it is not stored). */
  id?: string;
  csrfToken: string;
  expiresAt: Date;
}

export function createSessionStore(db: Database) {
  return {
    async create(now = new Date()): Promise<Required<ConsoleSession>> {
      // Expired sessions go at each sign-in: a handful of operators make this table tiny.
      await db.delete(consoleSessions).where(lt(consoleSessions.expiresAt, now));
      const id = randomToken(32);
      const session = { id, csrfToken: randomToken(32), expiresAt: new Date(now.getTime() + SESSION_TTL_MS) };
      await db.insert(consoleSessions).values({ idSha256: sha256(id), csrfToken: session.csrfToken, expiresAt: session.expiresAt });
      return session;
    },

    /** The live session of this cookie value, or undefined. */
    async find(id: string, now = new Date()): Promise<ConsoleSession | undefined> {
      const [row] = await db
        .select({ csrfToken: consoleSessions.csrfToken, expiresAt: consoleSessions.expiresAt })
        .from(consoleSessions)
        .where(and(eq(consoleSessions.idSha256, sha256(id)), gt(consoleSessions.expiresAt, now)))
        .limit(1);
      return row;
    },

    async end(id: string): Promise<void> {
      await db.delete(consoleSessions).where(eq(consoleSessions.idSha256, sha256(id)));
    },
  };
}

export type SessionStore = ReturnType<typeof createSessionStore>;
