/**
 * The notification lifecycle in PostgreSQL (SPEC §4, §5, §7.1): every statement that moves a notification
 * from one status to another, each guarded by the transition table (notifications/transitions.ts), and the
 * history each move leaves.
 *
 * A notification is inserted `queued` when its job is added right after the commit (Redis up: one write
 * instead of two), else `received` for the relay. Each fetch attempt is a row of fetch_attempts, shared by
 * the notifications it covered and linked from each (fetch_attempt_ids); a replay keeps the final state it
 * replaces in notification_replays. Every status change is announced on NOTIFY skyhook_notifications,
 * one message per batch and status (the ids only: the stream looks the rest up, and only when someone
 * listens). The batched statements (the insert, the claim, the store) stay one statement per batch.
 *
 * createNotificationsRepository binds them to a pool (or, in a transaction, to its client); callers take
 * only the functions they use (`Pick<NotificationsRepository, ...>`), so a test can hand them a fake.
 */
import type pg from 'pg';
import pino, { type Logger } from 'pino';
import { CachedPlans, type Statement } from '../db/cached-plans.js';
import { inTransaction, type Change } from '../db/client.js';
import { NOTIFICATION_TYPE_BY_EVENT } from '../marketplace/contract.js';
import { notPurging, type NotificationStatus } from '../db/schema/index.js';
import { CLAIM_LIMIT, statusOnAccept, type Claimed, type FetchAttempt, type FetchedSnapshot, type InsertedStatus, type NewNotification, type NotificationLifecycle, type NotificationSummary, type PendingKey, type ResourceRef, type Stored, type Verdict } from './lifecycle.js';
import { fromGuard, NOT_REPLAYABLE_OUTCOME, TRANSITIONS } from './transitions.js';

export const NOTIFICATIONS_CHANNEL = 'skyhook_notifications';
export const EVENTS_CHANNEL = 'skyhook_events';

/**
 * Ids per NOTIFY message: 400 ids of up to 16 digits stay under PostgreSQL's 8,000-byte payload limit.
 * Grouping by `id / 400` bounds a message to 400 ids without sorting (a batch's ids are mostly consecutive).
 */
const IDS_PER_MESSAGE = 400;

/** A pool or a client inside a transaction. */
type Sql = Pick<pg.Pool, 'query'>;

/**
 * SQL that announces the status changes of `source` (a CTE or table expression with `id` and `status`):
 * one pg_notify per status and chunk of ids. Evaluates to the number of messages sent.
 */
const announce = (source: string) => `(
  SELECT count(pg_notify('${NOTIFICATIONS_CHANNEL}', json_build_object('status', m.status, 'ids', m.ids)::text))
  FROM (SELECT status, array_agg(id) AS ids FROM ${source} GROUP BY status, id / ${IDS_PER_MESSAGE}) m)`;

/** What a NOTIFY on skyhook_notifications carries. */
export interface StatusAnnouncement {
  status: NotificationStatus;
  ids: number[];
}

// ---------------------------------------------------------------------------------------------------
// Insert (the receiver's group commit)

/**
 * INSERT from unnest(): one statement shape for any batch size, so PostgreSQL plans it once. The ids come
 * back in input order: unnest's rows are inserted in order, each taking the next id of the sequence.
 */
const INSERT_SQL = `
  WITH ins AS (
    INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, outcome, queued_at, processed_at, finished_at)
    SELECT c, w, r, t, h, b, a, s, CASE WHEN s = 'processed' THEN 'not_fetched'::fetch_outcome END, CASE WHEN s = 'queued' THEN now() END,
      CASE WHEN s = 'processed' THEN now() END, CASE WHEN s IN ('discarded', 'processed') THEN now() END
    FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::authenticated_by[], $8::notification_status[])
      AS u(c, w, r, t, h, b, a, s)
    RETURNING id, status
  )
  SELECT ins.id FROM ins, ${announce('ins')} AS announced(n) ORDER BY ins.id`;

