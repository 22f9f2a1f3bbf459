/**
 * Paused companies (SPEC §5.1 F4). While the marketplace refuses a company's credentials its notifications
 * wait, parked at its gate (company-gate.ts): no job exists for them, however many. This module
 *  - resumes a company: its pending resources are read from PostgreSQL and queued again, so a Redis that
 *    lost the parked hrefs loses nothing (called on new credentials, and when a probe is accepted);
 *  - runs a loop in each worker process that keeps the gate's paused set in step with PostgreSQL (a write
 *    that failed while Redis was down is mended there), tries each paused company's refused credentials
 *    with one harmless call every PAUSED_PROBE_INTERVAL_MS, one process at a time, so a refusal the
 *    marketplace takes back resumes the company by itself, and hands out the parked resources of companies
 *    whose places freed without a fetch ending (a dead worker's lapsed leases, a raised limit).
 */
import type { Logger } from 'pino';
import type pg from 'pg';
import { connectionFromRow } from '../db/company-connection.js';
import type { CompanyRow } from '../db/schema/index.js';
import { MarketplaceError } from '../marketplace/client.js';
import type { WebhookSettingsApi } from '../marketplace/webhook-settings.js';
import { withTimeout } from '../lib/timeout.js';
import type { NotificationLifecycle } from '../notifications/lifecycle.js';
import { credentialsVerdict } from '../services/companies.service.js';
import type { CompanyControls } from '../services/company-state.js';
import type { RedisClient } from '../lib/redis/connection.js';
import { probeKey, type CompanyGate } from './company-gate.js';
import type { ResourceKey } from './fetch.queue.js';

/** Resources queued per enqueue when a company resumes. */
const RESUME_BATCH = 1000;
/** How often each worker process looks at the paused companies, at most (the probes themselves are rarer). */
const LOOP_MS = 15_000;

/**
 * A company's controls (services/company-state.ts) over its gate. Resuming lifts the pause at the gate and
 * queues every resource the company has pending (read from PostgreSQL); it answers how many.
 */
export function companyControls(
  gate: CompanyGate,
  queue: Pick<NotificationLifecycle, 'pendingResources'> & { enqueue(resources: ResourceKey[]): Promise<void> },
  opts: { timeoutMs: number; log: Pick<Logger, 'info' | 'warn'> },
): CompanyControls {
  // Bounded: a Redis out of reach must not hold an admin answer (states then come from PostgreSQL alone).
  const bounded = <T>(work: Promise<T>, what: string) => withTimeout(work, opts.timeoutMs, what);
  return {
    pause: async (companyId) => {
      opts.log.warn({ companyId, state: 'paused' }, 'the marketplace refused the company credentials when they were checked; the company is paused and its notifications wait for new credentials');
      await bounded(gate.pause(companyId), 'pausing at the company gate');
    },
    resume: async (companyId) => {
      await gate.resume(companyId);
      const resources = await queue.pendingResources(companyId);
      for (let i = 0; i < resources.length; i += RESUME_BATCH) await queue.enqueue(resources.slice(i, i + RESUME_BATCH));
      opts.log.info({ companyId, state: 'ok', resources: resources.length }, 'company resumed: its waiting notifications are queued again');
      return resources.length;
    },
    setMax: (companyId, max) => bounded(gate.setMax(companyId, max), 'setting the company limit'),
    views: (companyIds) => bounded(gate.views(companyIds), 'reading the company gates'),
    heldUntil: (companyId) => bounded(gate.heldUntil(companyId), 'reading the company gate'),
    hold: (companyId, retryAfterMs, why) => bounded(gate.hold(companyId, retryAfterMs, why), 'holding the company'),
  };
}

/** What one harmless call with a company's stored credentials found (companies.service.ts credentialsVerdict). */
type ProbeVerdict = { status: 'accepted' | 'refused' | 'unreachable'; error: string | null };

