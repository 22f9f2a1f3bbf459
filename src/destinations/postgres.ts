/**
 * Destinations and their deliveries in PostgreSQL, with each destination's gate in Redis as the mirror of
 * its state (SPEC §5.2): every statement that changes a delivery's status or a destination's state, each
 * guarded by the transition tables (destinations/transitions.ts), and what each change tells the gate after
 * it commits. A failing or disabled destination is paused at its gate: its deliveries park there, no job
 * and no poll for them, whatever their number; resuming it queues what waits again from PostgreSQL.
 * repair() mends the gate from PostgreSQL (every worker runs it: delivery/loop.ts).
 */
import { sql } from 'drizzle-orm';
import type { Logger } from 'pino';
import { CachedPlans, type Statement } from '../db/cached-plans.js';
import { inTransaction, type Change, type ChangeTx, type Database } from '../db/client.js';
import type { Gate } from '../gate/gate.js';
import type { AttemptEffect, AttemptVerdict, DeliveryAttempt, DeliveryFilter, DeliveryKey, DeliveryLifecycle, DeliveryToSend, DestinationKey } from './lifecycle.js';
import { DISABLED_SQL, deliveryGuard, destinationGuard, FAILING_SQL, type DestinationStateColumns } from './transitions.js';

/** Failed attempts in a row that open a destination's circuit (SPEC §5.2). */
export const CIRCUIT_FAILURES = 5;
/** A failing destination's probes follow the retry schedule, never further apart than this (then hourly). */
const MAX_PROBE_GAP_MS = 3_600_000;

export interface DestinationStatesDeps {
  db: Database;
  gate: Pick<Gate, 'pause' | 'resume' | 'paused' | 'forget' | 'views'>;
  /** Queues the destination's job again (it resumed: what waits is sent, in order, from PostgreSQL). */
  wake: (key: DestinationKey) => Promise<void>;
  /** The retry schedule (DELIVERY_RETRY_SCHEDULE): the wait before each attempt; a failing destination's probes follow it. */
  schedule: number[];
  log: Pick<Logger, 'info' | 'warn'>;
  /** A gate that could not be told (Redis out of reach): the change stands in PostgreSQL and repair() mends it. */
  onGateError: (err: unknown) => void;
}

/** A destination with deliveries pending, failing or disabled: its state's columns, its pending count and lag. */
export interface WatchedDestination extends DestinationStateColumns {
  id: string;
  companyId: string;
  pending: number;
  /** Seconds since its oldest pending delivery was created (0: none pending). */
  oldestPendingAgeS: number;
}

/** As PostgreSQL answers it: times as text through drizzle's driver, as dates through the pool's. */
type NextRow = {
  id: string;
  company_id: string;
  destination_id: string;
  href: string;
  status: DeliveryToSend['status'];
  attempts: number;
  next_attempt_at: string | Date;
  replay: boolean;
  event_id: string;
  type: string;
  resource_id: string;
  version: number;
  event_types: string[];
  changes: unknown[] | null;
  snapshot: unknown;
  occurred_at: string | Date;
  url: string;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_expires_at: string | Date | null;
  max_concurrency: number | null;
  rate_per_second: number | null;
  timeout_ms: number | null;
  paused: boolean;
};

/** A delivery, its event and its destination as they are now: FROM deliveries d JOIN events e JOIN destinations t. */
const SEND_COLUMNS_TEXT = `d.id, d.company_id, d.destination_id, d.href, d.status, d.attempts, d.next_attempt_at, d.replay,
  e.id AS event_id, e.type, e.resource_id, e.snapshot_version AS version, e.event_types, e.changes, e.snapshot, e.created_at AS occurred_at,
  t.url, t.secret_encrypted, t.previous_secret_encrypted, t.previous_secret_expires_at, t.max_concurrency, t.rate_per_second, t.timeout_ms,
  (t.disabled_at IS NOT NULL OR t.failing_since IS NOT NULL) AS paused`;
const SEND_FROM_TEXT = 'deliveries d JOIN events e ON e.id = d.event_id JOIN destinations t ON t.id = d.destination_id';
const SEND_COLUMNS = sql.raw(SEND_COLUMNS_TEXT);
const SEND_FROM = sql.raw(SEND_FROM_TEXT);

/**
 * Delivery `d` is the oldest pending version of its resource, or a replay (which holds none back): in order,
 * version n+1 waits for n. Written as a look-up of the oldest version (`ORDER BY p.version LIMIT 1`), which
 * only the (destination, href, version) index answers: as `NOT EXISTS (… p.version < d.version)`, a day's
 * partition PostgreSQL had no statistics for yet was read through the destination's pending index instead,
 * every pending delivery of the destination for each one claimed (15 ms a claim with 2,000 waiting).
 */