/** Inserts a batch of notifications, each in the status statusOnAccept gives it; answers their ids and statuses in order. */
async function accept(sql: Sql, rows: NewNotification[], queueing: boolean): Promise<{ id: number; status: InsertedStatus }[]> {
  const statuses = rows.map((r) => statusOnAccept(r, queueing));
  const column = <K extends keyof NewNotification>(key: K) => rows.map((r) => r[key]);
  // Named: each connection parses and plans it once.
  const result = await sql.query<{ id: string }>({ name: 'skyhook_insert_notifications', text: INSERT_SQL }, [
    column('companyId'),
    column('webhookId'),
    column('resourceId'),
    column('type'),
    column('href'),
    column('bodyJson'),
    column('authenticatedBy'),
    statuses,
  ]);
  if (result.rows.length !== rows.length) throw new Error(`inserted ${result.rows.length} of ${rows.length} notifications`);
  return result.rows.map((r, i) => ({ id: Number(r.id), status: statuses[i]! }));
}

// ---------------------------------------------------------------------------------------------------
// received <-> queued (the enqueue after a commit, the relay)

/** `queue` (received -> queued) or `unqueue` (queued -> received); a row moved on meanwhile (a worker finished it) is left alone. */
async function requeue(sql: Sql, ids: number[], transition: 'queue' | 'unqueue'): Promise<void> {
  if (ids.length === 0) return;
  const [to] = TRANSITIONS[transition].to;
  await sql.query(
    `WITH moved AS (
       UPDATE notifications SET status = '${to}', queued_at = ${to === 'queued' ? 'now()' : 'queued_at'}
       WHERE id = ANY($1::bigint[]) AND ${fromGuard(transition)} RETURNING id, status)
     SELECT ${announce('moved')}`,
    [ids],
  );
}

/** The relay: committed rows nobody queued, older than the grace, oldest first; locked (SKIP LOCKED) in the caller's transaction. */
async function lockUnqueued(client: Sql, graceMs: number, limit: number): Promise<PendingKey[]> {
  const { rows } = await client.query<{ id: string; company_id: string; href: string }>(
    `SELECT id, company_id, href FROM notifications
     WHERE ${fromGuard('queue')} AND received_at < now() - make_interval(secs => $1::double precision / 1000) AND ${notPurging('company_id')}
     ORDER BY received_at LIMIT $2 FOR UPDATE SKIP LOCKED`,
    [graceMs, limit],
  );
  return rows.map((r) => ({ id: Number(r.id), companyId: r.company_id, href: r.href }));
}

/**
 * The relay: the next page of keys (company, href) with rows left `queued` longer than `olderThanMs` (their
 * job may be lost), after `after`, in key order. A paused company's rows wait parked by design: they are
 * queued again when it resumes (src/companies/), not here.
 */
async function staleQueuedKeys(sql: Sql, olderThanMs: number, after: ResourceRef | undefined, limit: number): Promise<ResourceRef[]> {
  const { rows } = await sql.query<{ company_id: string; href: string }>(
    `SELECT DISTINCT company_id, href FROM notifications
     WHERE status = 'queued' AND received_at < now() - make_interval(secs => $1::double precision / 1000)
       AND ($2::uuid IS NULL OR (company_id, href) > ($2::uuid, $3::text))
       AND company_id NOT IN (SELECT id FROM companies WHERE connection_status = 'unauthorized') AND ${notPurging('company_id')}
     ORDER BY company_id, href LIMIT $4`,
    [olderThanMs, after?.companyId ?? null, after?.href ?? null, limit],
  );
  return rows.map((r) => ({ companyId: r.company_id, href: r.href }));
}

async function pendingResources(sql: Sql, companyId: string): Promise<ResourceRef[]> {
  const { rows } = await sql.query<{ href: string }>(`SELECT DISTINCT href FROM notifications WHERE company_id = $1 AND ${fromGuard('finish')}`, [companyId]);
  return rows.map((r) => ({ companyId, href: r.href }));
}