/** The probe: the same harmless call as the check when credentials are set (SPEC §14), asked once. */
export function settingsProbe(settings: Pick<WebhookSettingsApi, 'list'>, secretKey: Buffer): (row: CompanyRow) => Promise<ProbeVerdict> {
  return async (row) => {
    try {
      await settings.list(connectionFromRow(row, secretKey), { retry: false });
      return { status: 'accepted', error: null };
    } catch (err) {
      if (!(err instanceof MarketplaceError)) throw err;
      const verdict = credentialsVerdict(err);
      return { status: verdict.credentialsStatus === 'refused' ? 'refused' : 'unreachable', error: verdict.credentialsError };
    }
  };
}

export class PausedCompanies {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      pool: Pick<pg.Pool, 'query'>;
      redis: RedisClient;
      prefix: string;
      gate: Pick<CompanyGate, 'pause' | 'pausedCompanies'>;
      company: (companyId: string) => Promise<CompanyRow | undefined>;
      resume: (companyId: string) => Promise<number>;
      /** Hands out the parked resources of these companies that have free places (company-gate.ts kick). */
      kick: (companyIds: string[]) => Promise<void>;
      /** One harmless call with the company's stored credentials. */
      probe: (row: CompanyRow) => Promise<ProbeVerdict>;
      probeIntervalMs: number;
      log: Logger;
      onError: (err: unknown) => void;
    },
  ) {}

  start(): void {
    this.timer = setInterval(() => {
      if (!this.running) this.running = this.runOnce().catch(this.deps.onError).finally(() => (this.running = undefined));
    }, Math.min(LOOP_MS, this.deps.probeIntervalMs / 2));
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass: the mirror mended, the probes that are due, the companies with work waiting kicked. */
  async runOnce(): Promise<void> {
    await this.kickWaiting();
    const { rows } = await this.deps.pool.query<{ id: string }>("SELECT id FROM companies WHERE connection_status = 'unauthorized'");
    const paused = new Set(rows.map((r) => r.id));
    const mirrored = new Set(await this.deps.gate.pausedCompanies());
    for (const id of paused) if (!mirrored.has(id)) await this.deps.gate.pause(id);
    for (const id of mirrored) {
      if (paused.has(id)) continue;
      // New credentials whose resume did not reach Redis (it was down, say).
      await this.deps.resume(id);
    }
    for (const id of paused) {
      // One process probes a company per interval: the key is set when the company is paused, so the first probe comes an interval later.
      const due = await this.deps.redis.set(probeKey(this.deps.prefix, id), '1', 'PX', this.deps.probeIntervalMs, 'NX');
      if (due === 'OK') await this.probe(id);
    }
  }

  /** Companies with queued notifications, not paused: their parked resources may have places that freed unseen. */
  private async kickWaiting(): Promise<void> {
    const { rows } = await this.deps.pool.query<{ company_id: string }>(
      `SELECT company_id FROM backlog WHERE pending > 0 AND company_id NOT IN (SELECT id FROM companies WHERE connection_status = 'unauthorized')`,
    );
    if (rows.length > 0) await this.deps.kick(rows.map((r) => r.company_id));
  }

  private async probe(companyId: string): Promise<void> {
    const row = await this.deps.company(companyId);
    if (!row || row.connectionStatus !== 'unauthorized') return;
    const verdict = await this.deps.probe(row);
    const { rowCount } = await this.deps.pool.query(
      `UPDATE companies SET credentials_status = $3::text::credentials_status, credentials_checked_at = now(), credentials_error = $4,
         connection_status = CASE WHEN $3::text = 'accepted' THEN 'ok'::connection_status ELSE connection_status END,
         connection_error = CASE WHEN $3::text = 'accepted' THEN NULL ELSE connection_error END,
         paused_at = CASE WHEN $3::text = 'accepted' THEN NULL ELSE paused_at END
       WHERE id = $1 AND credentials_revision = $2 AND connection_status = 'unauthorized'`,
      [companyId, row.credentialsRevision, verdict.status, verdict.error],
    );
    if (verdict.status !== 'accepted' || rowCount === 0) {
      this.deps.log.info({ companyId, probe: verdict.status }, 'paused company: the marketplace still does not accept its credentials; it stays paused');
      return;
    }
    this.deps.log.info({ companyId }, 'paused company: the marketplace accepts its credentials again');
    await this.deps.resume(companyId);
  }
}

