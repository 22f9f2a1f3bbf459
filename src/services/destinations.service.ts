/**
 * A company's destinations and their deliveries (SPEC §5.2), for the admin API, the CLI and the console:
 * validated here (a URL the address rules could never admit is a 400 naming `url`), their signing secrets
 * made and sealed here (encrypted, never hashed: they sign), and every change of a destination's state or a
 * delivery's status made through src/destinations/ (its one writer).
 */
import { randomBytes } from 'node:crypto';
import { and, asc, desc, eq, inArray, isNull, lt, gt, sql, type SQL } from 'drizzle-orm';
import type { z } from 'zod';
import type { DeliveryKey, DeliveryLifecycle } from '../destinations/lifecycle.js';
import { signingSecrets } from '../destinations/connections.js';
import type { DestinationStatesRepository } from '../destinations/postgres.js';
import { destinationStateOf } from '../destinations/transitions.js';
import type { Database } from '../db/client.js';
import { decodeCursor, isUuid, pageOf } from '../db/pagination.js';
import { deliveries, deliveryAttempts, destinations, type DestinationRow } from '../db/schema/index.js';
import type { Gate } from '../gate/gate.js';
import { urlProblem, type AddressRules } from '../lib/addresses.js';
import { encryptSecret } from '../lib/crypto.js';
import { badRequest, notFound, Problem } from '../lib/problem.js';
import { changedFields, givenFields, type Audit } from '../access/audit.js';
import type { CompaniesService } from './companies.service.js';
import type { createDestinationBody, deliveriesQuery, destinationReplayBody, patchDestinationBody } from './schemas.js';
import { deliveryAttemptViewSchema, deliveryViewSchema, destinationViewSchema, viewOf, type DeliveryView, type DestinationView } from './views.js';

/** What the destinations' sender does (delivery/send.ts), for a destination's test. */
interface TestSender {
  newSecret(): string;
  /** Signs and sends a test body to `url` with `secrets`; answers what happened. */
  sendTest(input: { destinationId: string; companyId: string; url: string; secrets: string[]; timeoutMs: number; body: string; webhookId: string }): Promise<{ httpStatus: number | null; durationMs: number; response: string | null; error: string | null }>;
}

interface DestinationsDeps {
  db: Database;
  secretKey: Buffer;
  companies: Pick<CompaniesService, 'get'>;
  states: Pick<DestinationStatesRepository, 'disable' | 'enable' | 'delete'> & Pick<DeliveryLifecycle, 'replay' | 'replayMatching'>;
  /** The destinations' gate: what it knows of each (a hold). */
  gate: Pick<Gate, 'views'>;
  /** Queues the replayed deliveries' keys. */
  enqueue: (keys: DeliveryKey[]) => Promise<void>;
  sender: TestSender;
  addresses: AddressRules;
  defaults: { timeoutMs: number };
  /** RETENTION_DAYS: a replay since a time creates the deliveries missing only for events stored within it (older ones may have had one, dropped since). */
  deliveriesKeptDays: number;
  /** A gate that could not be read: the view shows what PostgreSQL knows. */
  onGateError: (err: unknown) => void;
}

const DEFAULT_GRACE_S = 86_400;
/** A destination's columns by the field names of its view (the audit log names the fields a change changed). */
const DESTINATION_FIELDS = {
  url: 'url',
  description: 'description',
  resourceTypes: 'filter.resourceTypes',
  eventTypes: 'filter.eventTypes',
  maxConcurrency: 'maxConcurrency',
  ratePerSecond: 'ratePerSecond',
  timeoutMs: 'timeoutMs',
  // A new secret is sealed anew (a fresh nonce): it always differs, and says nothing of the one it replaces.
  secretEncrypted: 'secret',
} as const;

/** A replay's filter, as the deliveries' statement takes it. */
const deliveryFilter = (body: z.infer<typeof destinationReplayBody>) => ({
  since: body?.since ? new Date(body.since) : undefined,
  before: body?.before ? new Date(body.before) : undefined,
  status: body?.status,
  resourceId: body?.resourceId,
});