// ---------------------------------------------------------------------------------------------------
// The claim (C4): what a fetch starting now covers

/**
 * Per key, one row: its pending notifications (committed before now), oldest first, at most CLAIM_LIMIT,
 * with the type and resource id of the latest, and the key's stored snapshot (for the changes, SPEC §5).
 * Keys with nothing pending have no row.
 */
export const CLAIM_STATEMENT: Statement = {
  name: 'skyhook_claim',
  text: `
  SELECT k.ord, p.ids, p.received_at, p.type, p.resource_id, r.version AS previous_version, r.body AS previous_body
  FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS k(company_id, href, ord)
  CROSS JOIN LATERAL (
    SELECT array_agg(id ORDER BY id) AS ids, array_agg(received_at ORDER BY id) AS received_at,
           (array_agg(type ORDER BY id DESC))[1] AS type, (array_agg(resource_id ORDER BY id DESC))[1] AS resource_id
    FROM (
      SELECT id, type, resource_id, received_at FROM notifications
      WHERE company_id = k.company_id AND href = k.href AND ${fromGuard('finish')}
      ORDER BY id LIMIT ${CLAIM_LIMIT}
    ) pending
  ) p
  LEFT JOIN resources r ON r.company_id = k.company_id AND r.href = k.href
  WHERE p.ids IS NOT NULL
  ORDER BY k.ord`,
};

/** Indexed like `keys`; a key with nothing pending has no entry. */
async function claimPending(sql: Sql, plans: CachedPlans | undefined, keys: ResourceRef[]): Promise<(Claimed | undefined)[]> {
  const { rows } = await sql.query<{ ord: string; ids: string[]; received_at: Date[]; type: string; resource_id: string; previous_version: number | null; previous_body: unknown }>({
    name: plans?.nameFor(CLAIM_STATEMENT),
    text: CLAIM_STATEMENT.text,
    values: [keys.map((k) => k.companyId), keys.map((k) => k.href)],
  });
  const claims: (Claimed | undefined)[] = [];
  for (const row of rows) {
    claims[Number(row.ord) - 1] = {
      ids: row.ids.map(Number),
      receivedAt: row.received_at.map((d) => d.getTime()),
      type: row.type,
      resourceId: row.resource_id,
      previous: row.previous_version === null ? null : { version: row.previous_version, body: row.previous_body },
    };
  }
  return claims;
}

// ---------------------------------------------------------------------------------------------------
// Outcomes: the fetch attempt and what it did to the notifications it covered

/**
 * Records one attempt that did not store a snapshot, and applies its verdict to the covered notifications,
 * in one statement: each gets the attempt in its history and its count; a final verdict sets the status
 * and finished_at (processed_at only when processed). A retry keeps them pending, with its error as the
 * last one.
 */
async function recordAttempt(sql: Sql, attempt: FetchAttempt, verdict: Verdict): Promise<void> {
  const status = verdict.status === 'pending' ? null : verdict.status;
  const lastError = verdict.status === 'failed' ? verdict.error : attempt.error;
  await sql.query(
    `WITH att AS (
       INSERT INTO fetch_attempts (company_id, href, started_at, finished_at, http_status, outcome, error, notification_ids)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8::bigint[]) RETURNING id
     ),
     upd AS (
       UPDATE notifications n
       SET attempts = n.attempts + 1, last_error = $9, fetch_attempt_ids = n.fetch_attempt_ids || (SELECT id FROM att),
           status = coalesce($10::notification_status, n.status),
           outcome = CASE WHEN $10::notification_status = 'processed' THEN $11::fetch_outcome ELSE n.outcome END,
           finished_at = CASE WHEN $10::notification_status IS NOT NULL THEN now() ELSE n.finished_at END,
           processed_at = CASE WHEN $10::notification_status = 'processed' THEN now() ELSE n.processed_at END
       WHERE n.id = ANY($8::bigint[]) AND ${fromGuard('finish', 'n.status')}
       RETURNING n.id, n.status
     )
     SELECT ${announce(`(SELECT * FROM upd WHERE $10::notification_status IS NOT NULL) AS finished`)}`,
    [
      attempt.companyId,
      attempt.href,
      attempt.startedAt.toISOString(),
      attempt.finishedAt.toISOString(),
      attempt.httpStatus,
      attempt.outcome,
      attempt.error,
      attempt.ids,
      lastError,
      status,
      verdict.status === 'processed' ? verdict.outcome : null,
    ],
  );
}