const IN_ORDER = `(d.replay OR d.version <= (SELECT p.version FROM deliveries p WHERE p.destination_id = d.destination_id AND p.href = d.href
    AND p.status = 'pending' AND NOT p.replay ORDER BY p.version LIMIT 1))`;

/**
 * The delivery job's statements (every round of every destination's job): named once their kept plans use
 * the indexes (db/cached-plans.ts), since planning them over every day's partition cost more than running
 * them (the claim 5 ms, an attempt's record 1.1 ms, with eleven partitions; issue #47's note).
 */
export const CLAIM_STATEMENT: Statement = {
  name: 'skyhook_delivery_claim',
  text: `SELECT ${SEND_COLUMNS_TEXT} FROM ${SEND_FROM_TEXT}
  WHERE d.destination_id = $1 AND d.status = 'pending' AND d.next_attempt_at <= now() AND d.href <> ALL($2::text[]) AND ${IN_ORDER}
  ORDER BY d.id LIMIT $3`,
  smallTables: ['destinations'],
};
export const NEXT_DUE_STATEMENT: Statement = {
  name: 'skyhook_delivery_next_due',
  text: `SELECT min(d.next_attempt_at) AS due FROM deliveries d WHERE d.destination_id = $1 AND d.status = 'pending' AND ${IN_ORDER}`,
};

const toSend = (r: NextRow): DeliveryToSend => ({
  id: Number(r.id),
  companyId: r.company_id,
  destinationId: r.destination_id,
  href: r.href,
  status: r.status,
  attempts: r.attempts,
  nextAttemptAt: new Date(r.next_attempt_at),
  replay: r.replay,
  event: { id: Number(r.event_id), type: r.type, resourceId: r.resource_id, version: r.version, eventTypes: r.event_types, changes: r.changes, snapshot: r.snapshot, occurredAt: new Date(r.occurred_at) },
  destination: {
    url: r.url,
    secretEncrypted: r.secret_encrypted,
    previousSecretEncrypted: r.previous_secret_encrypted,
    previousSecretExpiresAt: r.previous_secret_expires_at === null ? null : new Date(r.previous_secret_expires_at),
    maxConcurrency: r.max_concurrency,
    ratePerSecond: r.rate_per_second,
    timeoutMs: r.timeout_ms,
    paused: r.paused,
  },
});

/** The first key of the transaction lock a replay that creates deliveries takes (its destination's hash the second). */
const REPLAY_FILL_LOCK = 7_461_736; // arbitrary, fixed: "skyhook replay fill"

const keyOf = (r: { company_id: string; destination_id: string; href: string }): DeliveryKey => ({ companyId: r.company_id, destinationId: r.destination_id, href: r.href });

/** An attempt to record: what was sent, what it means, and whether it probed a failing destination. */
export interface Recorded {
  attempt: DeliveryAttempt;
  verdict: AttemptVerdict;
  probe: boolean;
}

/** What an attempt's error is, as the delivery and the destination keep it. */
const errorOf = (attempt: DeliveryAttempt, ok: boolean) => attempt.error ?? (attempt.httpStatus !== null && !ok ? `answered ${attempt.httpStatus}` : null);

/** skip: a destination's pending deliveries (created before `before`, if given) end `skipped`. */
const skipStatement = (destinationId: string, before?: Date) => sql`
  UPDATE deliveries SET status = 'skipped', finished_at = now(), replay = false
  WHERE destination_id = ${destinationId} AND ${sql.raw(deliveryGuard('skip'))} AND (${before?.toISOString() ?? null}::timestamptz IS NULL OR created_at < ${before?.toISOString() ?? null}::timestamptz)`;

type AttemptRow = { id: string; opened: boolean; closed: boolean; disabled: boolean };

/**
 * A batch's attempts recorded in one statement (group commit: one round trip and one commit for a batch,
 * where one statement per attempt had made the batch, run one at a time, the deliveries' pace under load).
 * Each attempt ($1-$8, one array per column) with its delivery's verdict ($9 status, $10 attempts spent, $11
 * error, $12 next attempt, $13 delivered); then each destination once ($14), with what the batch's attempts
 * did to it, in order (destinationOutcomes): $15 one of them succeeded, $16 the failures counting toward its
 * circuit since the last success (all of them without one), $17 the last of those failures' error, $18 a 410
 * Gone; $19 seconds to the first probe. A delivery appears at most once in a batch (recordMany).
 */
