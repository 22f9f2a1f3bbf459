/**
 * The marketplace connection as the real marketplace documents it (SPEC §14, issue 25), every path against
 * the simulator, which answers refusals in the real marketplace's `{title, code, path}` shape here and checks
 * the headers of each company's profile: credentials checked when set, the avinode profile on every call
 * (settings, fetches, leads, quotes), OAuth 2.0 client credentials (one token for many calls, one new token
 * after a 401, a pause when that does not help, renewal before expiry), and reconciliation after a sandbox
 * wipe. Real PostgreSQL and Redis; nothing in Skyhook is replaced.
 */
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type CompanyAccount, type Simulator } from '../../src/simulator/index.js';
import { clientSearchLead, tailQuote } from '../fixtures/requests.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';

let s: Scenario;
/** Everything the Skyhook under test logs, at trace level: no secret may appear in it. */
const logged: string[] = [];
/** Every secret these tests hand to Skyhook. */
const secrets: string[] = [];

beforeAll(async () => {
  s = await startScenario({
    env: { FETCH_MIN_INTERVAL_MS: '0' },
    sim: { errorShape: 'titled', tokenLifetimeS: 600 },
    log: pino({ level: 'trace' }, { write: (line: string) => void logged.push(line) }),
  });
});
afterAll(async () => s?.close());