/**
 * A 404 or 410: the stored snapshot is kept and flagged gone (unless a fetch that started later stored a
 * newer copy), and the notifications the attempt covered are processed, outcome `gone`; in one transaction.
 */
async function markGone(client: Sql, attempt: FetchAttempt): Promise<void> {
  await client.query(`UPDATE resources SET gone = true, fetched_at = $3 WHERE company_id = $1 AND href = $2 AND fetched_at <= $3`, [
    attempt.companyId,
    attempt.href,
    attempt.startedAt.toISOString(),
  ]);
  await recordAttempt(client, attempt, { status: 'processed', outcome: 'gone' });
}

/** The NOTIFY skyhook_events payload's ceiling: PostgreSQL refuses payloads of 8,000 bytes or more. */
const EVENT_PAYLOAD_MAX = 7900;

/**
 * (assumed) The marketplace event types behind a change: each covered notification's webhook's subscribed
 * types that produce its notification type (marketplace/contract.ts), an unknown type's all of them. As
 * JSON, for STORE_SQL: event type -> notification type.
 */
const EVENT_TYPE_MAP = JSON.stringify(NOTIFICATION_TYPE_BY_EVENT);

/**
 * The processed transition, written with the snapshot that covers it, for any number of fetches (of
 * distinct keys: C3 guarantees that), in one statement: each snapshot is upserted unless a fetch that
 * started later already stored one (a snapshot is never replaced by an older fetch); an event row with
 * its changes, its body, the event types behind it and its NOTIFY skyhook_events per stored snapshot,
 * numbered in its company's commit order (event_sequences: the row's lock is held to commit, SPEC §5.2
 * pull); one delivery per event and destination of its company whose filter matches (SPEC §5.2); a
 * fetch_attempts row per fetch; and the covered notifications marked processed, with the attempt in their
 * history and their change announced. Results come back in input order, each with the destinations its
 * event is to be delivered to.
 */
