/**
 * The audit log written with each change (SPEC §10.1), over HTTP against the simulator and Skyhook really
 * started. It walks Fastify's route table: every route that may change something (the admin API's, the
 * console's, the queue dashboard's) makes its change here with a key, and each change leaves exactly one
 * entry with the right actor, address, targets and field names, written by the change itself: in its
 * transaction for a change of the database alone (one row), before and after for a call outside it (two
 * rows, listed as one); never by the edge's fallback. A route left unwalked fails the walk. Then: no entry
 * holds a secret used here; a change that fails (the database mid-change, the marketplace's refusal)
 * leaves an entry saying so and nothing of the change; a change whose entry cannot be written is not made.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clientSearchLead, tailQuote } from '../fixtures/requests.js';
import { consoleClient } from '../helpers/console-client.js';
import { storedVersion } from '../helpers/destinations.js';
import { startReceiver, type TestReceiver } from '../helpers/receiver.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { adminClient, eventually, type AdminCall } from '../helpers/skyhook.js';
import type { FaultCompany } from '../faults/support.js';

/** Answers are checked field by field with expect; a static type would add nothing. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

let s: Scenario;
let receiver: TestReceiver;
/** The key every change here is made with. */
let walker: { id: string; key: string };
let api: AdminCall;
let session: { cookie: string; csrf: string };
const web = consoleClient(() => s.skyhook.url);
/** Every secret given to Skyhook here or answered by it: no entry may hold one. */
const secrets: string[] = [];
/** The routes whose change was made here and whose entry was checked. */
const walked = new Set<string>();
const uid = (p: string) => `${p}-${randomUUID().slice(0, 8)}`;

beforeAll(async () => {
  // A second for a marketplace call: a quote answered later is held unknown (the console's resend).
  s = await startScenario({ env: { FETCH_MIN_INTERVAL_MS: '0', MARKETPLACE_TIMEOUT_MS: '1000' } });
  receiver = await startReceiver();
  const made = await s.skyhook.admin('POST', '/keys', { name: 'walker', role: 'admin' });
  walker = { id: made.body.id, key: made.body.key };
  secrets.push(walker.key);
  api = adminClient(s.skyhook.url, walker.key);
  session = await web.signIn(walker.key);
});
afterAll(async () => {
  await receiver?.close();
  await s?.close();
});

const form = (path: string, fields: Record<string, string> = {}) => web.post(path, { _csrf: session.csrf, ...fields }, session.cookie);
const lastId = async () => Number((await s.sql.query('SELECT coalesce(max(id), 0) AS id FROM audit_log')).rows[0].id);
const status = async <R extends Response | { status: number; body?: Json }>(res: R, expected: number): Promise<R> => {
  const body = res instanceof Response ? await res.clone().text() : (JSON.stringify(res.body) ?? '');
  // A console page says what went wrong in its alert.
  const said = body.includes('role="alert"') ? body.slice(body.indexOf('role="alert"'), body.indexOf('role="alert"') + 400) : body.slice(0, 400);
  expect(res.status, said).toBe(expected);
  return res;
};

interface Want {
  /** A call outside the database: `started`, then its outcome. */
  call?: boolean;
  fields?: string[];
  targets?: Record<string, unknown>;
  details?: Record<string, unknown>;
}

/** `act` makes a change with the walker's key; it leaves exactly one entry, written by the change, as `want` says. */
async function changed<T>(route: string, act: () => Promise<T>, want: Want = {}): Promise<{ value: T; entry: Json }> {
  const before = await lastId();
  const value = await act();
  const { rows } = await s.sql.query('SELECT id, outcome, actor_id, settles FROM audit_log WHERE id > $1 ORDER BY id', [before]);
  expect(rows.map((r) => [r.outcome, r.actor_id]), route).toEqual(want.call ? [['started', walker.id], ['ok', walker.id]] : [['ok', walker.id]]);
  if (want.call) expect(Number(rows[1].settles), route).toBe(Number(rows[0].id));
  const listed = (await s.skyhook.admin('GET', `/audit?actor=${walker.id}&limit=5`)).body.items.filter((e: Json) => e.id > before);
  expect(listed, route).toHaveLength(1);
  const [entry] = listed;
  expect(entry, route).toMatchObject({ action: route, actor: { kind: 'key', id: walker.id, name: 'walker' }, address: '127.0.0.1', outcome: 'ok', settledAt: expect.any(String) });
  if (want.targets) expect(entry.targets, route).toMatchObject(want.targets);
  if (want.fields) expect(entry.fields, route).toEqual(want.fields);
  if (want.details) expect(entry.details, route).toMatchObject(want.details);
  expect(entry.details?.outsideTransaction, `${route}: recorded by the edge, not by its change`).toBeUndefined();
  walked.add(route);
  return { value, entry };
}