export const ATTEMPT_STATEMENT: Statement = {
  name: 'skyhook_delivery_attempts',
  text: `
  WITH i AS (
    SELECT * FROM unnest($1::bigint[], $2::timestamptz[], $3::int[], $4::text[], $5::int[], $6::text[], $7::text[], $8::boolean[],
                         $9::delivery_status[], $10::int[], $11::text[], $12::timestamptz[], $13::boolean[])
      AS i(delivery_id, started_at, duration_ms, url, http_status, error, response, probe, status, spent, last_error, next_at, delivered)
  ),
  att AS (
    INSERT INTO delivery_attempts (delivery_id, started_at, duration_ms, url, http_status, error, response, probe)
    SELECT delivery_id, started_at, duration_ms, url, http_status, error, response, probe FROM i
  ),
  dv AS (
    UPDATE deliveries d SET status = i.status, attempts = d.attempts + i.spent, last_error = i.last_error, last_status = i.http_status,
      next_attempt_at = coalesce(i.next_at, d.next_attempt_at),
      delivered_at = CASE WHEN i.delivered THEN now() ELSE d.delivered_at END,
      finished_at = CASE WHEN i.status <> 'pending' THEN now() ELSE d.finished_at END,
      replay = CASE WHEN i.status <> 'pending' THEN false ELSE d.replay END
    FROM i WHERE d.id = i.delivery_id AND ${deliveryGuard('deliver', 'd.status')}
  ),
  o AS (SELECT * FROM unnest($14::uuid[], $15::boolean[], $16::int[], $17::text[], $18::boolean[]) AS o(id, ok, failures, error, gone)),
  -- Not locked: one job sends to a destination at a time; a race with a probe or an admin at worst
  -- misses a transition's log line, and repair() mends the gate from the row.
  before AS (
    SELECT t.id, ${FAILING_SQL} AS failing, t.disabled_at,
      -- As the batch's last success left the row (none: as it was).
      CASE WHEN o.ok THEN o.failures ELSE t.consecutive_failures + o.failures END AS failures,
      CASE WHEN o.ok THEN NULL ELSE t.failing_since END AS failing_since
    FROM destinations t JOIN o USING (id)
  ),
  changed AS (
    SELECT o.*, b.failing, b.failures AS now_failures, b.failing_since AS kept_since,
      -- openCircuit, at the fifth counted failure in a row (a 429 does not count: the receiver answered).
      (o.failures > 0 AND b.failures >= ${CIRCUIT_FAILURES} AND (${destinationGuard('openCircuit')})) AS opens
    FROM o JOIN before b USING (id)
  )
  UPDATE destinations t SET last_attempt_at = now(),
    last_success_at = CASE WHEN c.ok THEN now() ELSE last_success_at END,
    consecutive_failures = c.now_failures,
    -- closeCircuit, on a success; openCircuit, as above.
    failing_since = CASE WHEN c.opens THEN now() ELSE c.kept_since END,
    failing_error = CASE WHEN c.error IS NOT NULL THEN c.error WHEN c.ok THEN NULL ELSE failing_error END,
    next_probe_at = CASE WHEN c.opens THEN now() + make_interval(secs => $19::float8) WHEN c.ok THEN NULL ELSE next_probe_at END,
    -- disable, on a 410 Gone.
    disabled_at = CASE WHEN c.gone AND disabled_at IS NULL THEN now() ELSE disabled_at END,
    disabled_reason = CASE WHEN c.gone AND disabled_at IS NULL THEN 'the destination answered 410 Gone' ELSE disabled_reason END,
    disabled_by = CASE WHEN c.gone AND disabled_at IS NULL THEN 'skyhook' ELSE disabled_by END,
    updated_at = now()
  FROM changed c WHERE t.id = c.id
    -- Successes that change nothing but the times are written at most once a second: the row is not rewritten per delivery.
    AND NOT (c.ok AND c.failures = 0 AND NOT c.gone AND NOT c.failing AND t.consecutive_failures = 0 AND t.disabled_at IS NULL AND t.last_success_at > now() - interval '1 second')
  RETURNING t.id, (NOT c.failing AND t.failing_since IS NOT NULL AND t.disabled_at IS NULL) AS opened, (c.failing AND t.failing_since IS NULL) AS closed,
            (t.disabled_at = now()) AS disabled`,
  smallTables: ['destinations'],
};