const STORE_SQL = `
  WITH input AS (
    SELECT k.*, b.body, ch.changes
    FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::timestamptz[], $9::timestamptz[], $10::int[], $12::int[])
      WITH ORDINALITY AS k(company_id, href, type, resource_id, fetched_at, finished_at, http_status, previous_version, ord)
    -- Bodies and changes travel as JSON arrays (one parameter each), not as a text[] of JSON that pg would escape element by element.
    JOIN jsonb_array_elements($6::jsonb) WITH ORDINALITY AS b(body, ord) USING (ord)
    JOIN jsonb_array_elements($11::jsonb) WITH ORDINALITY AS ch(changes, ord) USING (ord)
  ),
  covered AS (
    SELECT ord, array_agg(id ORDER BY id) AS ids FROM unnest($7::bigint[], $8::bigint[]) AS x(id, ord) GROUP BY ord
  ),
  -- A body equal to the stored one (and not gone) keeps its version: it is only fetched later (SPEC §5.2: no
  -- new version, no event, no delivery), so an older fetch answered after it cannot overwrite it.
  up AS (
    INSERT INTO resources (company_id, href, type, resource_id, version, fetched_at, gone, body)
    SELECT company_id, href, type, resource_id, 1, fetched_at, false, body FROM input ORDER BY ord
    ON CONFLICT (company_id, href) DO UPDATE
      SET type = excluded.type, resource_id = excluded.resource_id,
          version = CASE WHEN resources.gone OR resources.body IS DISTINCT FROM excluded.body THEN resources.version + 1 ELSE resources.version END,
          fetched_at = excluded.fetched_at, gone = false, body = excluded.body
      WHERE resources.fetched_at <= excluded.fetched_at
    RETURNING company_id, href, version
  ),
  -- Without a row from up, a later fetch already stored a newer copy (read as it was before this
  -- statement): it covers these notifications too. With one whose version did not move, the body was the
  -- stored one: covered by it, nothing stored.
  cur AS (
    SELECT i.ord, i.company_id, i.href, i.type, i.resource_id, i.fetched_at, i.finished_at, i.http_status, i.body,
           CASE WHEN u.version > coalesce(r.version, 0) THEN u.version END AS stored, coalesce(u.version, r.version) AS version,
           -- The changes hold only if this version follows the one they were computed from.
           CASE WHEN u.version = coalesce(i.previous_version, 0) + 1 AND jsonb_typeof(i.changes) = 'array' THEN i.changes END AS changes
    FROM input i
    LEFT JOIN up u ON u.company_id = i.company_id AND u.href = i.href
    LEFT JOIN resources r ON r.company_id = i.company_id AND r.href = i.href
  ),
  -- The covered notifications, each found by its id. MATERIALIZED: inlined into behind's join, a plan made
  -- while the tables were small went from each webhook to all its notifications (notifications_webhook_idx)
  -- and kept doing so as they grew: every batch read every notification of the webhook (issue #49's note).
  covering AS MATERIALIZED (
    SELECT x.ord, n.webhook_id, n.type
    FROM unnest($7::bigint[], $8::bigint[]) AS x(id, ord)
    JOIN notifications n ON n.id = x.id
  ),
  behind AS (
    SELECT n.ord, array_agg(DISTINCT t.et ORDER BY t.et) AS event_types
    FROM covering n
    JOIN webhooks w ON w.id = n.webhook_id
    CROSS JOIN LATERAL unnest(w.event_types) AS t(et)
    WHERE coalesce($13::jsonb ->> t.et, n.type) = n.type
    GROUP BY n.ord
  ),
  -- Each company's next positions, its row locked until commit (ordered: two batches lock in one order).
  seqs AS (
    INSERT INTO event_sequences AS s (company_id, last)
    SELECT company_id, count(*) FROM cur WHERE stored IS NOT NULL GROUP BY company_id ORDER BY company_id
    ON CONFLICT (company_id) DO UPDATE SET last = s.last + excluded.last
    RETURNING company_id, last
  ),
  ev AS (
    INSERT INTO events (company_id, seq, type, resource_id, href, snapshot_version, changes, event_types, snapshot)
    SELECT c.company_id, q.last - count(*) OVER (PARTITION BY c.company_id) + row_number() OVER (PARTITION BY c.company_id ORDER BY c.ord),
           c.type, c.resource_id, c.href, c.stored, c.changes, coalesce(b.event_types, '{}'), c.body
    FROM cur c JOIN seqs q USING (company_id) LEFT JOIN behind b USING (ord)
    WHERE c.stored IS NOT NULL ORDER BY c.ord
    RETURNING id, seq, company_id, type, resource_id, href, snapshot_version, changes, event_types
  ),
  dl AS (
    INSERT INTO deliveries (company_id, destination_id, event_id, href, resource_type, resource_id, version)
    SELECT e.company_id, d.id, e.id, e.href, e.type, e.resource_id, e.snapshot_version
    FROM ev e JOIN destinations d ON d.company_id = e.company_id AND d.deleted_at IS NULL
    WHERE (d.resource_types IS NULL OR e.type = ANY(d.resource_types)) AND (d.event_types IS NULL OR d.event_types && e.event_types)
    ORDER BY e.id, d.id
    RETURNING company_id, href, destination_id
  ),
  att AS (
    INSERT INTO fetch_attempts (company_id, href, started_at, finished_at, http_status, outcome, snapshot_version, notification_ids)
    SELECT c.company_id, c.href, c.fetched_at, c.finished_at, c.http_status, 'stored', c.version, v.ids
    FROM cur c JOIN covered v USING (ord) ORDER BY c.ord
    RETURNING id, company_id, href
  ),
  done AS (
    UPDATE notifications n
    SET status = 'processed', outcome = 'stored', snapshot_version = c.version, last_error = NULL,
        attempts = n.attempts + 1, processed_at = now(), finished_at = now(), fetch_attempt_ids = n.fetch_attempt_ids || a.id
    FROM unnest($7::bigint[], $8::bigint[]) AS x(id, ord)
    JOIN cur c ON c.ord = x.ord
    JOIN att a ON a.company_id = c.company_id AND a.href = c.href
    WHERE n.id = x.id AND ${fromGuard('finish', 'n.status')}
    RETURNING n.id, n.status
  ),
  -- The event as NOTIFY carries it: whole while it fits; else (only then worked out) with its changes
  -- summed up: how many operations and the first paths, or only how many. The row has them all.
  notice AS (
    SELECT CASE WHEN octet_length(whole) < ${EVENT_PAYLOAD_MAX} THEN whole
                ELSE (SELECT CASE WHEN octet_length(summed) < ${EVENT_PAYLOAD_MAX} THEN summed ELSE counted END FROM (
                  SELECT (base || jsonb_build_object('changesTruncated', true, 'changesSummary', jsonb_build_object('operations', jsonb_array_length(changes),
                            'paths', (SELECT jsonb_agg(op -> 'path') FROM (SELECT op FROM jsonb_array_elements(changes) AS op LIMIT 20) first))))::text AS summed,
                         (base || jsonb_build_object('changesTruncated', true, 'changesSummary', jsonb_build_object('operations', jsonb_array_length(changes))))::text AS counted
                  FROM (SELECT jsonb_build_object('id', e.id, 'seq', e.seq, 'companyId', e.company_id::text, 'type', e.type, 'resourceId', e.resource_id,
                                 'href', e.href, 'snapshotVersion', e.snapshot_version) AS base) b) s) END AS payload
    FROM (SELECT ev.*, json_build_object('id', ev.id, 'seq', ev.seq, 'companyId', ev.company_id::text, 'type', ev.type, 'resourceId', ev.resource_id,
                   'href', ev.href, 'snapshotVersion', ev.snapshot_version, 'changes', ev.changes)::text AS whole FROM ev) e
  )
  SELECT c.version, c.stored, e.id AS event_id,
         (SELECT array_agg(d.destination_id) FROM dl d WHERE d.company_id = c.company_id AND d.href = c.href) AS destinations,
         (SELECT count(pg_notify('${EVENTS_CHANNEL}', payload)) FROM notice) AS notified,
         ${announce('done')} AS announced
  FROM cur c LEFT JOIN ev e ON e.company_id = c.company_id AND e.href = c.href
  ORDER BY c.ord`;