/** A delivery as lists show it: without its attempts, which only `delivery` reads. */
const listedDeliverySchema = deliveryViewSchema.omit({ attemptsList: true });
const deliveryView = (d: typeof deliveries.$inferSelect): DeliveryView => viewOf(listedDeliverySchema, d, {
  webhookId: `msg_${d.id}`,
  resource: { type: d.resourceType, id: d.resourceId, href: d.href, version: d.version },
  nextAttemptAt: d.status === 'pending' ? d.nextAttemptAt.toISOString() : null,
});

// Over 80 lines on purpose: its body is the service's methods, each short, over the dependencies they share.
export function createDestinationsService(deps: DestinationsDeps) {
  const { db } = deps;
  const seal = (secret: string) => encryptSecret(deps.secretKey, secret);
  const fill = { keptDays: deps.deliveriesKeptDays };

  function checkUrl(companyId: string, url: string): string {
    const problem = urlProblem(deps.addresses, url, companyId);
    if (problem) throw badRequest(`url ${problem}.`, [{ field: 'url', message: problem }]);
    return new URL(url).toString();
  }

  async function row(companyId: string, destinationId: string): Promise<DestinationRow> {
    const [r] = await db.select().from(destinations).where(and(eq(destinations.id, destinationId), eq(destinations.companyId, companyId), isNull(destinations.deletedAt))).limit(1);
    if (!r) throw notFound(`Destination ${destinationId}`);
    return r;
  }

  /** The views of these rows: their state (with what the gate knows) and what their deliveries did in the last 24 h. */
  async function views(rows: DestinationRow[]): Promise<DestinationView[]> {
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    const [gates, stats] = await Promise.all([
      deps.gate.views(ids).catch((err: unknown) => (deps.onGateError(err), [])),
      db.execute<{ id: string; pending: string; oldest: Date | null; delivered: string; failed: string; p50: number | null; tried: string; answered: string }>(sql`
        -- One question each: what waits, what ended in the last 24 h, and how its attempts were answered.
        SELECT t.id, w.pending, w.oldest, f.delivered, f.failed, f.p50, a.tried, a.answered
        FROM destinations t
        CROSS JOIN LATERAL (SELECT count(*) AS pending, min(d.created_at) AS oldest FROM deliveries d WHERE d.destination_id = t.id AND d.status = 'pending') w
        CROSS JOIN LATERAL (
          SELECT count(*) FILTER (WHERE d.status = 'delivered') AS delivered, count(*) FILTER (WHERE d.status = 'failed') AS failed,
                 percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM d.delivered_at - d.created_at) * 1000) FILTER (WHERE d.status = 'delivered') AS p50
          FROM deliveries d WHERE d.destination_id = t.id AND d.finished_at > now() - interval '24 hours') f
        CROSS JOIN LATERAL (
          SELECT count(*) AS tried, count(*) FILTER (WHERE x.http_status BETWEEN 200 AND 299) AS answered
          FROM delivery_attempts x JOIN deliveries d ON d.id = x.delivery_id WHERE d.destination_id = t.id AND x.started_at > now() - interval '24 hours') a
        WHERE t.id = ANY(${sql.param(ids)}::uuid[])`),
    ]);
    const byId = new Map(stats.rows.map((s) => [s.id, s]));
    return rows.map((r, i) => {
      const s = byId.get(r.id);
      const tried = Number(s?.tried ?? 0);
      return viewOf(destinationViewSchema, r, {
        filter: { resourceTypes: r.resourceTypes, eventTypes: r.eventTypes },
        active: r.disabledAt === null,
        state: destinationStateOf(r, gates[i]),
        limits: { maxConcurrency: r.maxConcurrency, ratePerSecond: r.ratePerSecond, timeoutMs: r.timeoutMs },
        stats: {
          pending: Number(s?.pending ?? 0),
          oldestPendingAt: s?.oldest ? new Date(s.oldest).toISOString() : null,
          delivered24h: Number(s?.delivered ?? 0),
          failed24h: Number(s?.failed ?? 0),
          successRate24h: tried === 0 ? null : Number(s!.answered) / tried,
          latencyP50Ms24h: s?.p50 === null || s?.p50 === undefined ? null : Math.round(s.p50),
          lastAttemptAt: r.lastAttemptAt?.toISOString() ?? null,
          lastSuccessAt: r.lastSuccessAt?.toISOString() ?? null,
        },
        previousSecretExpiresAt: r.previousSecretExpiresAt && r.previousSecretExpiresAt.getTime() > Date.now() ? r.previousSecretExpiresAt.toISOString() : null,
      });
    });
  }
  const view = async (r: DestinationRow) => (await views([r]))[0]!;

  /** A filter's lists: one given replaces the stored one (null: all), one left out keeps it. */
  const filterColumns = (filter: { resourceTypes?: string[] | null; eventTypes?: string[] | null } | undefined) => ({
    ...(filter?.resourceTypes !== undefined ? { resourceTypes: filter.resourceTypes } : {}),
    ...(filter?.eventTypes !== undefined ? { eventTypes: filter.eventTypes } : {}),
  });

  return {
    async create(companyId: string, input: z.infer<typeof createDestinationBody>, audit: Pick<Audit, 'change' | 'by'>): Promise<DestinationView & { secret: string }> {
      await deps.companies.get(companyId);
      const url = checkUrl(companyId, input.url);
      const secret = deps.sender.newSecret();
      const id = await audit.change(async (change) => {
        const [r] = await change.tx
          .insert(destinations)
          .values({
            companyId,
            url,
            description: input.description ?? '',
            ...filterColumns(input.filter),
            secretEncrypted: seal(secret),
            maxConcurrency: input.maxConcurrency ?? null,
            ratePerSecond: input.ratePerSecond ?? null,
            timeoutMs: input.timeoutMs ?? null,
          })
          .returning({ id: destinations.id });
        if (input.active === false) await deps.states.disable(r!.id, { by: audit.by, reason: 'created inactive' }, change);
        return { value: r!.id, targets: { destinationId: r!.id }, fields: givenFields(input) };
      });
      return { ...(await view(await row(companyId, id))), secret };
    },

    async list(companyId: string, opts: { limit: number; cursor?: string }): Promise<{ items: DestinationView[]; nextCursor: string | null }> {
      await deps.companies.get(companyId);
      // A uuid, checked whole: 36 hyphens passed a looser pattern and failed the query (a 400 that named no cursor).
      const after = opts.cursor === undefined ? undefined : decodeCursor(opts.cursor, isUuid);
      const rows = await db
        .select()
        .from(destinations)
        .where(and(eq(destinations.companyId, companyId), isNull(destinations.deletedAt), after ? gt(destinations.id, after) : undefined))
        .orderBy(asc(destinations.id))
        .limit(opts.limit + 1);
      const page = pageOf(rows, opts.limit, (last) => last.id, (r) => r);
      return { items: await views(page.items), nextCursor: page.nextCursor };
    },

    async get(companyId: string, destinationId: string): Promise<DestinationView> {
      return view(await row(companyId, destinationId));
    },

    /** The secrets signing now, to whoever may manage the destination; each read is an entry of the audit log (SPEC §5.2), never its value. */
    async secret(companyId: string, destinationId: string, audit: Pick<Audit, 'change'>) {
      const r = await row(companyId, destinationId);
      const [secret, previousSecret] = signingSecrets(r, deps.secretKey);
      const value = { secret: secret!, previousSecret: previousSecret ?? null, previousSecretExpiresAt: previousSecret ? r.previousSecretExpiresAt!.toISOString() : null };
      return audit.change(async () => ({ value, fields: previousSecret ? ['secret', 'previousSecret'] : ['secret'] }));
    },

    /**
     * A change: its URL (pending deliveries go there too), description, filter (later events), limits; a
     * rotated secret (answered once); `active` disables or enables it (skipping what is older than skipBefore).
     */
    async update(companyId: string, destinationId: string, patch: z.infer<typeof patchDestinationBody>, audit: Pick<Audit, 'change' | 'by'>): Promise<DestinationView & { secret?: string }> {
      const current = await row(companyId, destinationId);
      const url = patch.url === undefined ? undefined : checkUrl(companyId, patch.url);
      const secret = patch.rotateSecret ? deps.sender.newSecret() : undefined;
      const graceS = patch.rotateSecret?.graceSeconds ?? DEFAULT_GRACE_S;
      const columns = {
        ...(url !== undefined ? { url } : {}),
        ...(patch.description !== undefined ? { description: patch.description } : {}),
        ...filterColumns(patch.filter),
        ...(patch.maxConcurrency !== undefined ? { maxConcurrency: patch.maxConcurrency } : {}),
        ...(patch.ratePerSecond !== undefined ? { ratePerSecond: patch.ratePerSecond } : {}),
        ...(patch.timeoutMs !== undefined ? { timeoutMs: patch.timeoutMs } : {}),
        // At most two sign at once: a second rotation within the grace period ends the oldest.
        ...(secret !== undefined
          ? { secretEncrypted: seal(secret), previousSecretEncrypted: graceS > 0 ? current.secretEncrypted : null, previousSecretExpiresAt: graceS > 0 ? new Date(Date.now() + graceS * 1000) : null }
          : {}),
      };
      await audit.change(async (change) => {
        await change.tx
          .update(destinations)
          .set({ ...columns, updatedAt: new Date() })
          .where(eq(destinations.id, destinationId));
        // Each answers whether it changed the state: disabling a disabled destination, or enabling an enabled one, changes nothing.
        const disabled = patch.active === false && (await deps.states.disable(destinationId, { by: audit.by, reason: 'set inactive' }, change));
        const enabled = patch.active === true && (await deps.states.enable(destinationId, patch.skipBefore === undefined ? undefined : new Date(patch.skipBefore), change));
        return { value: undefined, fields: [...changedFields(current, columns, DESTINATION_FIELDS), ...(disabled || enabled ? ['active'] : [])] };
      });
      const answer = await view(await row(companyId, destinationId));
      return secret === undefined ? answer : { ...answer, secret };
    },

    async delete(companyId: string, destinationId: string, audit: Pick<Audit, 'change'>): Promise<void> {
      await row(companyId, destinationId);
      await audit.change(async (change) => ({ value: await deps.states.delete(destinationId, change) }));
    },

    /** A test event, signed as a delivery is, sent now; answered with the attempt (nothing is stored: in the audit log, a call). */
    async test(companyId: string, destinationId: string, audit: Pick<Audit, 'call'>) {
      const r = await row(companyId, destinationId);
      const webhookId = `msg_test_${randomBytes(8).toString('hex')}`;
      const body = JSON.stringify({ id: webhookId, type: 'test', companyId, occurredAt: new Date().toISOString(), resource: null, eventTypes: [], changes: null, snapshot: null });
      const send = () => deps.sender.sendTest({ destinationId, companyId, url: r.url, secrets: signingSecrets(r, deps.secretKey), timeoutMs: r.timeoutMs ?? deps.defaults.timeoutMs, body, webhookId });
      const attempt = await audit.call({}, send, (a) => ({ details: { httpStatus: a.httpStatus } }));
      return { webhookId, ...attempt, delivered: attempt.httpStatus !== null && attempt.httpStatus >= 200 && attempt.httpStatus < 300 };
    },

    /**
     * A destination's deliveries matching the filter sent again (the same webhook-ids), outside their order;
     * with `since` and no `status`, the deliveries its filter left out then are created too (SPEC §5.2: an
     * edited filter applies to later events, a replay since a time fills what the old one left out). One
     * change, one entry with its filter and counts.
     */
    async replay(companyId: string, destinationId: string, body: z.infer<typeof destinationReplayBody>, audit: Pick<Audit, 'change'>) {
      await row(companyId, destinationId);
      const { matched, replayed, created } = await audit.change(async (change) => {
        const found = await deps.states.replayMatching(destinationId, deliveryFilter(body), body?.dryRun === true, change, fill);
        if (found.replayed.length > 0) change.afterCommit(() => deps.enqueue(found.replayed));
        return { value: found, details: { filter: body ?? {}, matched: found.matched, replayed: found.replayed.length, created: found.created } };
      });
      return { matched, replayed: replayed.length, created };
    },

    /** How many deliveries a replay with this filter would send (a page's confirmation): those of the destination, and those it would create. */
    async countReplayable(companyId: string, destinationId: string, body: z.infer<typeof destinationReplayBody>): Promise<{ matched: number; created: number }> {
      await row(companyId, destinationId);
      const { matched, created } = await deps.states.replayMatching(destinationId, deliveryFilter(body), true, undefined, fill);
      return { matched, created };
    },

    async deliveries(companyId: string, q: z.infer<typeof deliveriesQuery>): Promise<{ items: DeliveryView[]; nextCursor: string | null }> {
      await deps.companies.get(companyId);
      const below = q.cursor === undefined ? undefined : decodeCursor(q.cursor, (v): v is number => Number.isSafeInteger(v));
      const where: (SQL | undefined)[] = [
        eq(deliveries.companyId, companyId),
        q.destinationId ? eq(deliveries.destinationId, q.destinationId) : undefined,
        q.status ? eq(deliveries.status, q.status) : undefined,
        q.resourceId ? eq(deliveries.resourceId, q.resourceId) : undefined,
        q.after ? gt(deliveries.createdAt, new Date(q.after)) : undefined,
        q.before ? lt(deliveries.createdAt, new Date(q.before)) : undefined,
        below !== undefined ? lt(deliveries.id, below) : undefined,
      ];
      const rows = await db.select().from(deliveries).where(and(...where)).orderBy(desc(deliveries.id)).limit(q.limit + 1);
      return pageOf(rows, q.limit, (last) => last.id, deliveryView);
    },

    async delivery(companyId: string, deliveryId: number): Promise<DeliveryView> {
      const [d] = await db.select().from(deliveries).where(and(eq(deliveries.id, deliveryId), eq(deliveries.companyId, companyId))).limit(1);
      if (!d) throw notFound(`Delivery ${deliveryId}`);
      const attempts = await db.select().from(deliveryAttempts).where(eq(deliveryAttempts.deliveryId, deliveryId)).orderBy(asc(deliveryAttempts.id));
      return {
        ...deliveryView(d),
        attemptsList: attempts.map((a) => viewOf(deliveryAttemptViewSchema, a, { at: a.startedAt.toISOString() })),
      };
    },

    /** One delivery sent again (the same webhook-id), outside its resource's order; a pending one, or one whose destination was deleted, is refused (409). */
    async replayDelivery(companyId: string, deliveryId: number, audit: Pick<Audit, 'change'>): Promise<DeliveryView> {
      const current = await this.delivery(companyId, deliveryId);
      const [destination] = await db.select({ deletedAt: destinations.deletedAt }).from(destinations).where(eq(destinations.id, current.destinationId)).limit(1);
      if (destination?.deletedAt !== null) {
        throw new Problem(409, 'Conflict', `Delivery ${deliveryId}'s destination was deleted: there is nowhere to send it`, { code: 'destination_deleted' });
      }
      await audit.change(async (change) => {
        const replayed = await deps.states.replay([deliveryId], change);
        if (replayed.length === 0) throw new Problem(409, 'Conflict', `Delivery ${deliveryId} is ${current.status}: only a delivered, failed, skipped or expired delivery can be replayed`, { code: 'not_replayable' });
        change.afterCommit(() => deps.enqueue(replayed));
        return { value: undefined };
      });
      return this.delivery(companyId, deliveryId);
    },

    /** The names of destinations by id, for tables (only this company's). */
    async urls(companyId: string, ids: string[]): Promise<Map<string, string>> {
      if (ids.length === 0) return new Map();
      const rows = await db.select({ id: destinations.id, url: destinations.url }).from(destinations).where(and(eq(destinations.companyId, companyId), inArray(destinations.id, ids)));
      return new Map(rows.map((r) => [r.id, r.url]));
    },
  };
}