/** A company made by the bootstrap token (not walked), with one webhook on the simulator. */
const companyOf = (simId: string): Promise<FaultCompany> => s.company(uid(simId), { eventTypes: ['TripRequest', 'ClientLeads'] });

/** A delivered delivery of `company` to the receiver, through a destination made for it. */
async function delivery(company: FaultCompany, destinationId: string): Promise<number> {
  const resourceId = uid('rfq');
  await storedVersion(s, company, resourceId, 1);
  return eventually(async () => {
    const { rows } = await s.sql.query("SELECT id FROM deliveries WHERE destination_id = $1 AND resource_id = $2 AND status = 'delivered'", [destinationId, resourceId]);
    return rows[0] ? Number(rows[0].id) : undefined;
  }, `the delivery of ${resourceId}`);
}

/** A notification of `company`, fetched and processed. */
async function processedNotification(company: FaultCompany): Promise<string> {
  const [fired] = await s.sim.fire({ companyId: company.simId, eventType: 'TripRequest', resourceId: uid('rfq') });
  return eventually(async () => {
    const { rows } = await s.sql.query("SELECT id FROM notifications WHERE company_id = $1 AND resource_id = $2 AND status = 'processed'", [company.companyId, fired!.notification.id]);
    return rows[0]?.id as string | undefined;
  }, 'the notification processed');
}