export const STORE_STATEMENT: Statement = { name: 'skyhook_store_snapshots', text: STORE_SQL, smallTables: ['webhooks'] };

/** Stores a batch of fetched snapshots and processes the notifications they cover (see STORE_SQL). */
async function storeFetched(sql: Sql, plans: CachedPlans | undefined, items: FetchedSnapshot[]): Promise<Stored[]> {
  const col = <T>(f: (i: FetchedSnapshot) => T) => items.map(f);
  const { rows } = await sql.query<{ version: number; stored: number | null; event_id: string | null; destinations: string[] | null }>({
    name: plans?.nameFor(STORE_STATEMENT),
    text: STORE_SQL,
    values: [
      col((i) => i.companyId),
      col((i) => i.href),
      col((i) => i.claimed.type),
      col((i) => i.claimed.resourceId),
      col((i) => i.fetchStartedAt.toISOString()),
      JSON.stringify(col((i) => i.resource)),
      items.flatMap((i) => i.claimed.ids),
      items.flatMap((i, n) => i.claimed.ids.map(() => n + 1)),
      col((i) => i.fetchFinishedAt.toISOString()),
      col((i) => i.httpStatus),
      JSON.stringify(col((i) => i.changes)),
      col((i) => i.claimed.previous?.version ?? null),
      EVENT_TYPE_MAP,
    ],
  });
  if (rows.length !== items.length) throw new Error(`stored ${rows.length} of ${items.length} snapshots`);
  return rows.map((r) => ({ version: r.version, stored: r.stored, eventId: r.event_id === null ? null : Number(r.event_id), destinations: r.destinations ?? [] }));
}

