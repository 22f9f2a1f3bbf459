/**
 * Console sessions, server-side in PostgreSQL (console_sessions): signing in with a key (or ADMIN_TOKEN)
 * creates one, each console request looks it up by the cookie's id (its SHA-256) with its key, sign-out
 * deletes it. A session lasts SESSION_TTL_MS from sign-in, and not past its key: a revoked or expired key
 * ends its sessions at their next request.
 */
import { and, eq, gt, lt } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { apiKeys, consoleSessions } from '../db/schema/index.js';
import { randomToken, sha256 } from '../lib/crypto.js';
import type { Audit } from './audit.js';
import { BOOTSTRAP, type Principal } from './roles.js';

/** SPEC §13: a session expires 12 hours after sign-in. */
export const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

export interface ConsoleSession {
  /** The cookie's value (only at creation: it is not stored). */
  id?: string;
  csrfToken: string;
  expiresAt: Date;
  /** Who signed in: the key's principal, or the bootstrap token's. */
  principal: Principal;
}

export function createSessionStore(db: Database) {
  return {
    /** Sign-in: a session for `principal` (a key's, or BOOTSTRAP), a change by it, in the audit log (who signed in, from where). */
    async create(principal: Principal, audit: Pick<Audit, 'change'>, now = new Date()): Promise<Required<ConsoleSession>> {
      const id = randomToken(32);
      const session = { id, csrfToken: randomToken(32), expiresAt: new Date(now.getTime() + SESSION_TTL_MS), principal };
      return audit.change(async ({ tx }) => {
        // Expired sessions go at each sign-in: a handful of operators make this table tiny.
        await tx.delete(consoleSessions).where(lt(consoleSessions.expiresAt, now));
        await tx.insert(consoleSessions).values({ idSha256: sha256(id), csrfToken: session.csrfToken, expiresAt: session.expiresAt, keyId: principal.id });
        return { value: session };
      });
    },

    /** The live session of this cookie value, or undefined (none, expired, or its key revoked or expired). */
    async find(id: string, now = new Date()): Promise<ConsoleSession | undefined> {
      const [row] = await db
        .select({
          csrfToken: consoleSessions.csrfToken,
          expiresAt: consoleSessions.expiresAt,
          keyId: consoleSessions.keyId,
          key: { id: apiKeys.id, name: apiKeys.name, role: apiKeys.role, companyId: apiKeys.companyId, expiresAt: apiKeys.expiresAt, revokedAt: apiKeys.revokedAt },
        })
        .from(consoleSessions)
        .leftJoin(apiKeys, eq(apiKeys.id, consoleSessions.keyId))
        .where(and(eq(consoleSessions.idSha256, sha256(id)), gt(consoleSessions.expiresAt, now)))
        .limit(1);
      if (!row) return undefined;
      if (row.keyId === null) return { csrfToken: row.csrfToken, expiresAt: row.expiresAt, principal: BOOTSTRAP };
      const key = row.key;
      if (!key || key.revokedAt || (key.expiresAt && key.expiresAt <= now)) return undefined;
      return { csrfToken: row.csrfToken, expiresAt: row.expiresAt, principal: { kind: 'key', id: key.id, name: key.name, role: key.role, companyId: key.companyId } };
    },

    /** Sign-out: a change by the session's holder, in the audit log. */
    async end(id: string, audit: Pick<Audit, 'change'>): Promise<void> {
      await audit.change(async ({ tx }) => {
        await tx.delete(consoleSessions).where(eq(consoleSessions.idSha256, sha256(id)));
        return { value: undefined };
      });
    },
  };
}

export type SessionStore = ReturnType<typeof createSessionStore>;