describe('each change through the admin API leaves one entry, written by the change', () => {
  let company: FaultCompany;
  let webhookId: string;

  it('companies: made and given new credentials with a check (calls), renamed and limited (the database alone)', async () => {
    const token = `walk-token-${randomUUID()}`;
    secrets.push(token);
    const simId = uid('walk');
    s.sim.addCompany({ id: simId, token });
    const { value: made, entry } = await changed(
      'POST /admin/companies',
      async () => (await status(await api('POST', '/companies', { name: 'Walk', apiBaseUrl: s.sim.apiBaseUrl, apiToken: token }), 201)).body,
      { call: true, fields: ['name', 'apiBaseUrl', 'apiToken'], details: { credentials: 'accepted' } },
    );
    expect(entry.companyId).toBe(made.id);
    company = { simId, companyId: made.id, webhookId: '', remoteWebhookId: '', token };
    const path = `/companies/${company.companyId}`;
    await changed('PATCH /admin/companies/:companyId', async () => status(await api('PATCH', path, { name: 'Walk renamed' }), 200), { fields: ['name'], targets: {} });
    // What changed, not what was sent: the same name again is not a field changed.
    await changed('PATCH /admin/companies/:companyId', async () => status(await api('PATCH', path, { name: 'Walk renamed', fetchConcurrency: 7 }), 200), { fields: ['fetchConcurrency'] });
    const replaced = await changed('PATCH /admin/companies/:companyId', async () => status(await api('PATCH', path, { apiToken: token }), 200), { call: true, fields: ['apiToken'], details: { credentials: 'accepted' } });
    expect(replaced.entry.companyId).toBe(company.companyId);
  });

  it('webhooks: registered, changed and reconciled on the marketplace (calls)', async () => {
    const hooks = `/companies/${company.companyId}/webhooks`;
    const { value } = await changed('POST /admin/companies/:companyId/webhooks', async () => (await status(await api('POST', hooks, { eventTypes: ['TripRequest', 'ClientLeads'], authType: 'BASIC' }), 201)).body, {
      call: true,
      fields: ['eventTypes', 'authType'],
    });
    webhookId = value.id;
    company.webhookId = webhookId;
    const listed = (await s.skyhook.admin('GET', `/audit?actor=${walker.id}&limit=1`)).body.items[0];
    expect(listed.targets).toEqual({ webhookId });
    await changed('PATCH /admin/companies/:companyId/webhooks/:webhookId', async () => status(await api('PATCH', `${hooks}/${webhookId}`, { displayName: 'walked', eventTypes: ['TripRequest', 'ClientLeads'] }), 200), {
      call: true,
      fields: ['displayName'],
      targets: { webhookId },
    });
    await changed('POST /admin/companies/:companyId/webhooks/reconcile', async () => status(await api('POST', `${hooks}/reconcile`, {}), 200), { call: true, details: { applied: false, drift: 0 } });
  });

  it('leads, quotes and declines sent to the marketplace (calls)', async () => {
    const base = `/companies/${company.companyId}`;
    const lead = clientSearchLead(uid('lead'));
    const sent = await changed('POST /admin/companies/:companyId/leads', async () => (await status(await api('POST', `${base}/leads`, lead), 201)).body, { call: true, fields: Object.keys(lead), details: { created: true } });
    expect(sent.entry.targets).toEqual({ leadId: sent.value.id });
    await changed('POST /admin/companies/:companyId/quotes', async () => status(await api('POST', `${base}/quotes`, { requestId: uid('lift'), submission: tailQuote(uid('quote')) }), 201), {
      call: true,
      fields: ['requestId', 'submission'],
    });
    await changed('POST /admin/companies/:companyId/declines', async () => status(await api('POST', `${base}/declines`, { requestId: uid('lift'), decline: { declineReason: 'AIRCRAFT_NOT_AVAILABLE' } }), 201), {
      call: true,
      fields: ['requestId', 'decline'],
    });
  });

  it('notifications replayed, one and all matching a filter (the database alone; a bulk one with its filter and count)', async () => {
    const id = await processedNotification(company);
    await changed('POST /admin/notifications/:id/replay', async () => status(await api('POST', `/notifications/${id}/replay`), 200), { fields: [], targets: { id: Number(id) } });
    await processedNotification(company);
    await eventually(async () => (await s.sql.query("SELECT 1 FROM notifications WHERE company_id = $1 AND status <> 'processed'", [company.companyId])).rows.length === 0, 'all processed');
    const { value } = await changed('POST /admin/notifications/replay', async () => (await status(await api('POST', '/notifications/replay', { companyId: company.companyId, status: 'processed' }), 200)).body, {
      details: { filter: { companyId: company.companyId, status: 'processed' } },
    });
    const listed = (await s.skyhook.admin('GET', `/audit?actor=${walker.id}&limit=1`)).body.items[0];
    expect(value.replayed).toBeGreaterThan(1);
    expect(value.replayed).toBe(value.matched);
    expect(listed).toMatchObject({ companyId: company.companyId, details: { matched: value.matched, replayed: value.replayed } });
    const resynced = await changed('POST /admin/companies/:companyId/resync', async () => (await status(await api('POST', `/companies/${company.companyId}/resync`), 200)).body);
    expect(resynced.entry).toMatchObject({ companyId: company.companyId, details: { resources: resynced.value.resources, queued: resynced.value.queued } });
  });

  it('destinations and deliveries: made, changed (the fields changed), replayed and deleted (the database alone); a test (a call)', async () => {
    const base = `/companies/${company.companyId}/destinations`;
    const { value: d } = await changed('POST /admin/companies/:companyId/destinations', async () => (await status(await api('POST', base, { url: receiver.url, description: 'walked' }), 201)).body, {
      fields: ['url', 'description'],
    });
    secrets.push(d.secret);
    receiver.secrets = [d.secret];
    expect((await s.skyhook.admin('GET', `/audit?actor=${walker.id}&limit=1`)).body.items[0].targets).toEqual({ destinationId: d.id });
    const deliveryId = await delivery(company, d.id);
    await changed('POST /admin/companies/:companyId/deliveries/:deliveryId/replay', async () => status(await api('POST', `/companies/${company.companyId}/deliveries/${deliveryId}/replay`), 200), { targets: { deliveryId } });
    await eventually(async () => (await s.sql.query("SELECT 1 FROM deliveries WHERE id = $1 AND status = 'delivered'", [deliveryId])).rows.length === 1, 'delivered again');
    await changed('POST /admin/companies/:companyId/destinations/:destinationId/replay', async () => status(await api('POST', `${base}/${d.id}/replay`, { status: 'delivered' }), 200), {
      details: { filter: { status: 'delivered' }, matched: 1, replayed: 1 },
    });
    const rotated = await changed('PATCH /admin/companies/:companyId/destinations/:destinationId', async () => (await status(await api('PATCH', `${base}/${d.id}`, { url: receiver.url, description: 'changed', rotateSecret: { graceSeconds: 0 } }), 200)).body, {
      fields: ['description', 'secret'],
      targets: { destinationId: d.id },
    });
    secrets.push(rotated.value.secret);
    receiver.secrets = [rotated.value.secret];
    // A read, but of a secret: an entry naming what was read, never its value (SPEC §5.2).
    const read = await changed('GET /admin/companies/:companyId/destinations/:destinationId/secret', async () => (await status(await api('GET', `${base}/${d.id}/secret`), 200)).body, {
      fields: ['secret'],
      targets: { destinationId: d.id },
    });
    expect(read.value.secret).toBe(rotated.value.secret);
    expect(JSON.stringify(read.entry)).not.toContain(rotated.value.secret);
    await changed('POST /admin/companies/:companyId/destinations/:destinationId/test', async () => status(await api('POST', `${base}/${d.id}/test`), 200), { call: true, details: { httpStatus: 200 } });
    await changed('PATCH /admin/companies/:companyId/destinations/:destinationId', async () => status(await api('PATCH', `${base}/${d.id}`, { active: false }), 200), { fields: ['active'] });
    // Asked, and nothing changed: still its one entry, naming no field.
    await changed('PATCH /admin/companies/:companyId/destinations/:destinationId', async () => status(await api('PATCH', `${base}/${d.id}`, { active: false }), 200), { fields: [] });
    expect((await s.sql.query('SELECT disabled_by FROM destinations WHERE id = $1', [d.id])).rows[0].disabled_by).toBe('walker');
    await changed('DELETE /admin/companies/:companyId/destinations/:destinationId', async () => status(await api('DELETE', `${base}/${d.id}`), 204), { fields: [] });
  });

  it('webhooks and companies deleted: a call when a setting is deactivated on the marketplace, the database alone when none is', async () => {
    const hooks = `/companies/${company.companyId}/webhooks`;
    await changed('DELETE /admin/companies/:companyId/webhooks/:webhookId', async () => status(await api('DELETE', `${hooks}/${webhookId}`), 204), { call: true });
    const other = (await status(await s.skyhook.admin('POST', hooks, { eventTypes: ['TripRequest'], authType: 'BASIC' }), 201)).body;
    await status(await s.skyhook.admin('PATCH', `${hooks}/${other.id}`, { active: false }), 200);
    await changed('DELETE /admin/companies/:companyId/webhooks/:webhookId', async () => status(await api('DELETE', `${hooks}/${other.id}`), 204));
    await changed('DELETE /admin/companies/:companyId', async () => status(await api('DELETE', `/companies/${company.companyId}`), 204));
    const active = await companyOf('active');
    await changed('DELETE /admin/companies/:companyId', async () => status(await api('DELETE', `/companies/${active.companyId}`), 204), { call: true });
    expect((await s.sql.query('SELECT count(*) AS n FROM companies WHERE id = ANY($1::uuid[])', [[company.companyId, active.companyId]])).rows[0].n).toBe('0');
  });

  it('keys: made (the fields set) and revoked (revokedAt; revoked again, nothing)', async () => {
    const { value: key } = await changed('POST /admin/keys', async () => (await status(await api('POST', '/keys', { name: 'made by the walker', role: 'viewer' }), 201)).body, { fields: ['name', 'role'] });
    secrets.push(key.key);
    expect((await s.skyhook.admin('GET', `/audit?actor=${walker.id}&limit=1`)).body.items[0].targets).toEqual({ keyId: key.id });
    await changed('DELETE /admin/keys/:keyId', async () => status(await api('DELETE', `/keys/${key.id}`), 200), { fields: ['revokedAt'], targets: { keyId: key.id } });
    await changed('DELETE /admin/keys/:keyId', async () => status(await api('DELETE', `/keys/${key.id}`), 200), { fields: [] });
  });

  it("the queue dashboard: a change of its jobs in Redis, written before and after by the edge", async () => {
    const queues = (await status(await api('GET', '/queues/api/queues'), 200)).body.queues as { name: string }[];
    const queue = queues[0]!.name;
    await changed('PUT /admin/queues/api/queues/:queueName/clean/:queueStatus', async () => status(await api('PUT', `/queues/api/queues/${encodeURIComponent(queue)}/clean/completed`), 200), {
      call: true,
      targets: { queueName: queue, queueStatus: 'completed' },
    });
  });
});

