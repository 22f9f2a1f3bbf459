/**
 * The admin CLI, run as an operator runs it: `node bin/skyhook.js <args>` as a child process, against a
 * test database and a real simulator as the marketplace. Asserts stdout, stderr and exit codes: 0 done,
 * 2 a usage error naming each bad flag or field, 1 a Problem from a service with its detail.
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { deleteKeysWithPrefix } from '../../src/lib/redis/keys.js';
import { startSimulator, type Simulator } from '../../src/simulator/index.js';
import { auditWalk, runSkyhook, type Run } from '../helpers/cli.js';
import { createTestDatabase, REDIS_URL, testQueuePrefix, type TestDatabase } from '../helpers/database.js';

const BIN = new URL('../../bin/skyhook.js', import.meta.url).pathname;
const TOKEN = `tok-cli-${randomUUID()}`;
/** An avinode company's API token and auth token (SPEC §14). */
const ZETA = { api: `zeta-api-${randomUUID()}`, auth: `zeta-auth-${randomUUID()}` };

let db: TestDatabase;
let sim: Simulator;
let dir: string;
let env: NodeJS.ProcessEnv;
const prefix = testQueuePrefix();

/** One `skyhook` invocation; `stdin` is written to the child's standard input. */
const skyhook = (args: string[], stdin?: string) => runSkyhook(env, args, stdin);

/** One invocation with some variables of its environment changed. */
const skyhookWith = (changes: Record<string, string>, args: string[]): Promise<Run> => runSkyhook({ ...env, ...changes }, args);

/** stdout of a successful --json run, parsed. */
async function json(args: string[], stdin?: string): Promise<Record<string, unknown> & { id: string }> {
  const run = await skyhook([...args, '--json'], stdin);
  expect(run, run.stderr).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout) as Record<string, unknown> & { id: string };
}

/** The webhook settings the simulator holds for the company (no in-process list method: its API). */
async function simulatorSettings(): Promise<{ id: string; active: boolean; eventTypes: string[] }[]> {
  const response = await fetch(`${sim.apiBaseUrl}/webhooks/settings`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: { id: string; active: boolean; eventTypes: string[] }[] }).data;
}

beforeAll(async () => {
  db = await createTestDatabase();
  sim = await startSimulator({ timeScale: 0.001 });
  sim.addCompany({ id: 'acme', name: 'Acme Jets', token: TOKEN });
  sim.addCompany({ id: 'zeta', name: 'Zeta Air', profile: 'avinode', token: ZETA.api, authToken: ZETA.auth });
  dir = await mkdtemp(join(tmpdir(), 'skyhook-cli-'));
  env = {
    ...process.env,
    DATABASE_URL: db.url,
    REDIS_URL,
    QUEUE_PREFIX: prefix,
    ADMIN_TOKEN: 'cli-test-admin-token-0123456789',
    // Nothing listens here: the webhooks are only registered, never delivered to.
    PUBLIC_BASE_URL: 'http://127.0.0.1:9',
    LOG_LEVEL: 'silent',
  };
});

afterAll(async () => {
  await sim?.stop();
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
  // The replay queued a job under this file's prefix; nothing consumes it.
  await deleteKeysWithPrefix(REDIS_URL, prefix);
});

const lead = {
  clientIdentifier: 'cli-lead-1',
  inquiryLift: [{ aircraftType: 'Light jet', priceExpectation: 0 }],
  leadContactInfo: { name: 'Ann Example', emailAddresses: [{ type: 'Work', emailAddress: 'ann@example.com' }], phoneNumbers: [{ type: 'Work', phoneNumber: '+14155550100' }] },
  leadCurrency: 'USD',
};

/** A floating-fleet quote (a category, no tail); the total is the sum of the line items. */
const quoteRequest = {
  requestId: 'lift-req-1',
  actAsAccount: 'ops.user',
  submission: {
    message: 'Happy to fly you',
    quote: {
      segments: [
        {
          startAirport: { icao: 'KTEB' },
          endAirport: { icao: 'KPBI' },
          dateTime: { date: '2030-01-15', time: '09:30', departure: true, local: true },
          paxCount: '4',
          flightMinutes: 150,
        },
      ],
      lift: { aircraftCategory: 'Midsize jet' },
      currencyCode: 'USD',
      sellerUniqueQuoteIdentifier: 'cli-quote-1',
      totalPrice: 1500.5,
      lineItems: [
        { type: 'FLT', price: 1000, formattedUnitPrice: '1000', formattedQuantity: '1' },
        { price: 500.5, formattedUnitPrice: '500.50', formattedQuantity: '1' },
      ],
    },
  },
};