/** What a delivery's attempt means for it: its status, attempts spent, error and next attempt. */
function deliveryOutcome({ attempt, verdict, probe }: Recorded) {
  const ok = verdict.kind === 'delivered';
  // A probe's failure leaves its delivery as it was and spends none of its attempts (SPEC §5.2: a delivery
  // fails only by failing while its destination otherwise answers).
  const probeFailed = probe && !ok;
  return {
    status: ok ? 'delivered' : verdict.kind === 'failed' && !probeFailed ? 'failed' : 'pending',
    spent: probeFailed ? 0 : 1,
    error: errorOf(attempt, ok),
    nextAt: verdict.kind === 'retry' && !probeFailed ? verdict.nextAt : null,
    ok,
    counts: verdict.kind === 'gone' || ((verdict.kind === 'retry' || verdict.kind === 'failed') && verdict.countsAgainst),
  };
}

type DeliveryOutcome = ReturnType<typeof deliveryOutcome>;
type DestinationOutcome = { last: number; ok: boolean; failures: number; error: string | null; gone: boolean };

/** What a batch's attempts (with their outcomes), in order, did to each of their destinations (ATTEMPT_STATEMENT's $14-$18), with the last attempt's index. */
function destinationOutcomes(items: Recorded[], outcomes: DeliveryOutcome[]): Map<string, DestinationOutcome> {
  const byDestination = new Map<string, DestinationOutcome>();
  for (const [i, item] of items.entries()) {
    const d = outcomes[i]!;
    const o = byDestination.get(item.attempt.destinationId) ?? { last: i, ok: false, failures: 0, error: null, gone: false };
    o.last = i;
    // A success starts the count again; failures after it count from zero.
    if (d.ok) Object.assign(o, { ok: true, failures: 0, error: null });
    else if (d.counts) Object.assign(o, { failures: o.failures + 1, error: d.error });
    o.gone ||= item.verdict.kind === 'gone';
    byDestination.set(item.attempt.destinationId, o);
  }
  return byDestination;
}