describe('each change through the console leaves one entry, written by the change', () => {
  let company: FaultCompany;
  let base: string;
  beforeAll(async () => {
    company = await companyOf('console');
    base = `/companies/${company.companyId}`;
  });

  it('companies and webhooks', async () => {
    const token = `console-token-${randomUUID()}`;
    secrets.push(token);
    const simId = uid('console-new');
    s.sim.addCompany({ id: simId, token });
    const made = await changed('POST /console/companies', async () => status(await form('/companies', { name: 'Made in the console', apiBaseUrl: s.sim.apiBaseUrl, apiToken: token }), 303), {
      call: true,
      fields: ['name', 'apiBaseUrl', 'apiToken'],
    });
    const madeId = /\/companies\/([0-9a-f-]{36})/.exec(made.value.headers.get('location') ?? '')?.[1];
    expect(made.entry.companyId).toBe(madeId);
    await changed('POST /console/companies/:companyId', async () => status(await form(base, { name: 'Console renamed', apiToken: '' }), 303), { fields: ['name'] });
    await changed('POST /console/companies/:companyId/limit', async () => status(await form(`${base}/limit`, { fetchConcurrency: '5' }), 303), { fields: ['fetchConcurrency'] });
    await changed('POST /console/companies/:companyId/webhooks', async () => status(await form(`${base}/webhooks`, { eventTypes: 'TripRequest', authType: 'BASIC', displayName: '' }), 303), { call: true });
    const hook = (await s.skyhook.admin('GET', `${base}/webhooks`)).body.items.find((w: Json) => w.id !== company.webhookId);
    await changed('POST /console/companies/:companyId/webhooks/:webhookId', async () => status(await form(`${base}/webhooks/${hook.id}`, { action: 'deactivate' }), 303), {
      call: true,
      fields: ['active'],
      targets: { webhookId: hook.id },
    });
    await changed('POST /console/companies/:companyId/webhooks/:webhookId/delete', async () => status(await form(`${base}/webhooks/${hook.id}/delete`), 303), { targets: { webhookId: hook.id } });
    await changed('POST /console/companies/:companyId/delete', async () => status(await form(`/companies/${madeId}/delete`), 303));
  });

  it('destinations and deliveries', async () => {
    const made = await changed('POST /console/companies/:companyId/destinations', async () => status(await form(`${base}/destinations`, { url: receiver.url, description: 'console' }), 200), { fields: ['url', 'description'] });
    const [secret] = (await made.value.text()).match(/whsec_[A-Za-z0-9+/]{43}=/) ?? [];
    secrets.push(secret!);
    receiver.secrets = [secret!];
    const d = (await s.skyhook.admin('GET', `${base}/destinations`)).body.items[0];
    const at = `${base}/destinations/${d.id}`;
    // The edit form sends every field: only the one that changed is named.
    await changed('POST /console/companies/:companyId/destinations/:destinationId', async () => status(await form(at, { url: receiver.url, description: 'console, edited', maxConcurrency: '', ratePerSecond: '', timeoutMs: '' }), 303), {
      fields: ['description'],
      targets: { destinationId: d.id },
    });
    const rotated = await changed('POST /console/companies/:companyId/destinations/:destinationId/rotate', async () => status(await form(`${at}/rotate`, { graceSeconds: '0' }), 200), { fields: ['secret'] });
    const [newSecret] = (await rotated.value.text()).match(/whsec_[A-Za-z0-9+/]{43}=/) ?? [];
    secrets.push(newSecret!);
    receiver.secrets = [newSecret!];
    await changed('POST /console/companies/:companyId/destinations/:destinationId/test', async () => status(await form(`${at}/test`), 200), { call: true });
    const deliveryId = await delivery(company, d.id);
    await changed('POST /console/companies/:companyId/deliveries/:deliveryId/replay', async () => status(await form(`${base}/deliveries/${deliveryId}/replay`), 303));
    await eventually(async () => (await s.sql.query("SELECT 1 FROM deliveries WHERE id = $1 AND status = 'delivered'", [deliveryId])).rows.length === 1, 'delivered again');
    await changed('POST /console/companies/:companyId/destinations/:destinationId/replay', async () => status(await form(`${at}/replay`, { status: 'delivered' }), 200), { details: { matched: 1, replayed: 1 } });
    await changed('POST /console/companies/:companyId/destinations/:destinationId/disable', async () => status(await form(`${at}/disable`), 303), { fields: ['active'] });
    await changed('POST /console/companies/:companyId/destinations/:destinationId/enable', async () => status(await form(`${at}/enable`, { skipBefore: '' }), 303), { fields: ['active'] });
    await changed('POST /console/companies/:companyId/destinations/:destinationId/delete', async () => status(await form(`${at}/delete`), 303));
  });

  it('notifications replayed, one and all matching', async () => {
    const id = await processedNotification(company);
    await changed('POST /console/notifications/:id/replay', async () => status(await form(`/notifications/${id}/replay`), 303), { targets: { id } });
    await changed('POST /console/notifications/replay', async () => status(await form('/notifications/replay', { companyId: company.companyId, status: 'failed', limit: '10' }), 200), {
      details: { matched: 0, replayed: 0 },
    });
  });

  it("an RFQ's quote and decline, and the resend of each held unknown (calls)", async () => {
    const rfqId = uid('rfq');
    await storedVersion(s, company, rfqId, 1);
    const rfq = (await s.sql.query('SELECT href, body FROM resources WHERE company_id = $1 AND resource_id = $2', [company.companyId, rfqId])).rows[0];
    await changed('POST /console/companies/:companyId/rfq-quotes', async () => status(await form(`${base}/rfq-quotes`, { href: rfq.href, requestId: rfq.body.sellerLift[0].id, submission: JSON.stringify(tailQuote(uid('q'))) }), 303), { call: true });
    await changed('POST /console/companies/:companyId/rfq-declines', async () => status(await form(`${base}/rfq-declines`, { href: rfq.href, requestId: rfq.body.sellerLift[1].id, declineReason: 'CREW_NOT_AVAILABLE' }), 303), { call: true });
    // Answered after Skyhook stopped waiting: each is held unknown (the bootstrap token's changes, not walked).
    s.sim.setFaults({ submitLatencyMs: 1500 });
    try {
      expect((await s.skyhook.admin('POST', `${base}/quotes`, { requestId: uid('lift'), submission: tailQuote(uid('late')) })).status).toBe(502);
      expect((await s.skyhook.admin('POST', `${base}/declines`, { requestId: uid('lift'), decline: { declineReason: 'OTHER' } })).status).toBe(502);
    } finally {
      s.sim.setFaults({ submitLatencyMs: 0 });
    }
    const [quote] = (await s.skyhook.admin('GET', `${base}/quotes?status=unknown`)).body.items;
    const [decline] = (await s.skyhook.admin('GET', `${base}/declines?status=unknown`)).body.items;
    await changed('POST /console/companies/:companyId/quotes/:id/resend', async () => status(await form(`${base}/quotes/${quote.id}/resend`), 303), { call: true, targets: { id: quote.id } });
    await changed('POST /console/companies/:companyId/declines/:id/resend', async () => status(await form(`${base}/declines/${decline.id}/resend`), 303), { call: true, targets: { id: decline.id } });
  });

  it('keys made and revoked, a sign-in and a sign-out', async () => {
    const made = await changed('POST /console/keys', async () => status(await form('/keys', { name: 'made in the console', role: 'viewer', companyId: '', expiresAt: '' }), 200), { fields: ['name', 'role'] });
    const [key] = (await made.value.text()).match(/skh_[0-9A-Za-z]{46}/) ?? [];
    secrets.push(key!);
    const keyId = made.entry.targets.keyId;
    await changed('POST /console/keys/:keyId/revoke', async () => status(await form(`/keys/${keyId}/revoke`), 303), { fields: ['revokedAt'] });
    // A sign-in is the key's own change: who signed in, from where.
    const { value: other } = await changed('POST /console/sign-in', () => web.signIn(walker.key));
    await changed('POST /console/sign-out', async () => status(await web.post('/sign-out', { _csrf: other.csrf }, other.cookie), 303));
    expect((await web.get('/notifications', other.cookie)).status).toBe(303);
  });
});