// Each spawn costs about a second (tsx), several when the machine is busy.
describe('skyhook admin CLI', { timeout: 60_000 }, () => {
  let companyId: string;
  let webhookId: string;

  it('creates, lists, shows and updates a company, never printing its token', async () => {
    const created = await json(['companies', 'create', '--name', 'Acme Jets', '--api-base-url', sim.apiBaseUrl, '--api-token', TOKEN]);
    expect(created).toMatchObject({ name: 'Acme Jets', apiBaseUrl: sim.apiBaseUrl, connectionStatus: 'ok' });
    expect(Object.keys(created).sort()).toEqual(['apiBaseUrl', 'connection', 'connectionError', 'connectionLastUsedAt', 'connectionStatus', 'connectionWarnings', 'createdAt', 'credentials', 'fetches', 'id', 'name', 'state', 'updatedAt']);
    expect(created).toMatchObject({ connection: { profile: 'bearer', storedSecrets: ['apiToken'] }, credentials: { status: 'accepted', error: null } });
    companyId = created.id;

    const [listed, shown] = await Promise.all([skyhook(['companies', 'list']), skyhook(['companies', 'get', companyId])]);
    // The token on stdin: the same one, so the simulator keeps accepting it.
    const updated = await skyhook(['companies', 'update', companyId, '--name', 'Acme Jets Ltd', '--api-token', '-', '--json'], `${TOKEN}\n`);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^ID\s+NAME\s+STATE\s+FETCHES\s+PARKED\s+API BASE URL\s+PROFILE\s+CREATED\s+WARNINGS\n/);
    expect(listed.stdout).toMatch(/ ok \s+0\/256 \s+0 /);
    expect(listed.stdout).toContain(companyId);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^id:\\s+${companyId}$`, 'm'));
    expect(shown.stdout).toMatch(/^name:\s+Acme Jets$/m);
    expect(updated.code).toBe(0);
    expect(JSON.parse(updated.stdout)).toMatchObject({ id: companyId, name: 'Acme Jets Ltd', connectionStatus: 'ok' });
    for (const run of [listed, shown, updated]) {
      expect(run.stderr).toBe('');
      expect(run.stdout).not.toContain(TOKEN);
    }
  });

  it('exits 2 on bad flags, one line naming each bad flag, before touching anything', async () => {
    const [noName, badWebhook, badFilters, unknownOption] = await Promise.all([
      skyhook(['companies', 'create', '--api-base-url', sim.apiBaseUrl, '--api-token', TOKEN]),
      skyhook(['webhooks', 'create', companyId, '--auth-type', 'DIGEST', '--event-types', 'TripRequest,NoSuchEvent']),
      skyhook(['notifications', 'list', '--status', 'lost', '--limit', '0', '--company-id', 'acme']),
      skyhook(['companies', 'list', '--colour']),
    ]);
    expect(noName).toMatchObject({ code: 2, stdout: '' });
    expect(noName.stderr.trim()).toBe('skyhook: --name is required');
    expect(badWebhook).toMatchObject({ code: 2, stdout: '' });
    expect(badWebhook.stderr).toMatch(/^skyhook: --auth-type must be one of BASIC, OAUTH \(got "DIGEST"\)$/m);
    expect(badWebhook.stderr).toMatch(/^skyhook: --event-types must be one of ClientLeads, .* \(got "NoSuchEvent"\)$/m);
    expect(badWebhook.stderr.trim().split('\n')).toHaveLength(2);
    expect(badFilters.code).toBe(2);
    expect(badFilters.stderr).toMatch(/^skyhook: --status must be one of received, .*\(got "lost"\)$/m);
    expect(badFilters.stderr).toMatch(/^skyhook: --limit must be 1 or more/m);
    expect(badFilters.stderr).toMatch(/^skyhook: --company-id must be a UUID/m);
    expect(unknownOption.code).toBe(2);
    expect(unknownOption.stderr).toMatch(/^skyhook: unknown option '--colour'/m);
    // Nothing was registered on the marketplace.
    expect(await simulatorSettings()).toEqual([]);
  });

  it('makes a company key, printed once, lists keys without it, revokes it; a bad role is named', async () => {
    const made = await skyhook(['keys', 'create', '--name', 'Acme CRM', '--role', 'company', '--company-id', companyId]);
    expect(made, made.stderr).toMatchObject({ code: 0, stderr: '' });
    const key = /^ {2}(skh_\S+)$/m.exec(made.stdout)?.[1];
    expect(key).toMatch(/^skh_[0-9A-Za-z]{46}$/);
    const id = /^created key ([0-9a-f-]{36})/.exec(made.stdout)?.[1];
    const listed = await skyhook(['keys', 'list']);
    expect(listed.stdout).toMatch(/^ID\s+NAME\s+ROLE\s+COMPANY\s+STATE\s+LAST USED\s+HINT\n/);
    expect(listed.stdout).toMatch(new RegExp(`${id}\\s+Acme CRM\\s+company\\s+${companyId}\\s+active`));
    expect(listed.stdout).not.toContain(key);
    expect((await json(['keys', 'revoke', id!])).state).toBe('revoked');
    const bad = await skyhook(['keys', 'create', '--name', 'x', '--role', 'root']);
    expect(bad).toMatchObject({ code: 2, stdout: '' });
    expect(bad.stderr).toMatch(/^skyhook: --role must be one of admin, operator, viewer, company \(got "root"\)$/m);
    const unbound = await skyhook(['keys', 'create', '--name', 'x', '--role', 'company']);
    expect(unbound.code).toBe(1);
    expect(unbound.stderr).toMatch(/--company-id/);
    // Each change is in the audit log, as the local user's; the bad flags changed nothing and are not.
    const audit = (await json(['audit', 'list', '--action', 'skyhook keys'])) as unknown as { items: { actor: { kind: string; name: string }; action: string; outcome: string; fields: string[]; targets: Record<string, string> }[] };
    expect(audit.items.map((e) => [e.action, e.outcome])).toEqual([
      ['skyhook keys create', 'refused'],
      ['skyhook keys revoke', 'ok'],
      ['skyhook keys create', 'ok'],
    ]);
    expect(audit.items[1]).toMatchObject({ actor: { kind: 'local', name: `cli:${userInfo().username}` }, targets: { keyId: id } });
    expect(audit.items[2]!.fields).toEqual(['name', 'role', 'companyId']);
  });

  it('exits 1 with the detail of a Problem: an unknown company is a 404', async () => {
    const unknown = randomUUID();
    const run = await skyhook(['webhooks', 'list', unknown]);
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr.trim()).toBe(`skyhook: Company ${unknown} was not found (404 Not Found)`);
  });

  it('creates a webhook, active on the marketplace, lists it, and deactivates it', async () => {
    const created = await json(['webhooks', 'create', companyId, '--event-types', 'TripRequest,ClientLeads', '--auth-type', 'BASIC', '--display-name', 'CLI hook']);
    expect(created).toMatchObject({ companyId, authType: 'BASIC', active: true, eventTypes: ['TripRequest', 'ClientLeads'], displayName: 'CLI hook' });
    expect(created.targetURI).toMatch(/^http:\/\/127\.0\.0\.1:9\/hooks\/.+/);
    expect(created).not.toHaveProperty('clientSecret');
    webhookId = created.id;
    expect(await simulatorSettings()).toEqual([expect.objectContaining({ id: created.remoteId, active: true, eventTypes: ['TripRequest', 'ClientLeads'] })]);

    const listed = await skyhook(['webhooks', 'list', companyId]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`^${webhookId}\\s+BASIC\\s+yes\\s+TripRequest,ClientLeads\\s+http://127\\.0\\.0\\.1:9/hooks/`, 'm'));

    const updated = await json(['webhooks', 'update', companyId, webhookId, '--active', 'false']);
    expect(updated).toMatchObject({ id: webhookId, active: false });
    expect(await simulatorSettings()).toEqual([expect.objectContaining({ id: created.remoteId, active: false })]);
  });

  it('creates a lead from a file, says so again without sending twice, and refuses a bad lead naming its fields', async () => {
    const file = join(dir, 'lead.json');
    await writeFile(file, JSON.stringify(lead));
    const created = await skyhook(['leads', 'create', companyId, '--file', file]);
    expect(created, created.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(created.stdout).toMatch(/^created lead \S+ \(clientIdentifier cli-lead-1, marketplace id \S+\)$/m);

    const again = await json(['leads', 'create', companyId, '--file', file]);
    expect(again).toMatchObject({ clientIdentifier: 'cli-lead-1', kind: 'client_search', status: 'created' });
    expect(created.stdout).toContain(again.id);
    expect(sim.report().leads).toHaveLength(1);

    // An empty leg lead without emptyLegId or searchId, a bad e-mail, and a field the schema does not know.
    const bad = join(dir, 'bad-lead.json');
    await writeFile(
      bad,
      JSON.stringify({
        clientIdentifier: 'cli-lead-2',
        inquiryLift: [{ priceExpectation: 10 }, { emptyLegId: 'el-1' }],
        leadContactInfo: { emailAddresses: [{ type: 'Work', emailAddress: 'not-an-address' }] },
        colour: 'blue',
      }),
    );
    const refused = await skyhook(['leads', 'create', companyId, '--file', bad]);
    expect(refused).toMatchObject({ code: 2, stdout: '' });
    const lines = refused.stderr.trim().split('\n');
    expect(lines).toContain('skyhook: inquiryLift.0.emptyLegId is required for an empty leg lead');
    expect(lines).toContain('skyhook: searchId is required for an empty leg lead');
    expect(lines).toContain('skyhook: leadContactInfo.emailAddresses.0.emailAddress must be an e-mail address');
    expect(lines).toContain('skyhook: colour is not a known field');
    expect(sim.report().calls.leads).toBe(1);
  });

  it('submits a floating-fleet quote from stdin, finds it by lift id, and refuses a total that is not the sum (exit 1)', async () => {
    const submitted = await json(['quotes', 'submit', companyId, '--file', '-'], JSON.stringify(quoteRequest));
    expect(submitted).toMatchObject({ companyId, requestId: 'lift-req-1', actAsAccount: 'ops.user', sellerUniqueQuoteIdentifier: 'cli-quote-1', status: 'created' });
    expect(submitted.liftId).toEqual(expect.any(String));
    expect(submitted.tripMessageId).toEqual(expect.any(String));
    expect(submitted.sellerQuoteId).toEqual(expect.any(String));

    const mismatch = structuredClone(quoteRequest);
    mismatch.submission.quote.sellerUniqueQuoteIdentifier = 'cli-quote-2';
    mismatch.submission.quote.totalPrice = 1600;
    const [found, refused] = await Promise.all([
      json(['quotes', 'list', companyId, '--lift-id', String(submitted.liftId)]),
      skyhook(['quotes', 'submit', companyId, '--file', '-'], JSON.stringify(mismatch)),
    ]);
    expect(found).toEqual({ items: [submitted], nextCursor: null });
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(/^skyhook: totalPrice 1600 is not the sum .*\(400 Bad Request\)$/m);
    expect(refused.stderr).toMatch(/^ {2}submission\.quote\.totalPrice: must equal the sum of lineItems\[\]\.price \(1500\.5\)$/m);
    expect(sim.report().quotes).toHaveLength(1);
  });

  it('refuses to resubmit a quote whose outcome is unknown (exit 1), lists it, and resends it with --resend-unknown', async () => {
    const held = structuredClone(quoteRequest);
    held.submission.quote.sellerUniqueQuoteIdentifier = 'cli-quote-held';
    // As a submission that timed out would have left it.
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    try {
      await sql.query(
        `INSERT INTO quotes (company_id, seller_unique_quote_identifier, request_id, act_as_account, submission, status, error)
         VALUES ($1, 'cli-quote-held', 'lift-req-1', 'ops.user', $2, 'unknown', 'POST /tripmsgs/lift-req-1/submitQuote timed out after 15000 ms')`,
        [companyId, JSON.stringify(held.submission)],
      );
    } finally {
      await sql.end();
    }
    const submitted = sim.report().quotes.length;
    const refused = await skyhook(['quotes', 'submit', companyId, '--file', '-'], JSON.stringify(held));
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(/may have received quote cli-quote-held\b.*timed out after 15000 ms.*\(409 Conflict\)$/m);
    const listed = await json(['quotes', 'list', companyId, '--status', 'unknown']);
    expect(listed.items).toEqual([expect.objectContaining({ sellerUniqueQuoteIdentifier: 'cli-quote-held', status: 'unknown', error: expect.stringContaining('timed out') })]);
    expect(sim.report().quotes).toHaveLength(submitted);

    const resent = await json(['quotes', 'submit', companyId, '--file', '-', '--resend-unknown'], JSON.stringify(held));
    expect(resent).toMatchObject({ sellerUniqueQuoteIdentifier: 'cli-quote-held', status: 'created', error: null, liftId: expect.any(String) });
    expect(sim.report().quotes).toHaveLength(submitted + 1);
  });

  it('declines a lift from examples/decline.json, lists it, answers a repeat with the stored decline, and names a bad reason (exit 2)', async () => {
    const example = new URL('../../examples/decline.json', import.meta.url).pathname;
    const created = await skyhook(['declines', 'create', companyId, '--file', example]);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^declined lift-123 \(AIRCRAFT_NOT_AVAILABLE\) as [0-9a-f-]{36}, sent to the assumed path http:\/\/.*\/tripmsgs\/lift-123\/decline$/m);
    const repeat = await skyhook(['declines', 'create', companyId, '--file', example]);
    expect(repeat.stdout).toMatch(/^lift-123 was already declined \(AIRCRAFT_NOT_AVAILABLE\) as .*; nothing was sent$/m);
    expect(sim.report().declines.filter((d) => d.requestId === 'lift-123')).toHaveLength(1);

    const listed = await json(['declines', 'list', companyId, '--request-id', 'lift-123']);
    expect(listed.items).toEqual([expect.objectContaining({ requestId: 'lift-123', actAsAccount: 'dispatcher@operator.example', status: 'created', target: 'assumed_path' })]);

    const calls = sim.report().calls.declines;
    const refused = await skyhook(['declines', 'create', companyId, '--file', '-'], JSON.stringify({ requestId: 'lift-124', decline: { declineReason: 'TOO_FAR' } }));
    expect(refused).toMatchObject({ code: 2, stdout: '' });
    expect(refused.stderr).toMatch(/^skyhook: decline\.declineReason must be one of AIRCRAFT_NOT_AVAILABLE, .*OTHER$/m);
    expect(sim.report().calls.declines).toBe(calls);
  });

  it('lists, shows and replays notifications', async () => {
    // A failed notification, as the receiver and a worker would have left it.
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    let id: string;
    try {
      const { rows } = await sql.query<{ id: string }>(
        `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, attempts, last_error, finished_at)
         VALUES ($1, $2, 'rfq-1', 'rfqs', $3, $4, 'basic', 'failed', 12, 'HTTP 503 from the marketplace', now()) RETURNING id`,
        [companyId, webhookId, `${sim.apiBaseUrl}/rfqs/rfq-1`, JSON.stringify({ id: 'rfq-1', type: 'rfqs', href: `${sim.apiBaseUrl}/rfqs/rfq-1` })],
      );
      id = String(rows[0]!.id);
    } finally {
      await sql.end();
    }

    const [listed, shown, table] = await Promise.all([
      json(['notifications', 'list', '--company-id', companyId, '--status', 'failed']),
      skyhook(['notifications', 'get', id]),
      skyhook(['notifications', 'list', '--company-id', companyId, '--resource-id', 'rfq-1']),
    ]);
    expect(Object.keys(listed).sort()).toEqual(['items', 'nextCursor']);
    expect(listed).toMatchObject({ items: [{ id, companyId, webhookId, type: 'rfqs', status: 'failed', attempts: 12 }], nextCursor: null });
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/^status:\s+failed$/m);
    expect(shown.stdout).toMatch(/^lastError:\s+HTTP 503 from the marketplace$/m);
    // The company by its name beside its id; the timeline as a table.
    expect(shown.stdout).toMatch(new RegExp(`^companyId:\\s+Acme Jets Ltd \\(${companyId}\\)$`, 'm'));
    expect(shown.stdout).toMatch(/^timeline:\nAT\s+WHAT\s+DETAIL\n\S+ \S+Z\s+received\n/m);
    expect(table.stdout).toContain(`Acme Jets Ltd (${companyId})`);

    // Another failed one, replayed alone (its resource is gone on the marketplace: it ends processed, not failed).
    const other = new pg.Client({ connectionString: db.url });
    await other.connect();
    const alone = await other
      .query<{ id: string }>(
        `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, attempts, last_error, finished_at)
         VALUES ($1, $2, 'rfq-2', 'rfqs', $3, '{}', 'basic', 'failed', 3, 'HTTP 503 from the marketplace', now()) RETURNING id`,
        [companyId, webhookId, `${sim.apiBaseUrl}/rfqs/rfq-2`],
      )
      .finally(() => other.end());
    expect(await json(['notifications', 'replay', String(alone.rows[0]!.id)])).toMatchObject({ id: String(alone.rows[0]!.id), note: null });

    const dry = await json(['notifications', 'replay-all', '--company-id', companyId, '--resource-id', 'rfq-1', '--dry-run']);
    expect(dry).toEqual({ matched: 1, replayed: 0 });
    const replayed = await json(['notifications', 'replay-all', '--company-id', companyId]);
    expect(replayed).toEqual({ matched: 1, replayed: 1 });
    const after = await skyhook(['notifications', 'get', id]);
    expect(after.stdout).toMatch(/\s+failed\s+HTTP 503 from the marketplace\n.*\s+replayed\s*\n/s);

    const badFilter = await skyhook(['notifications', 'list', '--received-after', 'yesterday', '--webhook-id', 'w1']);
    expect(badFilter).toMatchObject({ code: 2, stdout: '' });
    expect(badFilter.stderr).toMatch(/^skyhook: --received-after must be an ISO date-time \(got "yesterday"\)$/m);
    expect(badFilter.stderr).toMatch(/^skyhook: --webhook-id must be a UUID \(got "w1"\)$/m);
  });

  it('shows the reason of an error in the LAST ERROR column, not the attempt count ahead of it', async () => {
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    try {
      await sql.query(
        `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status, attempts, last_error)
         VALUES ($1, $2, 'rfq-reason', 'rfqs', $3, '{}', 'basic', 'failed', 14, 'gave up after 14 attempts: marketplace answered 502')`,
        [companyId, webhookId, `${sim.apiBaseUrl}/rfqs/rfq-reason`],
      );
    } finally {
      await sql.end();
    }
    const table = await skyhook(['notifications', 'list', '--resource-id', 'rfq-reason']);
    expect(table.stdout).toMatch(/LAST ERROR\n.*marketplace answered 502 \(gave up after 14 attempts\)$/m);
  });

  it('tails status changes live, as JSON lines', async () => {
    const child = spawn(process.execPath, [BIN, 'notifications', 'tail', '--company-id', companyId, '--json'], { env });
    const lines: string[] = [];
    let buffered = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      buffered += chunk;
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      lines.push(...parts);
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    try {
      // The tail listens once it has connected; a replay then moves the notification to received and queued.
      await new Promise((r) => setTimeout(r, 3000));
      const replay = await json(['notifications', 'replay-all', '--company-id', companyId, '--resource-id', 'rfq-reason', '--status', 'failed']);
      expect(replay.replayed).toBeGreaterThan(0);
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && !lines.some((l) => l.includes('"status":"queued"'))) await new Promise((r) => setTimeout(r, 100));
      const events = lines.map((l) => JSON.parse(l) as { companyId: string; status: string; type: string });
      expect(events.map((e) => e.status)).toContain('received');
      expect(events.map((e) => e.status)).toContain('queued');
      expect(events.every((e) => e.companyId === companyId && e.type === 'rfqs')).toBe(true);
    } finally {
      child.kill('SIGINT');
    }
    expect(await exited).toBe(0);
  });

  it('lists a resource’s versions with what changed', async () => {
    const href = `${sim.apiBaseUrl}/rfqs/rfq-versions`;
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    try {
      await sql.query(`INSERT INTO resources (company_id, href, type, resource_id, version, fetched_at, body) VALUES ($1, $2, 'rfqs', 'rfq-versions', 2, now(), '{"state":"Quoted"}')`, [companyId, href]);
      await sql.query(
        `INSERT INTO events (company_id, seq, type, resource_id, href, snapshot_version, changes)
         VALUES ($1, 1001, 'rfqs', 'rfq-versions', $2, 1, NULL), ($1, 1002, 'rfqs', 'rfq-versions', $2, 2, '[{"op":"replace","path":"/state","value":"Quoted"}]')`,
        [companyId, href],
      );
    } finally {
      await sql.end();
    }
    const listed = await json(['resources', 'history', '--company-id', companyId, '--href', href]);
    expect(listed).toMatchObject({ items: [{ version: 2, changes: [{ op: 'replace', path: '/state', value: 'Quoted' }] }, { version: 1, changes: null }], nextCursor: null });
    const table = await skyhook(['resources', 'history', '--company-id', companyId, '--href', href]);
    expect(table.stdout).toMatch(/^2\s+\S+ \S+Z\s+\d+\s+1 change\(s\): replace \/state$/m);
    expect(table.stdout).toMatch(/^1\s+\S+ \S+Z\s+\d+\s+first version$/m);
    const missing = await skyhook(['resources', 'history', '--company-id', companyId]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/--href/);
  });

  it('deletes a webhook and a company after deactivating their settings on the marketplace', async () => {
    const other = await json(['webhooks', 'create', companyId, '--event-types', 'EmptyLegs', '--auth-type', 'BASIC']);
    const deleted = await skyhook(['webhooks', 'delete', companyId, other.id]);
    expect(deleted).toMatchObject({ code: 0, stderr: '', stdout: `deleted webhook ${other.id}\n` });
    expect((await simulatorSettings()).find((w) => w.id === other.remoteId)?.active).toBe(false);

    const gone = await skyhook(['companies', 'delete', companyId, '--json']);
    expect(gone).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(gone.stdout)).toEqual({ remainingRemoteSettings: [] });
    expect((await simulatorSettings()).filter((w) => w.active)).toEqual([]);
    const missing = await skyhook(['companies', 'get', companyId]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/was not found \(404 Not Found\)$/m);
  });

  it('connects a company with the avinode profile (its auth token from stdin) and reconciles its webhooks after a sandbox wipe', async () => {
    const args = ['companies', 'create', '--name', 'Zeta Air', '--api-base-url', sim.apiBaseUrl, '--api-token', ZETA.api, '--profile', 'avinode', '--product', 'Zeta Ops 1.0'];
    const created = await json([...args, '--auth-token', '-'], `${ZETA.auth}\n`);
    expect(created).toMatchObject({ connection: { profile: 'avinode', product: 'Zeta Ops 1.0', storedSecrets: ['apiToken', 'authToken'] }, credentials: { status: 'accepted' } });
    await json(['webhooks', 'create', created.id, '--event-types', 'TripRequest', '--auth-type', 'BASIC']);

    const reset = await skyhook(['simulator', 'reset', '--url', sim.url, '--company', 'zeta']);
    expect(reset).toMatchObject({ code: 0, stderr: '' });
    expect(reset.stdout.trim()).toBe('forgot 1 webhook setting(s) of company zeta');
    const report = await skyhook(['webhooks', 'reconcile', created.id]);
    expect(report).toMatchObject({ code: 0, stderr: '' });
    expect(report.stdout).toMatch(/^0 in sync, 1 drifted, 0 settings on the marketplace \(report only/);
    expect(report.stdout).toMatch(/^missing_remotely\s/m);
    const applied = await json(['webhooks', 'reconcile', created.id, '--apply']);
    expect(applied.drift).toEqual([expect.objectContaining({ kind: 'missing_remotely', action: 'recreated', newRemoteId: expect.stringMatching(/^wh_/) })]);

    // The scheduling host allowed (the connection replaced whole: its auth token again), then a resync of what it stored.
    const allowed = await json(['companies', 'update', created.id, '--profile', 'avinode', '--auth-token', '-', '--base-url', sim.schedulingBaseUrl], `${ZETA.auth}\n`);
    expect(allowed.connection).toMatchObject({ profile: 'avinode', baseUrls: [sim.schedulingBaseUrl] });
    const bad = await skyhook(['companies', 'update', created.id, '--profile', 'avinode', '--auth-token', 'x', '--base-url', 'not a url']);
    expect(bad).toMatchObject({ code: 1, stdout: '' }); // the service refuses it (400), naming the field
    expect(bad.stderr).toMatch(/baseUrls\.0 must be an absolute http\(s\) URL/);
    const pool = new pg.Pool({ connectionString: db.url });
    try {
      await pool.query(`INSERT INTO resources (company_id, href, type, resource_id, fetched_at, body) VALUES ($1, $2, 'contacts', 'c1', now(), '{}'), ($1, 'https://elsewhere.example/x/1', 'rfqs', 'x1', now(), '{}')`, [
        created.id,
        `${sim.schedulingBaseUrl}/contacts/c1`,
      ]);
      const resync = await skyhook(['resync', created.id]);
      expect(resync).toMatchObject({ code: 0, stderr: '' });
      expect(resync.stdout).toMatch(/^queued 1 of 2 resource\(s\) to be fetched again through the company's gate; 1 left out: their href is under none of the company's base URLs$/m);
      const { rows } = await pool.query("SELECT href FROM notifications WHERE company_id = $1 AND authenticated_by = 'resync'", [created.id]);
      expect(rows).toEqual([{ href: `${sim.schedulingBaseUrl}/contacts/c1` }]);
    } finally {
      await pool.end();
    }

    const [noAuth, twoFromStdin] = await Promise.all([skyhook(args), skyhook([...args.slice(0, 7), '-', ...args.slice(8), '--auth-token', '-'], 'x\n')]);
    expect(noAuth).toMatchObject({ code: 2, stdout: '' });
    expect(noAuth.stderr).toMatch(/^skyhook: --auth-token is required by the avinode profile/m);
    expect(twoFromStdin).toMatchObject({ code: 2, stdout: '' });
    expect(twoFromStdin.stderr).toContain('only one secret flag can read stdin ("-"); got --api-token and --auth-token');
    for (const run of [reset, report, noAuth, twoFromStdin]) expect(run.stdout + run.stderr).not.toContain(ZETA.auth);
  }, 150_000); // eleven CLI processes, each a Node start-up: on a loaded two-core machine over a minute

  it('runs a command that only reads without migrating (or creating) the database', async () => {
    const name = `skyhook_cli_absent_${randomUUID().replaceAll('-', '').slice(0, 12)}`;
    const absent = db.url.replace(/\/[^/]+$/, `/${name}`);
    const run = await skyhookWith({ DATABASE_URL: absent }, ['companies', 'list']);
    expect(run).toMatchObject({ code: 1, stdout: '' });
    expect(run.stderr).toMatch(new RegExp(`^skyhook: PostgreSQL at postgres://[^ ]+/${name} \\(DATABASE_URL\\) refused: database "${name}" does not exist \\(3D000\\)$`, 'm'));
    const admin = new pg.Client({ connectionString: db.url.replace(/\/[^/]+$/, '/postgres') });
    await admin.connect();
    try {
      expect((await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name])).rowCount).toBe(0);
    } finally {
      await admin.end();
    }
  });

  it('prints its version', async () => {
    const run = await skyhook(['--version']);
    expect(run).toMatchObject({ code: 0, stdout: `${(JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version}\n` });
  });

  it('answers --help with exit 0', async () => {
    const runs = await Promise.all([skyhook(['companies', 'create', '--help']), skyhook(['webhooks', 'update', '--help']), skyhook(['notifications', 'replay-all', '--help'])]);
    for (const run of runs) expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(runs[0]!.stdout).toContain('--api-base-url <url>');
    expect(runs[1]!.stdout).toContain('--active <true|false>');
    expect(runs[2]!.stdout).toContain('--status <status>');
  });
});