// Over 80 lines on purpose: its body is the interface's methods, each short, over the dependencies they share.
export function createDestinationStates(deps: DestinationStatesDeps) {
  const { db, gate, log } = deps;
  const plans = new CachedPlans(db.$client, [CLAIM_STATEMENT, NEXT_DUE_STATEMENT, ATTEMPT_STATEMENT], log);
  const tell = (work: Promise<unknown>) => work.then(() => undefined, deps.onGateError);

  /** The gap before probe `n` of a failing destination (0: the first after its circuit opened). */
  const probeGap = (n: number) => Math.min(deps.schedule[Math.min(n + 1, deps.schedule.length - 1)] ?? MAX_PROBE_GAP_MS, MAX_PROBE_GAP_MS);

  /** The destination resumes at its gate, and what waits is queued again, in order. */
  async function resume(destinationId: string, companyId: string | undefined): Promise<void> {
    // Deleted meanwhile: nothing of it stays at the gate.
    if (companyId === undefined) return gate.forget(destinationId);
    await gate.resume(destinationId);
    await deps.wake({ companyId, destinationId });
    log.info({ companyId, destinationId, state: 'ok' }, 'destination resumed: its waiting deliveries are sent again, in order');
  }

  /** One batch's values (ATTEMPT_STATEMENT): its attempts, their deliveries' outcomes, and each destination once. */
  function attemptValues(items: Recorded[], outcomes: DeliveryOutcome[], destinations: Map<string, DestinationOutcome>): unknown[] {
    const attempts = items.map((x) => x.attempt);
    const dests = [...destinations];
    return [
      attempts.map((a) => a.deliveryId), attempts.map((a) => a.startedAt), attempts.map((a) => a.durationMs), attempts.map((a) => a.url),
      attempts.map((a) => a.httpStatus), attempts.map((a) => a.error), attempts.map((a) => a.response), items.map((x) => x.probe),
      outcomes.map((d) => d.status), outcomes.map((d) => d.spent), outcomes.map((d) => d.error), outcomes.map((d) => d.nextAt), outcomes.map((d) => d.ok),
      dests.map(([id]) => id), dests.map(([, o]) => o.ok), dests.map(([, o]) => o.failures), dests.map(([, o]) => o.error), dests.map(([, o]) => o.gone),
      probeGap(0) / 1000,
    ];
  }

  /**
   * Records the attempts of many deliveries in one transaction (one commit for them all), a statement for
   * each run of them without a delivery twice (a probe and a replay of one delivery may meet in a batch);
   * then what they did to their destinations is told to the gate. A destination's change is its last
   * attempt's effect in the batch: what the batch left it (opened, closed, disabled), not each step there.
   */
  async function recordMany(items: Recorded[]): Promise<AttemptEffect[]> {
    const runs: { items: Recorded[]; ids: Set<number> }[] = [];
    for (const item of items) {
      let run = runs.at(-1);
      if (!run || run.ids.has(item.attempt.deliveryId)) runs.push((run = { items: [], ids: new Set() }));
      run.items.push(item);
      run.ids.add(item.attempt.deliveryId);
    }
    const effects: AttemptEffect[] = [];
    const recorded = await inTransaction(db.$client, async (client) => {
      const out: { run: Recorded[]; destinations: Map<string, DestinationOutcome>; rows: Map<string, AttemptRow> }[] = [];
      for (const { items: run } of runs) {
        const outcomes = run.map(deliveryOutcome);
        const destinations = destinationOutcomes(run, outcomes);
        const { rows } = await client.query<AttemptRow>({ name: plans.nameFor(ATTEMPT_STATEMENT), text: ATTEMPT_STATEMENT.text, values: attemptValues(run, outcomes, destinations) });
        out.push({ run, destinations, rows: new Map(rows.map((r) => [r.id, r])) });
      }
      return out;
    });
    for (const { run, destinations, rows } of recorded) {
      for (const [i, { attempt }] of run.entries()) {
        const row = destinations.get(attempt.destinationId)?.last === i ? rows.get(attempt.destinationId) : undefined;
        const effect = { circuitOpened: row?.opened ?? false, circuitClosed: row?.closed ?? false, disabled: row?.disabled ?? false };
        if (effect.circuitOpened) {
          log.warn({ companyId: attempt.companyId, destinationId: attempt.destinationId, state: 'failing', reason: errorOf(attempt, false) }, `the destination failed ${CIRCUIT_FAILURES} attempts in a row: its deliveries wait behind a probe`);
          await tell(gate.pause(attempt.destinationId));
        }
        if (effect.disabled) {
          log.warn({ companyId: attempt.companyId, destinationId: attempt.destinationId, state: 'disabled' }, 'the destination answered 410 Gone: it is disabled, its deliveries wait');
          await tell(gate.pause(attempt.destinationId));
        }
        if (effect.circuitClosed) await resume(attempt.destinationId, attempt.companyId).catch(deps.onGateError);
        effects.push(effect);
      }
    }
    return effects;
  }

  const lifecycle: DeliveryLifecycle = {
    async claim(destinationId, sending, limit) {
      const { rows } = await db.$client.query<NextRow>({ name: plans.nameFor(CLAIM_STATEMENT), text: CLAIM_STATEMENT.text, values: [destinationId, sending, limit] });
      // Two replays of one resource, or a replay and its oldest version: one per resource a round.
      const seen = new Set<string>();
      return rows.filter((r) => !seen.has(r.href) && seen.add(r.href)).map(toSend);
    },

    async nextDue(destinationId) {
      const { rows } = await db.$client.query<{ due: Date | null }>({ name: plans.nameFor(NEXT_DUE_STATEMENT), text: NEXT_DUE_STATEMENT.text, values: [destinationId] });
      return rows[0]?.due ? new Date(rows[0].due) : null;
    },

    async oldestPending(destinationId) {
      const { rows } = await db.execute<NextRow>(sql`
        SELECT ${SEND_COLUMNS} FROM ${SEND_FROM}
        WHERE d.destination_id = ${destinationId} AND d.status = 'pending' ORDER BY d.id LIMIT 1`);
      return rows[0] && toSend(rows[0]);
    },

    async record(attempt, verdict, opts) {
      return (await recordMany([{ attempt, verdict, probe: opts.probe }]))[0]!;
    },

    async skipPending(destinationId, before) {
      const { rowCount } = await db.execute(skipStatement(destinationId, before));
      return rowCount ?? 0;
    },

    async replay(ids, within) {
      if (ids.length === 0) return [];
      const { rows } = await (within?.tx ?? db).execute<{ company_id: string; destination_id: string; href: string }>(sql`
        UPDATE deliveries SET status = 'pending', replay = true, attempts = 0, next_attempt_at = now(), finished_at = NULL
        WHERE id = ANY(${sql.param(ids)}::bigint[]) AND ${sql.raw(deliveryGuard('replay'))}
          -- A deleted destination's deliveries stay as its deletion left them (skipped), a replay racing it included.
          AND EXISTS (SELECT 1 FROM destinations t WHERE t.id = deliveries.destination_id AND t.deleted_at IS NULL)
        RETURNING company_id, destination_id, href`);
      return rows.map(keyOf);
    },

    async replayMatching(destinationId, filter: DeliveryFilter, dryRun, within, fill) {
      const since = filter.since?.toISOString() ?? null;
      const before = filter.before?.toISOString() ?? null;
      const resourceId = filter.resourceId ?? null;
      const where = sql`destination_id = ${destinationId} AND ${sql.raw(deliveryGuard('replay'))}
        AND (${since}::timestamptz IS NULL OR created_at >= ${since}::timestamptz)
        AND (${before}::timestamptz IS NULL OR created_at < ${before}::timestamptz)
        AND (${filter.status ?? null}::delivery_status IS NULL OR status = ${filter.status ?? null}::delivery_status)
        AND (${resourceId}::text IS NULL OR resource_id = ${resourceId}::text)`;
      // The events the destination has no delivery of (see DeliveryLifecycle.replayMatching): only with a
      // `since` and no status, and only those whose deliveries would still be kept (an older event may have
      // had one that retention dropped: sending it again would be a duplicate under a new webhook-id). A
      // delivery is never older than its event (made in the same transaction, or later), hence d.created_at.
      const filling = fill !== undefined && since !== null && filter.status === undefined;
      const missing = sql`
        SELECT e.company_id, t.id AS destination_id, e.id AS event_id, e.href, e.type, e.resource_id, e.snapshot_version
        FROM destinations t JOIN events e ON e.company_id = t.company_id
        WHERE ${filling}::boolean AND t.id = ${destinationId} AND t.deleted_at IS NULL
          AND e.created_at >= ${since}::timestamptz AND e.created_at >= now() - make_interval(days => ${fill?.keptDays ?? 0})
          AND (${before}::timestamptz IS NULL OR e.created_at < ${before}::timestamptz)
          AND (${resourceId}::text IS NULL OR e.resource_id = ${resourceId}::text)
          -- The destination's filter as it is now: the same condition as STORE_SQL's (notifications/postgres.ts).
          AND (t.resource_types IS NULL OR e.type = ANY(t.resource_types)) AND (t.event_types IS NULL OR t.event_types && e.event_types)
          AND NOT EXISTS (SELECT 1 FROM deliveries d WHERE d.destination_id = t.id AND d.event_id = e.id AND d.created_at >= ${since}::timestamptz)`;
      if (dryRun) {
        const { rows } = await (within?.tx ?? db).execute<{ n: string; created: string }>(sql`
          SELECT (SELECT count(*) FROM deliveries WHERE ${where}) AS n, (SELECT count(*) FROM (${missing}) m) AS created`);
        const created = Number(rows[0]!.created);
        return { matched: Number(rows[0]!.n) + created, replayed: [], created };
      }
      const run = async (tx: Pick<ChangeTx, 'execute'>) => {
        // Two fills of one destination at once would both find an event without its delivery: one at a time
        // (a transaction lock, so the delivery job's updates of the destination's row never wait for it).
        if (filling) await tx.execute(sql`SELECT pg_advisory_xact_lock(${REPLAY_FILL_LOCK}, hashtext(${destinationId}))`);
        // One statement: the update does not see the rows the insert makes (one snapshot), so a created
        // delivery is a new one in its resource's order (not a replay), and a replayed one is not created.
        const { rows } = await tx.execute<{ company_id: string; destination_id: string; href: string; created: boolean }>(sql`
          WITH upd AS (
            UPDATE deliveries SET status = 'pending', replay = true, attempts = 0, next_attempt_at = now(), finished_at = NULL WHERE ${where}
            RETURNING company_id, destination_id, href),
          ins AS (
            INSERT INTO deliveries (company_id, destination_id, event_id, href, resource_type, resource_id, version)
            SELECT company_id, destination_id, event_id, href, type, resource_id, snapshot_version FROM (${missing}) m ORDER BY event_id
            RETURNING company_id, destination_id, href)
          SELECT company_id, destination_id, href, false AS created FROM upd
          UNION ALL SELECT company_id, destination_id, href, true AS created FROM ins`);
        return { matched: rows.length, replayed: rows.map(keyOf), created: rows.filter((r) => r.created).length };
      };
      return within ? run(within.tx) : db.transaction(run);
    },

    async overdueDestinations(graceMs, limit) {
      const { rows } = await db.execute<{ company_id: string; destination_id: string }>(sql`
        SELECT t.company_id, t.id AS destination_id FROM destinations t
        WHERE t.deleted_at IS NULL AND NOT (${sql.raw(DISABLED_SQL)}) AND t.failing_since IS NULL
          AND EXISTS (SELECT 1 FROM deliveries d WHERE d.destination_id = t.id AND d.status = 'pending'
                      AND d.next_attempt_at < now() - make_interval(secs => ${graceMs}::double precision / 1000) AND ${sql.raw(IN_ORDER)})
        LIMIT ${limit}`);
      return rows.map((r) => ({ companyId: r.company_id, destinationId: r.destination_id }));
    },

    async expire(retentionDays, within) {
      const { rows } = await (within?.tx ?? db).execute<{ company_id: string; destination_id: string; expired: string }>(sql`
        WITH ex AS (
          UPDATE deliveries SET status = 'expired', finished_at = now(), replay = false
          WHERE ${sql.raw(deliveryGuard('expire'))} AND created_at < now() - make_interval(days => ${retentionDays})
          RETURNING company_id, destination_id)
        SELECT company_id, destination_id, count(*) AS expired FROM ex GROUP BY company_id, destination_id`);
      return rows.map((r) => ({ companyId: r.company_id, destinationId: r.destination_id, expired: Number(r.expired) }));
    },
  };

  return {
    ...lifecycle,
    recordMany,

    /** disable, a statement of an admin's change (`active: false`): its deliveries wait parked (at its gate once the change committed). */
    async disable(destinationId: string, why: { by: string; reason: string }, { tx, afterCommit }: Change): Promise<boolean> {
      const { rows } = await tx.execute<{ company_id: string }>(sql`
        UPDATE destinations SET disabled_at = now(), disabled_by = ${why.by}, disabled_reason = ${why.reason}, updated_at = now()
        WHERE id = ${destinationId} AND deleted_at IS NULL AND disabled_at IS NULL AND (${sql.raw(destinationGuard('disable'))}) RETURNING company_id`);
      if (!rows[0]) return false;
      const companyId = rows[0].company_id;
      afterCommit(async () => {
        log.warn({ companyId, destinationId, state: 'disabled', by: why.by, reason: why.reason }, 'destination disabled: its deliveries wait');
        await tell(gate.pause(destinationId));
      });
      return true;
    },

    /** enable, a statement of an admin's change: what waits is sent, in order, once it committed; or, with `skipBefore`, what was created before it is skipped first. */
    async enable(destinationId: string, skipBefore: Date | undefined, { tx, afterCommit }: Change): Promise<boolean> {
      const { rows } = await tx.execute<{ company_id: string }>(sql`
        UPDATE destinations SET disabled_at = NULL, disabled_by = NULL, disabled_reason = NULL, failing_since = NULL, failing_error = NULL,
          next_probe_at = NULL, consecutive_failures = 0, updated_at = now()
        WHERE id = ${destinationId} AND deleted_at IS NULL AND (${sql.raw(destinationGuard('enable'))}) RETURNING company_id`);
      if (skipBefore) await tx.execute(skipStatement(destinationId, skipBefore));
      if (!rows[0]) return false;
      const companyId = rows[0].company_id;
      afterCommit(() => resume(destinationId, companyId).catch(deps.onGateError));
      return true;
    },

    /** Deleted, a statement of an admin's change: its pending deliveries skipped, its gate forgotten once it committed; its rows stay until retention. */
    async delete(destinationId: string, { tx, afterCommit }: Change): Promise<boolean> {
      const { rowCount } = await tx.execute(sql`UPDATE destinations SET deleted_at = now(), updated_at = now() WHERE id = ${destinationId} AND deleted_at IS NULL`);
      if (!rowCount) return false;
      await tx.execute(skipStatement(destinationId));
      afterCommit(() => tell(gate.forget(destinationId)));
      return true;
    },

    /** Their company was deleted (its rows with it): nothing of these destinations stays at the gate. */
    async forgetGates(destinationIds: string[]): Promise<void> {
      for (const id of destinationIds) await tell(gate.forget(id));
    },

    /** Failing destinations whose probe is due, claimed by one process at a time (their next probe moved on). */
    async probesDue(limit: number): Promise<{ id: string; failures: number }[]> {
      const { rows } = await db.execute<{ id: string; failures: number }>(sql`
        UPDATE destinations SET next_probe_at = now() + make_interval(secs => 60) WHERE id IN (
          SELECT id FROM destinations WHERE deleted_at IS NULL AND ${sql.raw(FAILING_SQL)} AND next_probe_at <= now()
          ORDER BY next_probe_at LIMIT ${limit} FOR UPDATE SKIP LOCKED)
        RETURNING id, consecutive_failures AS failures`);
      return rows;
    },

    /** The next probe of a failing destination whose probe found nothing to send or did not answer: on the schedule. */
    async probeLater(destinationId: string, failures: number): Promise<void> {
      await db.execute(sql`UPDATE destinations SET next_probe_at = now() + make_interval(secs => ${probeGap(Math.max(0, failures - CIRCUIT_FAILURES)) / 1000}) WHERE id = ${destinationId}`);
    },

    /** disable, of destinations failing for longer than `days` (no success since): said once each. */
    async disableStale(days: number): Promise<string[]> {
      const { rows } = await db.execute<{ id: string; company_id: string }>(sql`
        UPDATE destinations SET disabled_at = now(), disabled_by = 'skyhook', disabled_reason = ${`no success for ${days} days`}, updated_at = now()
        WHERE deleted_at IS NULL AND ${sql.raw(FAILING_SQL)} AND failing_since < now() - make_interval(secs => ${days * 86_400}) RETURNING id, company_id`);
      for (const { id, company_id: companyId } of rows) {
        log.warn({ companyId, destinationId: id, state: 'disabled', reason: `no success for ${days} days` }, 'destination disabled: no success for days');
        await tell(gate.pause(id));
      }
      return rows.map((r) => r.id);
    },

    /** The gate mended from PostgreSQL: failing and disabled destinations paused there, the others resumed. */
    async repair(): Promise<void> {
      const { rows } = await db.execute<{ id: string }>(sql`SELECT id FROM destinations WHERE deleted_at IS NULL AND (${sql.raw(DISABLED_SQL)} OR failing_since IS NOT NULL)`);
      const paused = new Set(rows.map((r) => r.id));
      const mirrored = new Set(await gate.paused());
      for (const id of paused) if (!mirrored.has(id)) await gate.pause(id);
      const missed = [...mirrored].filter((id) => !paused.has(id));
      if (missed.length === 0) return;
      // Rare (a resume Redis missed): their companies are looked up for the log line only.
      const { rows: owners } = await db.execute<{ id: string; company_id: string }>(sql`SELECT id, company_id FROM destinations WHERE id::text = ANY(${sql.param(missed)}::text[])`);
      const companyOf = new Map(owners.map((r) => [r.id, r.company_id]));
      for (const id of missed) await resume(id, companyOf.get(id));
    },

    /** Whether any destination exists (a deleted one's deliveries may still be pending: kept until they end). */
    async any(): Promise<boolean> {
      const { rows } = await db.execute<{ any: boolean }>(sql`SELECT EXISTS (SELECT 1 FROM destinations) AS any`);
      return rows[0]?.any === true;
    },


    /**
     * The destinations worth a metric (app.ts's scrape-time gauges): those with deliveries pending, and the
     * failing or disabled ones, with their pending count and the age of the oldest; one grouped query.
     */
    async watched(): Promise<WatchedDestination[]> {
      const { rows } = await db.execute<{ id: string; company_id: string; disabled_at: string | null; disabled_reason: string | null; disabled_by: string | null; failing_since: string | null; failing_error: string | null; pending: string | null; oldest_age_s: number | null }>(sql`
        SELECT t.id, t.company_id, t.disabled_at, t.disabled_reason, t.disabled_by, t.failing_since, t.failing_error, p.pending,
          extract(epoch FROM now() - p.oldest)::float8 AS oldest_age_s
        FROM destinations t
        LEFT JOIN (SELECT destination_id, count(*) AS pending, min(created_at) AS oldest FROM deliveries WHERE status = 'pending' GROUP BY destination_id) p
          ON p.destination_id = t.id
        WHERE t.deleted_at IS NULL AND (p.pending IS NOT NULL OR ${sql.raw(DISABLED_SQL)} OR t.failing_since IS NOT NULL)`);
      const time = (text: string | null) => (text === null ? null : new Date(text));
      return rows.map((r) => ({
        id: r.id,
        companyId: r.company_id,
        disabledAt: time(r.disabled_at),
        disabledReason: r.disabled_reason,
        disabledBy: r.disabled_by,
        failingSince: time(r.failing_since),
        failingError: r.failing_error,
        pending: Number(r.pending ?? 0),
        oldestPendingAgeS: Math.max(0, r.oldest_age_s ?? 0),
      }));
    },
  };
}

export type DestinationStatesRepository = ReturnType<typeof createDestinationStates>;