describe('the walk', () => {
  it('made, here, a change through every route that may change something, each with its one entry', () => {
    const routes = s.skyhook.runtime
      .app!.accessTable()
      .filter((r) => r.method !== 'GET' && r.method !== 'HEAD' && r.access !== 'public')
      .map((r) => `${r.method} ${r.url}`);
    // The dashboard's many routes share one scope and one way to be recorded: one of them is walked.
    const unwalked = routes.filter((r) => !walked.has(r) && !r.includes(' /admin/queues/'));
    expect(unwalked).toEqual([]);
    expect(walked.size).toBeGreaterThan(40);
  });

  it('no entry holds a secret used here: keys, API tokens, signing secrets', async () => {
    expect(secrets.length).toBeGreaterThan(6);
    for (const secret of secrets) {
      const { rows } = await s.sql.query(`SELECT count(*) AS n FROM audit_log WHERE audit_log::text LIKE '%' || $1 || '%'`, [secret]);
      expect(rows[0].n, `${secret.slice(0, 8)}…`).toBe('0');
    }
  });
});

/** Refuses `op` on `table` for the test (a database error mid-change), until dropped. */
async function refusing<T>(table: string, op: 'INSERT' | 'UPDATE' | 'DELETE', work: () => Promise<T>): Promise<T> {
  await s.sql.query(`CREATE OR REPLACE FUNCTION test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused for the test'; END $$`);
  await s.sql.query(`CREATE TRIGGER test_refuse BEFORE ${op} ON ${table} FOR EACH ROW EXECUTE FUNCTION test_refuse()`);
  try {
    return await work();
  } finally {
    await s.sql.query(`DROP TRIGGER test_refuse ON ${table}`);
  }
}

