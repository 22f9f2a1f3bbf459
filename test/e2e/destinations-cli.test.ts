/**
 * The `destinations`, `deliveries` and `events` commands and `skyhook listen` (SPEC §5.2), run as an operator
 * and a company's developer run them: child processes against a running Skyhook (the simulator as the
 * marketplace), which delivers each stored version to `skyhook listen`, standing for the company's
 * application. Exit codes: 0 done, 2 a bad flag (named), 1 a refusal (the service's detail).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signatureHeaders } from '../../src/delivery/sign.js';
import type { FaultCompany } from '../faults/support.js';
import { auditWalk, killLeftovers, runSkyhook, startSkyhookCommand, type Run, type Running } from '../helpers/cli.js';
import { REDIS_URL } from '../helpers/database.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually, freePort } from '../helpers/skyhook.js';

/** Fast retries: 8 attempts 150 ms apart (a replay waits for none of them). */
const SCHEDULE = '0,150,150,150,150,150,150,150';
const UUID = /[0-9a-f-]{36}/;

let s: Scenario;
let env: NodeJS.ProcessEnv;
let company: FaultCompany;

beforeAll(async () => {
  s = await startScenario({ env: { DELIVERY_RETRY_SCHEDULE: SCHEDULE, FETCH_MIN_INTERVAL_MS: '0' } });
  company = await s.company('acme-cli');
  env = { ...process.env, DATABASE_URL: s.db.url, REDIS_URL, QUEUE_PREFIX: s.prefix, LOG_LEVEL: 'silent', DELIVERY_RETRY_SCHEDULE: SCHEDULE };
}, 60_000);

afterAll(async () => {
  killLeftovers();
  await s?.close();
});

const skyhook = (args: string[], stdin?: string): Promise<Run> => runSkyhook(env, args, stdin);

/** stdout of a successful --json run, parsed. */
async function json<T = Record<string, unknown>>(args: string[]): Promise<T> {
  const run = await skyhook([...args, '--json']);
  expect(run, run.stderr).toMatchObject({ code: 0, stderr: '' });
  return JSON.parse(run.stdout) as T;
}

/** `skyhook listen` on `port` (another free one if it was taken meanwhile: answered with it). */
async function startListen(port: number, args: string[], stdin?: string): Promise<{ listener: Running; port: number }> {
  for (let attempt = 1; ; attempt++) {
    const listener = startSkyhookCommand(env, ['listen', '--port', String(port), ...args], stdin);
    try {
      await listener.waitForLine(/^listening on http:\/\/127\.0\.0\.1:\d+\/\S*; Ctrl-C to stop$/);
      return { listener, port };
    } catch (err) {
      if (attempt >= 3 || !listener.stderr().includes('is in use')) throw err;
      port = await freePort();
    }
  }
}

/** Fires one event on `resourceId` (each firing makes a new version of it). */
const fire = (resourceId: string) => s.sim.fire({ companyId: company.simId, eventType: 'TripRequest', resourceId });

const linesOf = (listener: Running, match: RegExp) => listener.stdout().split('\n').filter((l) => match.test(l));

/** The company's pending deliveries' ids (a replay is pending until its answer is recorded). */
const pendingDeliveries = async () =>
  (await s.sql.query<{ id: string }>(`SELECT id FROM deliveries WHERE company_id = $1 AND status = 'pending' ORDER BY id`, [company.companyId])).rows.map((r) => Number(r.id));