// ---------------------------------------------------------------------------------------------------
// Replay

/**
 * Sets the notifications back to `received` (not a discarded one: its webhook was deactivated), keeping
 * the final state each had in notification_replays. The caller queues them (or the relay does).
 */
async function replay(sql: Sql, ids: number[]): Promise<PendingKey[]> {
  if (ids.length === 0) return [];
  const { rows } = await sql.query<{ id: string; company_id: string; href: string }>(
    `WITH target AS (
       SELECT id, status, queued_at, finished_at, last_error FROM notifications
       WHERE id = ANY($1::bigint[]) AND ${fromGuard('replay')} AND outcome IS DISTINCT FROM '${NOT_REPLAYABLE_OUTCOME}' ORDER BY id FOR UPDATE
     ),
     kept AS (
       INSERT INTO notification_replays (notification_id, previous_status, previous_queued_at, previous_finished_at, previous_error)
       SELECT id, status, queued_at, finished_at, last_error FROM target ORDER BY id
     ),
     upd AS (
       UPDATE notifications n
       SET status = 'received', last_error = NULL, outcome = NULL, snapshot_version = NULL, queued_at = NULL, processed_at = NULL, finished_at = NULL
       FROM target t WHERE n.id = t.id
       RETURNING n.id, n.company_id, n.href, n.status
     )
     SELECT id, company_id, href, ${announce('upd')} AS announced FROM upd ORDER BY id`,
    [ids],
  );
  return rows.map((r) => ({ id: Number(r.id), companyId: r.company_id, href: r.href }));
}

// ---------------------------------------------------------------------------------------------------
// Deleting a webhook (retention drops whole partitions: src/db/partitions.ts)

/** Deletes those of `attemptIds` that no kept notification shares any more. */
async function deleteOrphanAttempts(client: Sql, attemptIds: number[]): Promise<void> {
  if (attemptIds.length === 0) return;
  await client.query(
    `DELETE FROM fetch_attempts a WHERE a.id = ANY($1::bigint[])
     AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.id = ANY(a.notification_ids))`,
    [attemptIds],
  );
}

const attemptIdsOf = (rows: { fetch_attempt_ids: string[] | null }[]): number[] => [...new Set(rows.flatMap((r) => (r.fetch_attempt_ids ?? []).map(Number)))];

/**
 * A deleted webhook's notifications go with it, and so does their history: their replays and the fetch
 * attempts no kept one shares (none of them has a key: docs/decisions.md, "Partitions").
 */
async function deleteWebhook(client: Sql, webhookId: string): Promise<void> {
  await client.query('DELETE FROM notification_replays r USING notifications n WHERE n.id = r.notification_id AND n.webhook_id = $1', [webhookId]);
  const { rows } = await client.query<{ fetch_attempt_ids: string[] | null }>('DELETE FROM notifications WHERE webhook_id = $1 RETURNING fetch_attempt_ids', [webhookId]);
  await client.query('DELETE FROM webhooks WHERE id = $1', [webhookId]);
  await deleteOrphanAttempts(client, attemptIdsOf(rows));
}

// ---------------------------------------------------------------------------------------------------
// What the live stream says of each announced notification

async function summaries(sql: Sql, ids: number[]): Promise<NotificationSummary[]> {
  const { rows } = await sql.query<{ id: string; company_id: string; webhook_id: string; type: string; resource_id: string }>(
    'SELECT id, company_id, webhook_id, type, resource_id FROM notifications WHERE id = ANY($1::bigint[])',
    [ids],
  );
  return rows.map((r) => ({ id: Number(r.id), companyId: r.company_id, webhookId: r.webhook_id, type: r.type, resourceId: r.resource_id }));
}