/** The rows of what the changes below would make or remove (deliveries and fetches go on in the background). */
const rowCounts = async (): Promise<Record<string, number>> => {
  const tables = ['audit_log', 'api_keys', 'companies', 'webhooks', 'destinations', 'notification_replays', 'leads', 'console_sessions'];
  const counted = await Promise.all(tables.map(async (t) => [t, Number((await s.sql.query(`SELECT count(*) AS n FROM ${t}`)).rows[0].n)] as const));
  return Object.fromEntries(counted);
};

describe('a change that fails', () => {
  it('in the database mid-change leaves one entry saying so, and nothing of the change', async () => {
    const key = (await s.skyhook.admin('POST', '/keys', { name: 'to revoke, in vain', role: 'viewer' })).body;
    secrets.push(key.key);
    const held = await web.signIn(key.key);
    const before = await lastId();
    // The revocation's second statement (its console sessions) fails: its first (the key) rolls back with it.
    const res = await refusing('console_sessions', 'DELETE', () => api('DELETE', `/keys/${key.id}`));
    expect(res.status).toBe(500);
    expect((await s.skyhook.admin('GET', `/keys/${key.id}`)).body.state).toBe('active');
    expect((await web.get('/notifications', held.cookie)).status).toBe(200);
    const { rows } = await s.sql.query('SELECT outcome, fields, details, settles FROM audit_log WHERE id > $1', [before]);
    expect(rows).toEqual([{ outcome: 'failed', fields: [], details: { status: 500, sent: [] }, settles: null }]);
  });

  it('refused by the marketplace leaves its call with the refusal as its outcome, and nothing changed here', async () => {
    const refused = await companyOf('refusing');
    // A sandbox reset: the marketplace forgot the setting, and refuses its change.
    s.sim.resetCompany(refused.simId);
    const hook = `/companies/${refused.companyId}/webhooks/${refused.webhookId}`;
    const before = await lastId();
    const res = await api('PATCH', hook, { displayName: 'never stored' });
    expect(res.status).toBe(502);
    expect((await s.skyhook.admin('GET', hook)).body.displayName).not.toBe('never stored');
    const { rows } = await s.sql.query('SELECT id, outcome, fields, settles FROM audit_log WHERE id > $1 ORDER BY id', [before]);
    expect(rows.map((r) => [r.outcome, r.fields])).toEqual([
      ['started', ['displayName']],
      ['refused', []],
    ]);
    const [entry] = (await s.skyhook.admin('GET', `/audit?actor=${walker.id}&limit=1`)).body.items;
    expect(entry).toMatchObject({ action: 'PATCH /admin/companies/:companyId/webhooks/:webhookId', outcome: 'refused', fields: ['displayName'], details: { status: 502 } });
  });
});