const uniq = () => Math.random().toString(36).slice(2, 10);
const count = async (table: string) => Number((await s.sql.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
const company = async (id: string) => (await s.skyhook.admin('GET', `/companies/${id}`)).body;
const tokenRequestsOf = (simId: string, sim: Simulator = s.sim) => sim.report().tokens.filter((t) => t.companyId === simId);
const secret = (label: string) => {
  const value = `${label}-${uniq()}${uniq()}`;
  secrets.push(value);
  return value;
};

/** A company on the simulator and in Skyhook with the given profile; `oauth` gives it client credentials instead of a fixed bearer token. */
async function connected(opts: { profile: 'bearer' | 'avinode'; oauth?: boolean; apiVersion?: string; sim?: Simulator }) {
  const sim = opts.sim ?? s.sim;
  const simId = `${opts.profile}${opts.oauth ? '-oauth' : ''}-${uniq()}`;
  const apiToken = opts.profile === 'avinode' || !opts.oauth ? secret('api') : undefined;
  const authToken = opts.profile === 'avinode' && !opts.oauth ? secret('auth') : undefined;
  const oauth = opts.oauth ? { clientId: `client-${simId}`, clientSecret: secret('client-secret') } : undefined;
  const account: CompanyAccount = { id: simId, profile: opts.profile, token: apiToken, authToken, ...oauth };
  sim.addCompany(account);
  const connection =
    opts.profile === 'bearer' && !opts.oauth
      ? undefined
      : {
          profile: opts.profile,
          ...(opts.profile === 'avinode' ? { product: 'Acme Ops 2.1' } : {}),
          ...(opts.apiVersion ? { apiVersion: opts.apiVersion } : {}),
          ...(authToken ? { authToken } : {}),
          ...(oauth ? { tokenUrl: `${sim.apiBaseUrl}/oauth/token`, ...oauth } : {}),
        };
  const created = await s.skyhook.admin('POST', '/companies', { name: simId, apiBaseUrl: sim.apiBaseUrl, ...(apiToken ? { apiToken } : {}), ...(connection ? { connection } : {}) });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return { simId, account, connection, companyId: created.body.id as string, created: created.body };
}

async function webhook(companyId: string, body: Record<string, unknown> = {}) {
  const created = await s.skyhook.admin('POST', `/companies/${companyId}/webhooks`, { eventTypes: ['TripRequest', 'ClientLeads', 'TripRequestSellerResponse'], authType: 'BASIC', ...body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  return created.body;
}

/** Replays a notification and waits until it is processed. */
/** Waits until the company's notifications number `n` and none is pending; answers their rows. */
async function finished(companyId: string, n: number, timeoutMs = 20_000) {
  return eventually(async () => {
    const { rows } = await s.sql.query<{ id: string; status: string; last_error: string | null; resource_id: string }>(
      'SELECT id, status, last_error, resource_id FROM notifications WHERE company_id = $1 ORDER BY id',
      [companyId],
    );
    return rows.length >= n && rows.every((r) => r.status !== 'received' && r.status !== 'queued') ? rows : undefined;
  }, `${n} notifications of ${companyId} finished`, timeoutMs);
}

describe('checked credentials', () => {
  it('a new company says whether the marketplace accepted its credentials; replaced ones are checked again', async () => {
    const lists = () => s.sim.report().calls.settingsLists;
    const before = lists();
    const good = await connected({ profile: 'bearer' });
    expect(good.created.credentials).toEqual({ status: 'accepted', checkedAt: expect.any(String), error: null });
    expect(lists()).toBe(before + 1);

    const refused = await s.skyhook.admin('POST', '/companies', { name: 'Wrong token', apiBaseUrl: s.sim.apiBaseUrl, apiToken: secret('unknown') });
    expect(refused.status).toBe(201);
    expect(refused.body.credentials).toMatchObject({ status: 'refused', error: expect.stringMatching(/answered 401: missing or unknown API token \(unauthorized\)/) });

    const unreachable = await s.skyhook.admin('POST', '/companies', { name: 'Nobody home', apiBaseUrl: 'http://127.0.0.1:9/api', apiToken: secret('any') });
    expect(unreachable.body.credentials).toMatchObject({ status: 'unreachable', error: expect.stringContaining('ECONNREFUSED') });

    // The marketplace issues the token; the operator puts it in: accepted now.
    const issued = secret('issued');
    s.sim.addCompany({ id: `late-${uniq()}`, token: issued });
    const fixed = await s.skyhook.admin('PATCH', `/companies/${refused.body.id}`, { apiToken: issued });
    expect(fixed.body.credentials).toMatchObject({ status: 'accepted', error: null });
    const renamed = await s.skyhook.admin('PATCH', `/companies/${refused.body.id}`, { name: 'Right token' });
    expect(renamed.body.credentials).toEqual(fixed.body.credentials); // a rename checks nothing
  });

  it('a connection that cannot work is a 400 naming each field, and nothing is stored or called', async () => {
    const before = { companies: await count('companies'), lists: s.sim.report().calls.settingsLists };
    const base = { name: 'Bad', apiBaseUrl: s.sim.apiBaseUrl };
    const cases: [Record<string, unknown>, string[]][] = [
      [{ ...base, connection: { profile: 'avinode' } }, ['body.apiToken', 'body.connection.authToken']],
      [{ ...base, apiToken: 't', connection: { profile: 'bearer', authToken: 'x', apiVersion: 'v1' } }, ['body.connection.authToken', 'body.connection.apiVersion']],
      [{ ...base, connection: { profile: 'bearer', tokenUrl: `${s.sim.apiBaseUrl}/oauth/token`, clientId: 'c' } }, ['body.connection.clientSecret']],
      [{ ...base, apiToken: 't', connection: { profile: 'bearer', tokenUrl: `${s.sim.apiBaseUrl}/oauth/token`, clientId: 'c', clientSecret: 's' } }, ['body.apiToken']],
      [{ ...base, apiToken: 't', connection: { profile: 'avinode', authToken: 'a', tokenUrl: 'x', clientId: 'c', clientSecret: 's' } }, ['body.connection.authToken']],
      [{ ...base, connection: { profile: 'bearer', tokenUrl: 'ftp://auth.example/token', clientId: 'c', clientSecret: 's' } }, ['connection.tokenUrl']],
      [{ ...base, apiToken: 't', connection: { profile: 'oauth2' } }, ['body.connection.profile']],
      [{ ...base, apiToken: 't', connection: { profile: 'avinode', authToken: 'line\nbreak' } }, ['body.connection.authToken']],
      [{ ...base, apiToken: 't', connection: { profile: 'avinode', authToken: 'a', extra: 1 } }, ['body.connection']],
    ];
    for (const [body, fields] of cases) {
      const res = await s.skyhook.admin('POST', '/companies', body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      const named = res.body.errors.map((e: { field: string }) => e.field).join(' ');
      for (const field of fields) expect(named, JSON.stringify(body)).toContain(field);
    }
    const oauth = await connected({ profile: 'bearer', oauth: true });
    const patched = await s.skyhook.admin('PATCH', `/companies/${oauth.companyId}`, { apiToken: 'not-sent-anyway' });
    expect(patched.status).toBe(400);
    expect(patched.body.errors).toEqual([expect.objectContaining({ field: 'apiToken' })]);
    expect(await count('companies')).toBe(before.companies + 1);
    expect(s.sim.report().calls.settingsLists).toBe(before.lists + 1); // the one valid company's check
  });
});

describe('the avinode profile', () => {
  it('every call carries its headers (settings, fetches, leads, a quote acting as a user); secrets are never returned or stored in clear', async () => {
    const acme = await connected({ profile: 'avinode', apiVersion: 'v1.0' });
    expect(acme.created.connection).toEqual({ profile: 'avinode', product: 'Acme Ops 2.1', apiVersion: 'v1.0', tokenUrl: null, clientId: null, clientSecretExpiresAt: null, baseUrls: [], storedSecrets: ['apiToken', 'authToken'] });
    expect(acme.created.credentials.status).toBe('accepted');
    const shown = JSON.stringify([acme.created, await company(acme.companyId), (await s.skyhook.admin('GET', '/companies?limit=500')).body]);
    expect(shown).not.toContain(acme.account.token);
    expect(shown).not.toContain(acme.account.authToken);
    const row = (await s.sql.query('SELECT api_token_encrypted, auth_token_encrypted FROM companies WHERE id = $1', [acme.companyId])).rows[0];
    expect(row.api_token_encrypted).toMatch(/^v1\./);
    expect(row.auth_token_encrypted).toMatch(/^v1\./);
    expect(JSON.stringify(row)).not.toContain(acme.account.authToken);

    await webhook(acme.companyId);
    await s.sim.fire({ companyId: acme.simId, eventType: 'TripRequest', resourceId: `rfq-${acme.simId}` });
    const lead = await s.skyhook.admin('POST', `/companies/${acme.companyId}/leads`, clientSearchLead(`lead-${acme.simId}`));
    expect(lead.status).toBe(201);
    const quote = await s.skyhook.admin('POST', `/companies/${acme.companyId}/quotes`, { requestId: 'lift-avinode-1', actAsAccount: 'jane.pilot', submission: tailQuote(`quote-${acme.simId}`) });
    expect(quote.status, JSON.stringify(quote.body)).toBe(201);
    // The RFQ, and the lead and the quote the marketplace notified back: every one fetched and stored.
    const rows = await finished(acme.companyId, 3);
    expect(rows.map((r) => r.status)).toEqual(['processed', 'processed', 'processed']);

    const report = s.sim.report();
    expect(report.quotes.find((q) => q.companyId === acme.simId)?.actAsAccount).toBe('jane.pilot');
    const calls = report.apiCalls.filter((c) => c.companyId === acme.simId);
    // The check's list, the webhook, the lead, the quote, and the three resource GETs of the worker.
    expect(new Set(calls.map((c) => `${c.method} ${c.path.split('/')[2]}`))).toEqual(
      new Set(['GET webhooks', 'POST webhooks', 'POST leads', 'POST tripmsgs', 'GET rfqs', 'GET leads', 'GET tripmsgs']),
    );
    expect(calls.map((c) => [c.status, c.product, c.apiVersion])).toEqual(calls.map(() => [200, 'Acme Ops 2.1', 'v1.0']));
  });

  it("a refusal in the real marketplace's shape reaches the admin as a 502 with its codes and paths; a 200 with errors is refused too", async () => {
    const acme = await connected({ profile: 'avinode' });
    const wrong = await s.skyhook.admin('PATCH', `/companies/${acme.companyId}`, { apiToken: secret('wrong-api') });
    expect(wrong.body.credentials).toMatchObject({ status: 'refused', error: expect.stringContaining('(invalid_api_token)') });
    const refused = await s.skyhook.admin('POST', `/companies/${acme.companyId}/webhooks`, { eventTypes: ['TripRequest'], authType: 'BASIC' });
    expect(refused.status).toBe(502);
    expect(refused.body).toMatchObject({ code: 'marketplace_http', errors: [{ field: 'X-Avinode-ApiToken', code: 'invalid_api_token', message: 'missing or wrong X-Avinode-ApiToken' }] });
    expect(refused.body.detail).toContain('answered 401: X-Avinode-ApiToken: missing or wrong X-Avinode-ApiToken (invalid_api_token)');
  });
});

describe('OAuth 2.0 client credentials', () => {
  it('one token serves every call; after a revocation, concurrent fetches fetch one new token and nothing fails', async () => {
    const acme = await connected({ profile: 'bearer', oauth: true });
    expect(acme.created.connection).toMatchObject({ profile: 'bearer', tokenUrl: `${s.sim.apiBaseUrl}/oauth/token`, clientId: acme.account.clientId, storedSecrets: ['clientSecret'] });
    expect(acme.created.credentials.status).toBe('accepted');
    await webhook(acme.companyId);
    await s.sim.fire({ companyId: acme.simId, eventType: 'TripRequest' });
    await finished(acme.companyId, 1);
    expect(tokenRequestsOf(acme.simId)).toHaveLength(1);

    // A revoked token names no company any more: its refusals are counted by their path.
    const refusedGets = () => s.sim.report().apiCalls.filter((c) => c.status === 401 && c.path.startsWith('/api/rfqs/')).length;
    const before = refusedGets();
    s.sim.revokeTokens(acme.simId);
    await s.sim.fire({ companyId: acme.simId, eventType: 'TripRequest', count: 16 });
    const rows = await finished(acme.companyId, 17);
    expect(rows.every((r) => r.status === 'processed')).toBe(true);
    expect(tokenRequestsOf(acme.simId).map((t) => t.status)).toEqual([200, 200]);
    expect(refusedGets()).toBeGreaterThan(before);
    expect((await company(acme.companyId)).connectionStatus).toBe('ok');
  });

  it('avinode with client credentials: the token request and every call carry the profile headers', async () => {
    const acme = await connected({ profile: 'avinode', oauth: true });
    expect(acme.created.credentials.status).toBe('accepted');
    await webhook(acme.companyId);
    await s.sim.fire({ companyId: acme.simId, eventType: 'TripRequest' });
    expect((await finished(acme.companyId, 1)).map((r) => r.status)).toEqual(['processed']);
    expect(tokenRequestsOf(acme.simId).map((t) => t.status)).toEqual([200]);
  });

  it('a short-lived token is renewed before it expires, without a refused call', async () => {
    const short = await startSimulator({ tokenLifetimeS: 1 });
    try {
      const acme = await connected({ profile: 'bearer', oauth: true, sim: short });
      await new Promise((r) => setTimeout(r, 1_000));
      const reconciled = await s.skyhook.admin('POST', `/companies/${acme.companyId}/webhooks/reconcile`);
      expect(reconciled.status).toBe(200);
      expect(tokenRequestsOf(acme.simId, short).map((t) => t.status)).toEqual([200, 200]);
      expect(short.report().apiCalls.map((c) => c.status)).toEqual([200, 200]);
    } finally {
      await short.stop();
    }
  });

  it('a 401 that a new token does not cure pauses the company after one refresh; a replaced connection resumes it', async () => {
    const acme = await connected({ profile: 'bearer', oauth: true });
    await webhook(acme.companyId);
    const href = `${s.sim.apiBaseUrl}/rfqs/rfq-${acme.simId}`;
    s.sim.programResource({ href, responses: [{ status: 401 }, { status: 401 }] });
    await s.sim.fire({ companyId: acme.simId, eventType: 'TripRequest', resourceId: `rfq-${acme.simId}` });
    const paused = await eventually(async () => {
      const c = await company(acme.companyId);
      return c.state.status === 'paused' ? c : undefined;
    }, 'company paused');
    expect(paused.state.reason).toContain('the OAuth access token was refused, a newly fetched one too');
    expect(s.fetchesOf(href).map((f) => f.status)).toEqual([401, 401]);
    expect(tokenRequestsOf(acme.simId)).toHaveLength(2); // the check's, and the one refresh
    // F4: the notification waits for new credentials; it is not failed.
    expect((await s.sql.query('SELECT status FROM notifications WHERE company_id = $1', [acme.companyId])).rows).toEqual([{ status: 'queued' }]);

    const resumed = await s.skyhook.admin('PATCH', `/companies/${acme.companyId}`, { connection: acme.connection });
    expect(resumed.body).toMatchObject({ state: { status: 'ok' }, credentials: { status: 'accepted' } });
    const [done] = await finished(acme.companyId, 1);
    expect(done!.status).toBe('processed');
  });

  it('client credentials the token endpoint refuses pause the company, naming invalid_client; the right ones resume it', async () => {
    const acme = await connected({ profile: 'bearer', oauth: true });
    await webhook(acme.companyId);
    // The marketplace rotates the client secret (and with it the tokens issued): Skyhook still has the old one.
    const rotated = secret('rotated');
    s.sim.addCompany({ ...acme.account, clientSecret: rotated });
    s.sim.revokeTokens(acme.simId);
    await s.sim.fire({ companyId: acme.simId, eventType: 'TripRequest' });
    const paused = await eventually(async () => {
      const c = await company(acme.companyId);
      return c.state.status === 'paused' ? c : undefined;
    }, 'company paused');
    expect(paused).toMatchObject({ state: { reason: expect.stringContaining('invalid_client') }, connectionStatus: 'unauthorized' });
    expect(s.sim.report().calls.tokens).toBeGreaterThan(0);
    const [waiting] = (await s.sql.query('SELECT status, last_error FROM notifications WHERE company_id = $1', [acme.companyId])).rows;
    expect(waiting).toMatchObject({ status: 'queued', last_error: expect.stringContaining('invalid_client') });

    const replaced = await s.skyhook.admin('PATCH', `/companies/${acme.companyId}`, { connection: { ...acme.connection, clientSecret: rotated } });
    expect(replaced.body).toMatchObject({ state: { status: 'ok' }, credentials: { status: 'accepted', error: null } });
    const [done] = await finished(acme.companyId, 1);
    expect(done!.status).toBe('processed');
  });

  it('a token endpoint that is down: the check says unreachable, fetches wait and retry, nothing is paused', async () => {
    const acme = await connected({ profile: 'bearer', oauth: true });
    await webhook(acme.companyId);
    s.sim.setFaults({ tokenEndpointDown: true });
    try {
      const checked = await s.skyhook.admin('PATCH', `/companies/${acme.companyId}`, { connection: acme.connection });
      expect(checked.body.credentials).toMatchObject({ status: 'unreachable', error: expect.stringContaining('answered 503') });
      await s.sim.fire({ companyId: acme.simId, eventType: 'TripRequest' });
      await eventually(async () => {
        const { rows } = await s.sql.query("SELECT count(*)::int AS n FROM fetch_attempts WHERE company_id = $1 AND outcome = 'retry' AND error LIKE '%token request%503%'", [acme.companyId]);
        return rows[0].n >= 2 ? true : undefined;
      }, 'fetches retried while the token endpoint is down');
    } finally {
      s.sim.setFaults({ tokenEndpointDown: false });
    }
    expect((await finished(acme.companyId, 1)).map((r) => r.status)).toEqual(['processed']);
    expect((await company(acme.companyId)).connectionStatus).toBe('ok');
  });
});

describe('reconciliation', () => {
  it('after a sandbox wipe the report shows what the marketplace lost; apply re-creates it under the same targetURIs, and notifications flow again', async () => {
    const acme = await connected({ profile: 'avinode' });
    const basic = await webhook(acme.companyId);
    const oauth = await webhook(acme.companyId, { authType: 'OAUTH', sharedTarget: true });
    const inactive = await webhook(acme.companyId);
    expect((await s.skyhook.admin('PATCH', `/companies/${acme.companyId}/webhooks/${inactive.id}`, { active: false })).status).toBe(200);
    expect(s.sim.resetCompany(acme.simId)).toEqual({ forgotten: 3 });

    const report = await s.skyhook.admin('POST', `/companies/${acme.companyId}/webhooks/reconcile`);
    expect(report.body).toMatchObject({ companyId: acme.companyId, applied: false, inSync: 0, remoteSettings: 0 });
    expect(report.body.drift.map((d: { kind: string; webhookId: string; action: string }) => [d.kind, d.webhookId, d.action])).toEqual([
      ['missing_remotely', basic.id, 'none'],
      ['missing_remotely', oauth.id, 'none'],
      ['missing_remotely', inactive.id, 'none'],
    ]);

    const applied = await s.skyhook.admin('POST', `/companies/${acme.companyId}/webhooks/reconcile`, { apply: true });
    expect(applied.body.drift.map((d: { action: string; error: string | null }) => [d.action, d.error])).toEqual([
      ['recreated', null],
      ['recreated', null],
      ['recreated', null],
    ]);
    const local = (await s.skyhook.admin('GET', `/companies/${acme.companyId}/webhooks`)).body.items;
    expect(local.map((w: { id: string; remoteId: string; targetURI: string; clientIdentifier: string }) => [w.id, w.remoteId, w.targetURI, w.clientIdentifier])).toEqual(
      [basic, oauth, inactive].map((w, i) => [w.id, applied.body.drift[i].newRemoteId, w.targetURI, w.clientIdentifier]),
    );

    const fired = await s.sim.fire({ companyId: acme.simId, eventType: 'TripRequest' });
    expect(fired[0]!.webhookIds).toHaveLength(2); // the inactive one is inactive on the marketplace again
    const rows = await finished(acme.companyId, 2);
    expect(rows.map((r) => r.status)).toEqual(['processed', 'processed']); // the new BASIC secret and the kept OAUTH one both accepted
    const again = await s.skyhook.admin('POST', `/companies/${acme.companyId}/webhooks/reconcile`);
    expect(again.body).toMatchObject({ inSync: 3, remoteSettings: 3, drift: [] });
  });

  it('reports differences and unknown settings without touching them, and takes over an id that moved', async () => {
    const acme = await connected({ profile: 'bearer' });
    const own = await webhook(acme.companyId, { eventTypes: ['TripRequest'] });
    const marketplace = (method: string, path: string, body?: unknown) =>
      fetch(`${s.sim.apiBaseUrl}${path}`, { method, headers: { authorization: `Bearer ${acme.account.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(async (r) => (await r.json()) as { data: { id: string } });
    const setting = (clientIdentifier: string, eventTypes: string[]) => ({
      targetURI: own.targetURI,
      displayName: own.displayName,
      active: true,
      clientIdentifier,
      clientSecret: 'a-client-secret-of-32-characters',
      clientAuthenticationType: 'BASIC',
      eventTypes,
    });
    // Someone changes Skyhook's setting on the marketplace, and adds one of their own.
    await marketplace('PUT', `/webhooks/settings/${own.remoteId}`, setting(own.clientIdentifier, ['TripRequest', 'EmptyLegs']));
    const foreign = await marketplace('POST', '/webhooks/settings', setting(`theirs-${uniq()}`, ['ClientLeads']));

    const report = await s.skyhook.admin('POST', `/companies/${acme.companyId}/webhooks/reconcile?apply=true`);
    expect(report.body).toMatchObject({ applied: true, inSync: 0, remoteSettings: 2 });
    expect(report.body.drift).toEqual([
      expect.objectContaining({ kind: 'differs', webhookId: own.id, action: 'none', differences: [{ field: 'eventTypes', local: ['TripRequest'], remote: ['EmptyLegs', 'TripRequest'] }] }),
      expect.objectContaining({ kind: 'unknown_remotely', webhookId: null, remoteId: foreign.data.id, action: 'none' }),
    ]);

    // A wipe, and the setting re-created by someone else under its clientIdentifier: Skyhook takes the new id.
    s.sim.resetCompany(acme.simId);
    const moved = await marketplace('POST', '/webhooks/settings', setting(own.clientIdentifier, ['TripRequest']));
    const taken = await s.skyhook.admin('POST', `/companies/${acme.companyId}/webhooks/reconcile`, { apply: true });
    expect(taken.body.drift).toEqual([expect.objectContaining({ kind: 'remote_id_changed', remoteId: own.remoteId, newRemoteId: moved.data.id, action: 'remote_id_updated' })]);
    expect((await s.skyhook.admin('GET', `/companies/${acme.companyId}/webhooks/${own.id}`)).body.remoteId).toBe(moved.data.id);

    // Another wipe, and another tenant of the sandbox takes the clientIdentifier first: the marketplace's
    // refusal is a 200 with errors (a soft error); its code and path reach the admin on the drift entry.
    s.sim.resetCompany(acme.simId);
    const other = await connected({ profile: 'bearer' });
    await fetch(`${s.sim.apiBaseUrl}/webhooks/settings`, {
      method: 'POST',
      headers: { authorization: `Bearer ${other.account.token}`, 'content-type': 'application/json' },
      body: JSON.stringify(setting(own.clientIdentifier, ['TripRequest'])),
    });
    const clash = await s.skyhook.admin('POST', `/companies/${acme.companyId}/webhooks/reconcile`, { apply: true });
    expect(clash.body.drift).toEqual([
      expect.objectContaining({ kind: 'missing_remotely', action: 'failed', newRemoteId: null, error: expect.stringContaining('clientIdentifier: clientIdentifier is already used by a webhook setting (duplicate)') }),
    ]);
  });

  it("a list the marketplace refuses is a 502 with its code; bad input a 400 naming the field; an unknown company a 404", async () => {
    const refused = await s.skyhook.admin('POST', '/companies', { name: 'Refused', apiBaseUrl: s.sim.apiBaseUrl, apiToken: secret('nobody') });
    const res = await s.skyhook.admin('POST', `/companies/${refused.body.id}/webhooks/reconcile`);
    expect(res.status).toBe(502);
    expect(res.body).toMatchObject({ code: 'marketplace_http', errors: [{ code: 'unauthorized' }] });
    const bad = await s.skyhook.admin('POST', `/companies/${refused.body.id}/webhooks/reconcile`, { apply: 'yes' });
    expect(bad.status).toBe(400);
    expect(bad.body.errors.map((e: { field: string }) => e.field)).toContain('body.apply');
    expect((await s.skyhook.admin('POST', '/companies/00000000-0000-4000-8000-000000000000/webhooks/reconcile')).status).toBe(404);
  });
});

describe('secrets', () => {
  it('no secret handed to Skyhook in this file appeared in its logs', () => {
    expect(logged.length).toBeGreaterThan(0);
    const text = logged.join('');
    expect(secrets.filter((value) => text.includes(value))).toEqual([]);
  });
});
