/**
 * Keys (SPEC §10.1): made here, shown once, kept as their SHA-256, found by a unique index, revoked at once.
 *
 * A key reads `skh_` + 40 random base62 characters + a 6-character checksum (CRC-32 of the random part,
 * base62), so a secret scanner can tell one from noise, and a mistyped or made-up key is refused without a
 * database read. A key found is kept in the process's cache only while the process listens to the keys'
 * changes (listenForKeyChanges): a trigger notifies every process when a key row changes or goes (a
 * revocation, its company deleted), and each drops its cache, so a revocation holds at once everywhere;
 * while the listener is down, every check reads PostgreSQL, and the cache starts empty when it is back
 * (what changed meanwhile was not heard). A listener whose connection died without a word is found out
 * within db/listen.ts's bound (PING_EVERY_MS + PING_TIMEOUT_MS, 10 s). Last use is written at most once a minute per
 * key and process.
 */
import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { and, desc, eq, isNull, lt, or, sql } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { listen, type ListenOptions } from '../db/listen.js';
import { decodeCursor, isUuid, pageOf, type Page } from '../db/pagination.js';
import { apiKeys, companies, consoleSessions, type ApiKeyRow } from '../db/schema/index.js';
import { sha256 } from '../lib/crypto.js';
import { badRequest, notFound } from '../lib/problem.js';
import { givenFields, type Audit } from './audit.js';
import type { Principal, Role } from './roles.js';