describe('a change whose entry cannot be written is not made', () => {
  let company: FaultCompany;
  let destinationId: string;
  let keyId: string;
  beforeAll(async () => {
    company = await companyOf('unwritten');
    destinationId = (await s.skyhook.admin('POST', `/companies/${company.companyId}/destinations`, { url: receiver.url, description: 'kept' })).body.id;
    keyId = (await s.skyhook.admin('POST', '/keys', { name: 'kept', role: 'viewer' })).body.id;
    await processedNotification(company);
  });

  it('a change of the database alone: its transaction, entry and all, rolls back', async () => {
    const before = await rowCounts();
    const replays = (await s.sql.query("SELECT count(*) AS n FROM notifications WHERE company_id = $1 AND status = 'processed'", [company.companyId])).rows[0].n;
    const answers = await refusing('audit_log', 'INSERT', async () => [
      await api('POST', `/companies/${company.companyId}/destinations`, { url: receiver.url }),
      await api('PATCH', `/companies/${company.companyId}/destinations/${destinationId}`, { description: 'never' }),
      await api('DELETE', `/companies/${company.companyId}/destinations/${destinationId}`),
      await api('POST', '/keys', { name: 'never', role: 'viewer' }),
      await api('DELETE', `/keys/${keyId}`),
      await api('POST', '/notifications/replay', { companyId: company.companyId, status: 'processed' }),
      await api('PATCH', `/companies/${company.companyId}`, { name: 'never' }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([500, 500, 500, 500, 500, 500, 500]);
    expect(await rowCounts()).toEqual(before);
    expect((await s.skyhook.admin('GET', `/companies/${company.companyId}/destinations/${destinationId}`)).body).toMatchObject({ description: 'kept', active: true });
    expect((await s.skyhook.admin('GET', `/keys/${keyId}`)).body.state).toBe('active');
    expect((await s.skyhook.admin('GET', `/companies/${company.companyId}`)).body.name).not.toBe('never');
    expect((await s.sql.query("SELECT count(*) AS n FROM notifications WHERE company_id = $1 AND status = 'processed'", [company.companyId])).rows[0].n).toBe(replays);
  });

  it('a call to the marketplace: its `started` row comes first, so nothing is sent', async () => {
    const before = await rowCounts();
    const lastCall = () => JSON.stringify(s.sim.report().apiCalls.at(-1));
    const called = lastCall();
    const answers = await refusing('audit_log', 'INSERT', async () => [
      await api('POST', `/companies/${company.companyId}/webhooks`, { eventTypes: ['TripRequest'], authType: 'BASIC' }),
      await api('POST', `/companies/${company.companyId}/leads`, clientSearchLead(uid('never'))),
      await api('DELETE', `/companies/${company.companyId}`),
    ]);
    expect(answers.map((a) => a.status)).toEqual([500, 500, 500]);
    expect(await rowCounts()).toEqual(before);
    // Nothing reached the marketplace: its last call is the one it had before.
    expect(lastCall()).toBe(called);
  });
});