describe('skyhook admin CLI body files', { timeout: 60_000 }, () => {
  it('refuses a quote whose requestId is not one marketplace id (.., a/b) as a usage error naming requestId; nothing is sent', async () => {
    const calls = sim.report().calls.quotes;
    const runs = await Promise.all(['..', 'a/b'].map((requestId) => skyhook(['quotes', 'submit', randomUUID(), '--file', '-'], JSON.stringify({ ...quoteRequest, requestId }))));
    for (const run of runs) {
      expect(run, run.stderr).toMatchObject({ code: 2, stdout: '' });
      expect(run.stderr).toMatch(/^skyhook: requestId must /m);
    }
    expect(runs[0]!.stderr).toContain("must not be '.' or '..'");
    expect(runs[1]!.stderr).toContain('must be a marketplace id');
    expect(sim.report().calls.quotes).toBe(calls);
  });

  it('refuses a --file with text PostgreSQL cannot store (NUL, a lone surrogate) as a usage error naming --file', async () => {
    const runs = await Promise.all([
      skyhook(['leads', 'create', randomUUID(), '--file', '-'], JSON.stringify({ ...lead, clientIdentifier: 'cli-nul\u0000' })),
      skyhook(['quotes', 'submit', randomUUID(), '--file', '-'], JSON.stringify({ ...quoteRequest, requestId: 'lift-\ud800' })),
    ]);
    for (const run of runs) {
      expect(run, run.stderr).toMatchObject({ code: 2, stdout: '' });
      expect(run.stderr).toMatch(/^skyhook: --file: stdin: .*NUL character or a lone surrogate/m);
    }
  });
});

describe('skyhook admin CLI and the audit log', () => {
  it('walks every command of these groups: each one that changes something made a change here, written with its own entry; the others only read', async () => {
    const sql = new pg.Client({ connectionString: db.url });
    await sql.connect();
    try {
      const reads = [
        ...['list', 'get'].map((c) => `skyhook companies ${c}`),
        ...['list', 'get'].map((c) => `skyhook webhooks ${c}`),
        'skyhook leads list',
        'skyhook quotes list',
        'skyhook declines list',
        ...['list', 'get', 'tail'].map((c) => `skyhook notifications ${c}`),
        ...['list', 'history'].map((c) => `skyhook resources ${c}`),
        'skyhook keys list',
        'skyhook audit list',
      ];
      expect(await auditWalk(sql, ['companies', 'webhooks', 'leads', 'quotes', 'declines', 'notifications', 'resources', 'keys', 'audit'], reads)).toEqual([]);
    } finally {
      await sql.end();
    }
  });
});