export const KEY_PREFIX = 'skh_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_CHARS = 40;
const CHECK_CHARS = 6;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${RANDOM_CHARS + CHECK_CHARS}}$`);
/** How often a key's last use is written, at most. */
const LAST_USE_EVERY_MS = 60_000;

function base62(value: number, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++, value = Math.floor(value / 62)) out = BASE62[value % 62] + out;
  return out;
}

const checksum = (random: string) => base62(crc32(random), CHECK_CHARS);

/** A new key's secret. */
export function newKey(): string {
  // Random bytes drawn 64 at a time, each below 248 (4 × 62) kept as one base62 character: every character uniform.
  let random = '';
  while (random.length < RANDOM_CHARS) for (const b of randomBytes(64)) if (b < 248 && random.length < RANDOM_CHARS) random += BASE62[b % 62];
  return `${KEY_PREFIX}${random}${checksum(random)}`;
}

/** Whether `text` has a key's shape and checksum (nothing about whether it exists). */
export function looksLikeKey(text: string): boolean {
  if (!KEY_PATTERN.test(text)) return false;
  const random = text.slice(KEY_PREFIX.length, KEY_PREFIX.length + RANDOM_CHARS);
  return text.slice(-CHECK_CHARS) === checksum(random);
}

export interface KeyView {
  id: string;
  name: string;
  role: Role;
  companyId: string | null;
  /** The key's first characters, to tell keys apart. */
  hint: string;
  state: 'active' | 'expired' | 'revoked';
  expiresAt: string | null;
  revokedAt: string | null;
  lastUsedAt: string | null;
  createdAt: string;
}

const iso = (d: Date | null) => d?.toISOString() ?? null;

function keyView(row: ApiKeyRow, now: number): KeyView {
  const state = row.revokedAt ? 'revoked' : row.expiresAt && row.expiresAt.getTime() <= now ? 'expired' : 'active';
  return {
    id: row.id,
    name: row.name,
    role: row.role,
    companyId: row.companyId,
    hint: row.hint,
    state,
    expiresAt: iso(row.expiresAt),
    revokedAt: iso(row.revokedAt),
    lastUsedAt: iso(row.lastUsedAt),
    createdAt: row.createdAt.toISOString(),
  };
}

export interface NewKey {
  name: string;
  role: Role;
  companyId?: string | null;
  expiresAt?: Date | null;
}

/** Why a key was not accepted: said in the 401's detail (never which key it was). */
export type KeyRefusal = 'unknown' | 'expired' | 'revoked';

/** The channel the api_keys trigger (migration 0013) notifies on: a key's row changed or went. */
export const KEY_CHANGES_CHANNEL = 'skyhook_keys';
/** At most this many keys cached (a deployment has a handful to a few thousand). */
const CACHE_MAX = 10_000;

export function createKeys(db: Database, opts: { now?: () => number } = {}) {
  const now = opts.now ?? Date.now;
  /** When this process last wrote each key's last use. */
  const lastWritten = new Map<string, number>();
  /** Keys found, by their digest (hex), while `live`. */
  const cache = new Map<string, { principal: Principal; expiresAt: number | null }>();
  /** The listener is connected: what it has not said has not changed. */
  let live = false;
  /** Moves at each drop: a read that began before a change is not cached after it. */
  let generation = 0;

  async function find(id: string): Promise<ApiKeyRow> {
    const [row] = isUuid(id) ? await db.select().from(apiKeys).where(eq(apiKeys.id, id)).limit(1) : [];
    if (!row) throw notFound(`Key ${id}`);
    return row;
  }

  return {
    /** The key's secret is in the answer, and nowhere else ever again. */
    async create(input: NewKey, audit: Pick<Audit, 'change'>): Promise<KeyView & { key: string }> {
      const companyId = input.companyId ?? null;
      if (input.role === 'company' && !companyId) throw badRequest('A company key needs companyId, the one company it is bound to.', [{ field: 'companyId', message: 'is required for the company role' }]);
      if (input.role !== 'company' && companyId) throw badRequest(`Only a company key is bound to a company: give no companyId for the ${input.role} role.`, [{ field: 'companyId', message: `must not be given for the ${input.role} role` }]);
      if (input.expiresAt && input.expiresAt.getTime() <= now()) throw badRequest('expiresAt is past: the key would be expired already.', [{ field: 'expiresAt', message: 'must be in the future' }]);
      const key = newKey();
      return audit.change(async ({ tx }) => {
        if (companyId !== null) {
          const [company] = isUuid(companyId) ? await tx.select({ id: companies.id }).from(companies).where(eq(companies.id, companyId)).limit(1) : [];
          if (!company) throw badRequest(`Company ${companyId} does not exist.`, [{ field: 'companyId', message: 'is not a company' }]);
        }
        const [row] = await tx
          .insert(apiKeys)
          .values({ name: input.name, role: input.role, companyId, digest: sha256(key), hint: key.slice(0, KEY_PREFIX.length + 4), expiresAt: input.expiresAt ?? null })
          .returning();
        return { value: { ...keyView(row!, now()), key }, targets: { keyId: row!.id }, companyId: companyId ?? undefined, fields: givenFields(input) };
      });
    },

    /** Newest first; never a secret. */
    async list(query: { limit: number; cursor?: string; companyId?: string }): Promise<Page<KeyView>> {
      const below = query.cursor === undefined ? undefined : decodeCursor(query.cursor, isUuid);
      const rows = await db
        .select()
        .from(apiKeys)
        .where(and(query.companyId ? eq(apiKeys.companyId, query.companyId) : undefined, below ? sql`(${apiKeys.createdAt}, ${apiKeys.id}) < (SELECT created_at, id FROM api_keys WHERE id = ${below})` : undefined))
        .orderBy(desc(apiKeys.createdAt), desc(apiKeys.id))
        .limit(query.limit + 1);
      return pageOf(rows, query.limit, (last) => last.id, (row) => keyView(row, now()));
    },

    async get(id: string): Promise<KeyView> {
      return keyView(await find(id), now());
    },

    /** At once: the next request with it is refused in every process, and its console sessions end. Revoking a revoked key changes nothing. */
    async revoke(id: string, audit: Pick<Audit, 'change'>): Promise<KeyView> {
      const before = await find(id);
      const row = await audit.change(async ({ tx, afterCommit }) => {
        // Every process drops its cached keys as this row changes (the api_keys trigger notifies them).
        const [revoked] = await tx.update(apiKeys).set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, now())` }).where(eq(apiKeys.id, id)).returning();
        await tx.delete(consoleSessions).where(eq(consoleSessions.keyId, id));
        // This process once it committed (a read before then would cache the key again); the others when the trigger's notification reaches them (milliseconds).
        afterCommit(async () => this.listening('changed'));
        return { value: revoked!, companyId: before.companyId ?? undefined, fields: before.revokedAt === null ? ['revokedAt'] : [] };
      });
      return keyView(row, now());
    },

    /** The principal of a presented key, or why it is refused. One indexed read (none when cached); none for what is not a key's shape. */
    async authenticate(secret: string): Promise<Principal | KeyRefusal> {
      if (!looksLikeKey(secret)) return 'unknown';
      const digest = sha256(secret);
      const cached = live ? cache.get(digest.toString('hex')) : undefined;
      if (cached) {
        if (cached.expiresAt !== null && cached.expiresAt <= now()) return 'expired';
        await this.used(cached.principal.id!);
        return cached.principal;
      }
      const readAt = generation;
      const [row] = await db
        .select({ id: apiKeys.id, name: apiKeys.name, role: apiKeys.role, companyId: apiKeys.companyId, expiresAt: apiKeys.expiresAt, revokedAt: apiKeys.revokedAt })
        .from(apiKeys)
        .where(eq(apiKeys.digest, digest))
        .limit(1);
      if (!row) return 'unknown';
      if (row.revokedAt) return 'revoked';
      if (row.expiresAt && row.expiresAt.getTime() <= now()) return 'expired';
      const principal: Principal = { kind: 'key', id: row.id, name: row.name, role: row.role, companyId: row.companyId };
      if (live && readAt === generation) {
        if (cache.size >= CACHE_MAX) cache.clear();
        cache.set(digest.toString('hex'), { principal, expiresAt: row.expiresAt?.getTime() ?? null });
      }
      await this.used(row.id);
      return principal;
    },

    /** The keys' listener: connected (`true`, the cache may be used from now on) or not (the cache is dropped and not used); a key changed (`'changed'`: dropped). */
    listening(state: boolean | 'changed'): void {
      cache.clear();
      generation++;
      if (state !== 'changed') live = state;
    },

    /** Records a key's use, at most once a minute (per process; the statement also skips a row another process wrote within it). */
    async used(id: string): Promise<void> {
      const at = now();
      if (at - (lastWritten.get(id) ?? -Infinity) < LAST_USE_EVERY_MS) return;
      lastWritten.set(id, at);
      if (lastWritten.size > 10_000) lastWritten.clear();
      await db
        .update(apiKeys)
        .set({ lastUsedAt: new Date(at) })
        .where(and(eq(apiKeys.id, id), or(isNull(apiKeys.lastUsedAt), lt(apiKeys.lastUsedAt, new Date(at - LAST_USE_EVERY_MS)))));
    },
  };
}

export type Keys = ReturnType<typeof createKeys>;

/**
 * Keeps `keys`' cache true to PostgreSQL: dropped at each change of a key; unused from the moment the
 * listener loses its connection (an error, its end, a failed liveness check: db/listen.ts tells each one
 * before reconnecting); and empty again when it listens once more, since what changed meanwhile was missed.
 */
export function listenForKeyChanges(databaseUrl: string, keys: Pick<Keys, 'listening'>, onError: (err: unknown) => void, opts?: ListenOptions): { stop: () => Promise<void> } {
  const listener = listen(
    databaseUrl,
    [KEY_CHANGES_CHANNEL],
    {
      onNotification: () => keys.listening('changed'),
      onConnected: () => keys.listening(true),
      onError: (err) => {
        keys.listening(false);
        onError(err);
      },
    },
    opts,
  );
  return {
    stop: async () => {
      keys.listening(false);
      await listener.stop();
    },
  };
}