// ---------------------------------------------------------------------------------------------------

/**
 * The statements above, bound to a pool (the batched claim and store named once their cached plans would
 * use the indexes: db/cached-plans.ts), or (in `transaction`) to one client inside a transaction (unnamed).
 */
function bind(sql: Sql, plans?: CachedPlans) {
  return {
    accept: (rows: NewNotification[], opts: { queueing: boolean }, within?: Change) => accept(within?.client ?? sql, rows, opts.queueing),
    queue: (ids: number[]) => requeue(sql, ids, 'queue'),
    unqueue: (ids: number[]) => requeue(sql, ids, 'unqueue'),
    staleQueuedKeys: (olderThanMs: number, after: ResourceRef | undefined, limit: number) => staleQueuedKeys(sql, olderThanMs, after, limit),
    pendingResources: (companyId: string) => pendingResources(sql, companyId),
    claimPending: (keys: ResourceRef[]) => claimPending(sql, plans, keys),
    retry: (attempt: FetchAttempt) => recordAttempt(sql, attempt, { status: 'pending' }),
    fail: (attempt: FetchAttempt, error: string) => recordAttempt(sql, attempt, { status: 'failed', error }),
    storeFetched: (items: FetchedSnapshot[]) => storeFetched(sql, plans, items),
    replay: (ids: number[], within?: Change) => replay(within?.client ?? sql, ids),
    summaries: (ids: number[]) => summaries(sql, ids),
  };
}

type NotificationsTx = ReturnType<typeof bind>;

export function createNotificationsRepository(pool: pg.Pool, log: Logger = pino({ level: 'silent' })) {
  const plans = new CachedPlans(pool, [CLAIM_STATEMENT, STORE_STATEMENT], log);
  const repository = {
    ...bind(pool, plans),
    /** The relay's rows locked (SKIP LOCKED: every process may run it), their jobs added, and queued: one transaction. */
    queueUnqueued: (graceMs: number, limit: number, add: (rows: PendingKey[]) => Promise<void>): Promise<PendingKey[]> =>
      inTransaction(pool, async (client) => {
        const rows = await lockUnqueued(client, graceMs, limit);
        if (rows.length > 0) {
          await add(rows);
          await requeue(client, rows.map((r) => r.id), 'queue');
        }
        return rows;
      }),
    markGone: (attempt: FetchAttempt): Promise<void> => inTransaction(pool, (client) => markGone(client, attempt)),
    /** Runs `fn` in one transaction; `client` is its connection, for what else must commit with it (the handlers). */
    transaction: <T>(fn: (tx: NotificationsTx, client: pg.PoolClient) => Promise<T>): Promise<T> => inTransaction(pool, (client) => fn(bind(client), client)),
    deleteWebhook: (webhookId: string, within: Change): Promise<void> => deleteWebhook(within.client, webhookId),
    /**
     * Retention (SPEC §5.3): a resource not fetched for `days` goes (its versions, events, went with their
     * partitions), in batches of `limit`, unless a notification for it still waits. Answers how many went.
     */
    forgetQuietResources: async (days: number, limit: number): Promise<number> => {
      const { rowCount } = await pool.query(
        `DELETE FROM resources r WHERE (r.company_id, r.href) IN (
           SELECT q.company_id, q.href FROM resources q WHERE q.fetched_at < now() - make_interval(days => $1)
           AND NOT EXISTS (SELECT 1 FROM notifications n WHERE n.company_id = q.company_id AND n.href = q.href AND ${fromGuard('finish', 'n.status')})
           LIMIT $2)`,
        [days, limit],
      );
      return rowCount ?? 0;
    },
  };
  return repository satisfies NotificationLifecycle;
}

export type NotificationsRepository = ReturnType<typeof createNotificationsRepository>;