// Each spawn costs a second or more (tsx), several when the machine is busy.
describe('skyhook destinations, deliveries, events and listen (SPEC §5.2)', { timeout: 90_000 }, () => {
  let destinationId: string;
  let secret: string;
  let url: string;
  let listener: Running;
  let firstWebhookId: string;

  it('destinations create prints the secret once, with a line saying to store it; list and get show the destination, never its secret', async () => {
    url = `http://127.0.0.1:${await freePort()}/hooks/acme`;
    const created = await skyhook(['destinations', 'create', company.companyId, '--url', url, '--description', 'our CRM']);
    expect(created, created.stderr).toMatchObject({ code: 0, stderr: '' });
    destinationId = new RegExp(`^created destination (${UUID.source}) -> ${url}$`, 'm').exec(created.stdout)?.[1] ?? '';
    secret = /^secret: (whsec_[A-Za-z0-9+/]{43}=)$/m.exec(created.stdout)?.[1] ?? '';
    expect(destinationId).toMatch(UUID);
    expect(secret).not.toBe('');
    expect(created.stdout).toMatch(/^Store this secret now .*shown again only by `skyhook destinations secret`\.$/m);

    const [listed, shown, asJson, read] = await Promise.all([
      skyhook(['destinations', 'list', company.companyId]),
      skyhook(['destinations', 'get', company.companyId, destinationId]),
      json<{ id: string; state: { status: string } }>(['destinations', 'get', company.companyId, destinationId]),
      json<{ secret: string; previousSecret: string | null }>(['destinations', 'secret', company.companyId, destinationId]),
    ]);
    expect(listed.stdout).toMatch(/^ID\s+URL\s+STATE\s+PENDING\s+DELIVERED 24H\s+FAILED 24H\s+ANSWERED 2XX\s+LAST SUCCESS\s+DESCRIPTION$/m);
    expect(listed.stdout).toMatch(new RegExp(`^${destinationId}\\s+${url}\\s+ok\\s+0\\s+0\\s+0\\s+-\\s+-\\s+our CRM$`, 'm'));
    expect(shown.stdout).toMatch(new RegExp(`^company:\\s+acme-cli \\(${company.companyId}\\)$`, 'm'));
    expect(shown.stdout).toMatch(/^state:\s+ok$/m);
    expect(shown.stdout).toMatch(/^resource types:\s+all$/m);
    expect(asJson).toMatchObject({ id: destinationId, state: { status: 'ok' } });
    expect(asJson).not.toHaveProperty('secret');
    for (const run of [listed, shown]) expect(run).toMatchObject({ code: 0, stderr: '' });
    for (const text of [listed.stdout, shown.stdout, JSON.stringify(asJson)]) expect(text).not.toContain(secret);
    expect(read).toEqual({ secret, previousSecret: null, previousSecretExpiresAt: null });
  });

  it('listen verifies each delivery with the secret and prints one line: webhook-id, event type, resource, version, verified', async () => {
    const started = await startListen(Number(new URL(url).port), ['--secret', '-', '--path', '/hooks/acme'], `${secret}\n`);
    listener = started.listener;
    if (started.port !== Number(new URL(url).port)) {
      url = `http://127.0.0.1:${started.port}/hooks/acme`;
      expect((await skyhook(['destinations', 'update', company.companyId, destinationId, '--url', url])).code).toBe(0);
    }
    expect(listener.stderr()).toContain("each request's signature is verified with the secret given: 200 when it verifies, 401 when not");
    expect(listener.stderr()).not.toContain(secret);

    await fire('cli-r1');
    const first = await listener.waitForLine(/ rfqs cli-r1 {2}version 1 {2}/);
    expect(first).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ {2}msg_\d+ {2}rfqs\.created {2}rfqs cli-r1 {2}version 1 {2}verified {2}-> 200$/);
    firstWebhookId = /msg_\d+/.exec(first)![0];
    await fire('cli-r1');
    expect(await listener.waitForLine(/ rfqs cli-r1 {2}version 2 /)).toMatch(/ msg_\d+ {2}rfqs\.updated {2}rfqs cli-r1 {2}version 2 \(after 1\) {2}verified {2}-> 200$/);

    // A request signed with another secret: refused 401, with why, and said on its line.
    const body = JSON.stringify({ id: 1, type: 'rfqs.updated', resource: { type: 'rfqs', id: 'forged', version: 9, previousVersion: 8 } });
    const other = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const forged = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...signatureHeaders('msg_forged', body, [other]) }, body });
    expect(forged.status).toBe(401);
    expect(await forged.text()).toMatch(/^signature not verified: no signature matches the secret/);
    expect(await listener.waitForLine(/msg_forged/)).toMatch(/ msg_forged {2}rfqs\.updated {2}rfqs forged {2}version 9 \(after 8\) {2}NOT verified: no signature matches the secret .* -> 401$/);

    // A test event, signed as deliveries are, sent now by the CLI itself.
    const tested = await skyhook(['destinations', 'test', company.companyId, destinationId]);
    expect(tested, tested.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(tested.stdout).toMatch(/^test event msg_test_[0-9a-f]+: answered 200 in \d+ ms\nanswer: verified$/m);
    expect(await listener.waitForLine(/msg_test_/)).toMatch(/ msg_test_[0-9a-f]+ {2}test {2}- {2}- {2}verified {2}-> 200$/);
  });

  it('deliveries list, get (by number or webhook-id) and replay; destinations replay: each sent again with its webhook-id', async () => {
    const listed = await json<{ items: { id: number; webhookId: string; status: string; resource: { version: number } }[] }>(['deliveries', 'list', company.companyId]);
    expect(listed.items.map((d) => [d.resource.version, d.status])).toEqual([
      [2, 'delivered'],
      [1, 'delivered'],
    ]);
    const id = listed.items[1]!.id;
    expect(listed.items[1]!.webhookId).toBe(firstWebhookId);
    const [table, byWebhookId, byNumber] = await Promise.all([
      skyhook(['deliveries', 'list', company.companyId, '--destination-id', destinationId, '--status', 'delivered']),
      skyhook(['deliveries', 'get', company.companyId, firstWebhookId]),
      json<{ id: number; attemptsList: { httpStatus: number }[] }>(['deliveries', 'get', company.companyId, String(id)]),
    ]);
    expect(table.stdout).toMatch(/^WEBHOOK-ID\s+DESTINATION\s+RESOURCE\s+STATUS\s+ATTEMPTS\s+CREATED\s+LAST ERROR$/m);
    // The destination by its URL, not only its id.
    expect(table.stdout).toMatch(new RegExp(`^${firstWebhookId}\\s+${url}\\s+rfqs cli-r1 v1\\s+delivered\\s+1\\s+\\S+ \\S+Z\\s+-$`, 'm'));
    expect(byWebhookId.stdout).toMatch(new RegExp(`^destination:\\s+${url} \\(${destinationId}\\)$`, 'm'));
    expect(byWebhookId.stdout).toMatch(/^status:\s+delivered$/m);
    expect(byWebhookId.stdout).toMatch(/^attempts:\nAT\s+ANSWER\s+TOOK\s+PROBE\s+URL\s+RESPONSE\n\S+ \S+Z\s+HTTP 200\s+\d+ ms\s+no\s+\S+\s+verified$/m);
    expect(byNumber).toMatchObject({ id, attemptsList: [{ httpStatus: 200 }] });

    const replayed = await skyhook(['deliveries', 'replay', company.companyId, firstWebhookId]);
    expect(replayed, replayed.stderr).toMatchObject({ code: 0, stderr: '' });
    expect(replayed.stdout.trim()).toBe(`replayed delivery ${id} (${firstWebhookId}): now pending; it is sent again with the same webhook-id`);
    await eventually(async () => linesOf(listener, new RegExp(`${firstWebhookId} .* verified`)).length === 2, 'the replay at the listener');
    await eventually(async () => (await pendingDeliveries()).length === 0, 'the replay recorded delivered');

    const dry = await json(['destinations', 'replay', company.companyId, destinationId, '--status', 'delivered', '--dry-run']);
    expect(dry).toEqual({ matched: 2, replayed: 0, created: 0 });
    const all = await skyhook(['destinations', 'replay', company.companyId, destinationId, '--since', new Date(Date.now() - 3_600_000).toISOString()]);
    expect(all.stdout.trim()).toBe('replayed 2 of 2 matching delivery(ies): each is sent again with its webhook-id');
    await eventually(async () => linesOf(listener, new RegExp(`${firstWebhookId} .* verified`)).length === 3, 'the second replay at the listener');
  });

  it('events list pages the feed with cursors; events tail prints what is stored after a cursor, then each new event live, and the cursor to resume from', async () => {
    const page = await json<{ items: { id: number; cursor: string; resource: { version: number } }[]; nextCursor: string }>(['events', 'list', company.companyId]);
    expect(page.items.map((e) => e.resource.version)).toEqual([1, 2]);
    expect(page.nextCursor).toBe(page.items[1]!.cursor);
    const [after, limited, table] = await Promise.all([
      json<{ items: { id: number }[] }>(['events', 'list', company.companyId, '--after', page.items[0]!.cursor]),
      json<{ items: { id: number }[]; nextCursor: string }>(['events', 'list', company.companyId, '--limit', '1']),
      skyhook(['events', 'list', company.companyId]),
    ]);
    expect(after.items.map((e) => e.id)).toEqual([page.items[1]!.id]);
    expect(limited).toMatchObject({ items: [{ id: page.items[0]!.id }], nextCursor: page.items[0]!.cursor });
    expect(table.stdout).toMatch(/^ID\s+OCCURRED\s+TYPE\s+RESOURCE\s+VERSION\s+EVENT TYPES\s+CURSOR$/m);
    expect(table.stdout).toMatch(new RegExp(`^${page.items[1]!.id}\\s+\\S+ \\S+Z\\s+rfqs\\.updated\\s+rfqs cli-r1\\s+2 \\(after 1\\)\\s+TripRequest\\s+${page.items[1]!.cursor.replace('.', '\\.')}$`, 'm'));
    expect(table.stdout).toContain(`next: skyhook events list ${company.companyId} --after ${page.nextCursor}`);

    const tail = startSkyhookCommand(env, ['events', 'tail', company.companyId, '--after', page.items[0]!.cursor]);
    // What is stored after the cursor comes first: version 2.
    await tail.waitForLine(/rfqs cli-r1 {2}2 \(after 1\)/);
    await tail.waitForLine(/^following the events of company/);
    await fire('cli-r1');
    const live = await tail.waitForLine(/rfqs cli-r1 {2}3 \(after 2\)/);
    const cursor = / (e1\.\S+)$/.exec(live)?.[1];
    expect(cursor).toBeDefined();
    const ended = await tail.stop('SIGINT');
    expect(ended.code).toBe(0);
    expect(ended.stdout.trim().split('\n')).toHaveLength(2);
    expect(ended.stderr).toContain(`resume with: skyhook events tail ${company.companyId} --after ${cursor}`);
  });

  it('update changes the filter (one list kept when the other is given), limits and state; a pending delivery cannot be replayed (exit 1)', async () => {
    type Shown = { filter: { resourceTypes: string[] | null; eventTypes: string[] | null }; limits: Record<string, number | null>; state: { status: string; by: string | null } };
    const first = await json<Shown>(['destinations', 'update', company.companyId, destinationId, '--resource-types', 'rfqs', '--max-concurrency', '4', '--timeout-ms', '5000']);
    expect(first).toMatchObject({ filter: { resourceTypes: ['rfqs'], eventTypes: null }, limits: { maxConcurrency: 4, ratePerSecond: null, timeoutMs: 5000 } });
    const second = await json<Shown>(['destinations', 'update', company.companyId, destinationId, '--event-types', 'TripRequest', '--rate-per-second', '50']);
    expect(second).toMatchObject({ filter: { resourceTypes: ['rfqs'], eventTypes: ['TripRequest'] }, limits: { maxConcurrency: 4, ratePerSecond: 50, timeoutMs: 5000 } });
    const third = await json<Shown>(['destinations', 'update', company.companyId, destinationId, '--resource-types', 'all', '--event-types', 'all', '--max-concurrency', 'default', '--rate-per-second', 'default', '--timeout-ms', 'default']);
    expect(third).toMatchObject({ filter: { resourceTypes: null, eventTypes: null }, limits: { maxConcurrency: null, ratePerSecond: null, timeoutMs: null } });

    const disabled = await skyhook(['destinations', 'update', company.companyId, destinationId, '--inactive']);
    expect(disabled.stdout).toMatch(/^state:\s+disabled since \S+ \S+Z by cli:\S+: set inactive$/m);
    await fire('cli-r1');
    const [pending] = await eventually(async () => {
      const ids = await pendingDeliveries();
      return ids.length > 0 && ids;
    }, 'a pending delivery');
    const refused = await skyhook(['deliveries', 'replay', company.companyId, String(pending)]);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr.trim()).toBe(`skyhook: Delivery ${pending} is pending: only a delivered, failed, skipped or expired delivery can be replayed (409 Conflict)`);

    const enabled = await skyhook(['destinations', 'update', company.companyId, destinationId, '--active']);
    expect(enabled.stdout).toMatch(/^state:\s+ok$/m);
    expect(await listener.waitForLine(/ rfqs cli-r1 {2}version 4 /)).toMatch(/verified {2}-> 200$/);
  });

  it('a rotated secret is printed once; with no grace the listener refuses the next request (401) and test exits 1', async () => {
    const rotated = await skyhook(['destinations', 'update', company.companyId, destinationId, '--rotate-secret', '--grace-seconds', '0']);
    expect(rotated, rotated.stderr).toMatchObject({ code: 0, stderr: '' });
    const next = /^new secret: (whsec_\S+)$/m.exec(rotated.stdout)?.[1];
    expect(next).toBeDefined();
    expect(next).not.toBe(secret);
    expect(rotated.stdout).toMatch(/^Store this secret now .* The previous secret no longer signs\.$/m);

    const tested = await skyhook(['destinations', 'test', company.companyId, destinationId]);
    expect(tested.code).toBe(1);
    expect(tested.stdout).toMatch(/^test event msg_test_[0-9a-f]+: answered 401 in \d+ ms \(not delivered: a delivery needs a 2xx\)\nanswer: signature not verified: no signature matches the secret/m);
    expect(await listener.waitForLine(/msg_test_.*-> 401$/)).toContain('NOT verified: no signature matches the secret');

    const graced = await skyhook(['destinations', 'update', company.companyId, destinationId, '--rotate-secret', '--grace-seconds', '3600']);
    expect(graced.stdout).toMatch(/^The previous secret signs beside it until \S+ \S+Z\.$/m);
    const read = await json<{ secret: string; previousSecret: string }>(['destinations', 'secret', company.companyId, destinationId]);
    expect(read.previousSecret).toBe(next);
    expect(graced.stdout).toContain(`new secret: ${read.secret}`);
  });

  it('listen without --secret answers 200 and says it cannot verify; Ctrl-C ends it, with what it got', async () => {
    const { listener: open, port } = await startListen(await freePort(), []);
    expect(open.stderr()).toContain('no --secret: requests are answered 200 but NOT verified');
    const posted = await fetch(`http://127.0.0.1:${port}/`, { method: 'POST', headers: { 'content-type': 'application/json', 'webhook-id': 'msg_5' }, body: JSON.stringify({ type: 'rfqs.created', resource: { type: 'rfqs', id: 'x', version: 1, previousVersion: null } }) });
    expect(posted.status).toBe(200);
    expect(await posted.text()).toBe('received, not verified: the listener has no secret\n');
    const wrongMethod = await fetch(`http://127.0.0.1:${port}/`);
    expect(wrongMethod.status).toBe(405);
    await open.waitForLine(/GET \/ {2}-> 405: not a POST$/);
    expect(open.stdout()).toMatch(/ msg_5 {2}rfqs\.created {2}rfqs x {2}version 1 {2}not verified: no --secret given {2}-> 200$/m);
    const ended = await open.stop('SIGINT');
    expect(ended.code).toBe(0);
    expect(ended.stderr).toMatch(/^stopped: 2 request\(s\), 0 verified, 1 refused$/m);

    const main = await listener.stop('SIGINT');
    expect(main.code).toBe(0);
    expect(main.stderr).toMatch(/^stopped: \d+ request\(s\), \d+ verified, 2 refused$/m);
  });

  it('deletes a destination: then it is not found (exit 1)', async () => {
    const deleted = await skyhook(['destinations', 'delete', company.companyId, destinationId]);
    expect(deleted).toMatchObject({ code: 0, stderr: '', stdout: `deleted destination ${destinationId}; its pending deliveries ended skipped\n` });
    const missing = await skyhook(['destinations', 'get', company.companyId, destinationId]);
    expect(missing).toMatchObject({ code: 1, stdout: '' });
    expect(missing.stderr.trim()).toBe(`skyhook: Destination ${destinationId} was not found (404 Not Found)`);
  });

  it('exits 2 on a bad flag or argument of each command, one line naming it, before touching anything', async () => {
    const c = company.companyId;
    const d = randomUUID();
    const cases: [string[], RegExp][] = [
      [['destinations', 'create', c], /^skyhook: --url is required$/],
      [['destinations', 'create', c, '--url', 'http://127.0.0.1:9/', '--max-concurrency', '0'], /^skyhook: --max-concurrency must be 1 or more \(got 0\)$/],
      [['destinations', 'list', 'acme'], /^skyhook: <companyId> must be a UUID \(got "acme"\)$/],
      [['destinations', 'get', c, 'd1'], /^skyhook: <destinationId> must be a UUID \(got "d1"\)$/],
      [['destinations', 'update', c, d], /^skyhook: give at least one of --url, --description, .*--timeout-ms$/],
      [['destinations', 'update', c, d, '--active', '--inactive'], /^skyhook: --active and --inactive cannot go together$/],
      [['destinations', 'update', c, d, '--resource-types', 'rfqs,rf qs'], /^skyhook: --resource-types must be letters, digits, _ \. : or -$/],
      [['destinations', 'update', c, d, '--grace-seconds', '5'], /^skyhook: --grace-seconds goes with --rotate-secret$/],
      [['destinations', 'update', c, d, '--rotate-secret', '--grace-seconds', '-1'], /^skyhook: --grace-seconds must be 0 or more \(got -1\)$/],
      [['destinations', 'update', c, d, '--skip-before', '2026-01-01T00:00:00Z'], /^skyhook: --skip-before goes with --active$/],
      [['destinations', 'delete', c, 'x'], /^skyhook: <destinationId> must be a UUID/],
      [['destinations', 'secret', c, 'x'], /^skyhook: <destinationId> must be a UUID/],
      [['destinations', 'test', c, 'x'], /^skyhook: <destinationId> must be a UUID/],
      [['destinations', 'replay', c, d, '--status', 'pending'], /^skyhook: --status must be one of delivered, failed, skipped, expired \(got "pending"\)$/],
      [['destinations', 'replay', c, d, '--since', 'yesterday'], /^skyhook: --since must be an ISO date-time \(got "yesterday"\)$/],
      [['deliveries', 'list', c, '--status', 'lost'], /^skyhook: --status must be one of pending, delivered, failed, skipped, expired \(got "lost"\)$/],
      [['deliveries', 'list', c, '--colour'], /^skyhook: unknown option '--colour'/],
      [['deliveries', 'get', c, 'msg_test_1'], /^skyhook: <deliveryId> must be a number/],
      [['deliveries', 'replay', c, '0'], /^skyhook: <deliveryId> must be more than 0 \(got 0\)$/],
      [['events', 'list', c, '--limit', '501'], /^skyhook: --limit must be 500 or less \(got 501\)$/],
      [['events', 'tail', 'acme'], /^skyhook: <companyId> must be a UUID \(got "acme"\)$/],
      [['listen', '--port', '70000'], /^skyhook: --port must be 65535 or less \(got 70000\)$/],
      [['listen', '--secret', 'hunter2'], /^skyhook: --secret must be a signing secret, whsec_ and base64/],
    ];
    // A few at a time: each is a process of its own.
    for (let i = 0; i < cases.length; i += 6) {
      const batch = cases.slice(i, i + 6);
      const runs = await Promise.all(batch.map(([args]) => skyhook(args)));
      for (const [n, run] of runs.entries()) {
        const [args, line] = batch[n]!;
        expect(run, args.join(' ')).toMatchObject({ code: 2, stdout: '' });
        expect(run.stderr.split('\n')[0], args.join(' ')).toMatch(line);
      }
    }
    // Nothing was created by the refused create.
    expect((await json<{ items: unknown[] }>(['destinations', 'list', c])).items).toEqual([]);
  });

  it('exits 1 with the service\'s detail on a refusal: an unknown company, a URL that can never be one, a cursor this API never gave', async () => {
    const unknown = randomUUID();
    const [noCompany, badUrl, badCursor] = await Promise.all([
      skyhook(['destinations', 'list', unknown]),
      skyhook(['destinations', 'create', company.companyId, '--url', 'ftp://example.com/hooks']),
      skyhook(['events', 'list', company.companyId, '--after', 'e1.bm90LWEtbnVtYmVy']),
    ]);
    expect(noCompany).toMatchObject({ code: 1, stdout: '' });
    expect(noCompany.stderr.trim()).toBe(`skyhook: Company ${unknown} was not found (404 Not Found)`);
    expect(badUrl).toMatchObject({ code: 1, stdout: '' });
    expect(badUrl.stderr).toMatch(/^ {2}--url: must be an absolute http\(s\) URL$/m);
    expect(badCursor).toMatchObject({ code: 1, stdout: '' });
    expect(badCursor.stderr).toMatch(/^ {2}--after: is not a cursor this API returned$/m);
  });

  it('answers --help on each command with exit 0', async () => {
    const commands = [
      ...['create', 'list', 'get', 'update', 'delete', 'secret', 'test', 'replay'].map((c) => ['destinations', c]),
      ...['list', 'get', 'replay'].map((c) => ['deliveries', c]),
      ['events', 'list'],
      ['events', 'tail'],
      ['listen'],
    ];
    for (let i = 0; i < commands.length; i += 7) {
      const runs = await Promise.all(commands.slice(i, i + 7).map((c) => skyhook([...c, '--help'])));
      for (const run of runs) expect(run).toMatchObject({ code: 0, stderr: '' });
      for (const run of runs) expect(run.stdout).toMatch(/^Usage: skyhook /);
    }
  });
});

describe('skyhook destinations and deliveries, and the audit log', () => {
  it('walks every command: each one that changes something (a test sends a request: a call) made a change here, written with its own entry; the others only read', async () => {
    const reads = [...['list', 'get'].map((c) => `skyhook destinations ${c}`), ...['list', 'get'].map((c) => `skyhook deliveries ${c}`)];
    expect(await auditWalk(s.sql, ['destinations', 'deliveries'], reads)).toEqual([]);
  });
});
