/**
 * The receiver against SPEC §4, one test per row of its check table (and the success path): a real
 * Skyhook (role api) on real PostgreSQL and Redis, real HTTP requests. Every refusal is checked for its
 * status, its problem+json body, its challenge where the table asks for one, and for leaving no row behind.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/db/client.js';
import { MAX_NOTIFICATION_BYTES } from '../../src/receiver/routes.js';
import { createTestDatabase, REDIS_URL, SERVER_URL, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import {
  basicAuthorization,
  connectFixtures,
  countNotifications,
  notificationBody,
  notificationRows,
  oauthAuthorization,
  postNotification,
  seedCompany,
  seedWebhook,
  type ReceiverAnswer,
  type SeededCompany,
  type SeededWebhook,
  type SeedWebhookOptions,
} from '../helpers/fixtures.js';
import { eventually, startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';
import { startTcpProxy } from '../helpers/tcp-proxy.js';

const BASIC_CHALLENGE = 'Basic realm="skyhook"';
const OAUTH_CHALLENGE = 'OAuth realm="skyhook"';

let database: TestDatabase;
let skyhook: TestSkyhook;
let fx: DbHandle;

beforeAll(async () => {
  database = await createTestDatabase();
  skyhook = await startSkyhook({ databaseUrl: database.url, queuePrefix: testQueuePrefix(), role: 'api' });
  fx = connectFixtures(database.url);
});

afterAll(async () => {
  await skyhook?.stop();
  await fx?.pool.end();
  await database?.drop();
});

// ---- helpers for this file ------------------------------------------------------------------

const company = (apiBaseUrl?: string): Promise<SeededCompany> => seedCompany(fx.db, skyhook.config.secretKey, apiBaseUrl ? { apiBaseUrl } : {});

const webhook = (c: SeededCompany, authType: 'BASIC' | 'OAUTH', opts: Partial<SeedWebhookOptions> = {}): Promise<SeededWebhook> =>
  seedWebhook(fx.db, skyhook.config.secretKey, { companyId: c.id, authType, publicBaseUrl: skyhook.url, ...opts });

/** A company with one webhook of that type (own targetURI unless `shared`). */
async function companyWithWebhook(authType: 'BASIC' | 'OAUTH', opts: Partial<SeedWebhookOptions> = {}) {
  const c = await company();
  return { company: c, webhook: await webhook(c, authType, opts) };
}

const sendBasic = (w: SeededWebhook, body: unknown, opts: { secret?: string; path?: string; contentType?: string | null; raw?: string | Buffer } = {}) =>
  postNotification(skyhook.url, opts.path ?? w.path, {
    authorization: basicAuthorization(w.clientIdentifier, opts.secret ?? w.secret),
    body: opts.raw ?? JSON.stringify(body),
    contentType: opts.contentType,
  });

function signedOAuth(
  w: SeededWebhook,
  rawBody: string,
  opts: { secret?: string; url?: string; signatureMethod?: 'HMAC-SHA1' | 'HMAC-SHA256'; bodyHashAlgorithm?: 'sha1' | 'sha256'; timestamp?: number } = {},
) {
  return oauthAuthorization({
    clientIdentifier: w.clientIdentifier,
    secret: opts.secret ?? w.secret,
    url: opts.url ?? w.targetURI,
    rawBody,
    signatureMethod: opts.signatureMethod,
    bodyHashAlgorithm: opts.bodyHashAlgorithm,
    timestamp: opts.timestamp,
  });
}

const sendOAuth = (w: SeededWebhook, body: unknown, opts: Parameters<typeof signedOAuth>[2] & { path?: string } = {}) => {
  const rawBody = JSON.stringify(body);
  return postNotification(skyhook.url, opts.path ?? w.path, { authorization: signedOAuth(w, rawBody, opts), body: rawBody });
};

/** Runs `send` and checks that the database holds exactly as many notification rows afterwards. */
async function nothingStored(send: () => Promise<ReceiverAnswer>): Promise<ReceiverAnswer> {
  const before = await countNotifications(fx.db);
  const answer = await send();
  expect(await countNotifications(fx.db), `rows after an answer ${answer.status}: ${answer.text}`).toBe(before);
  return answer;
}

function expectProblem(answer: ReceiverAnswer, status: number, challenge?: string): void {
  expect(answer.status, answer.text).toBe(status);
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json\b/);
  expect(answer.json).toMatchObject({ type: 'about:blank', status });
  expect(typeof answer.json?.title).toBe('string');
  if (challenge) expect(answer.headers.get('www-authenticate')).toBe(challenge);
}

/** Status, headers and body of an answer, less what must differ between two requests (date, length, instance). */
function comparable(answer: ReceiverAnswer) {
  const headers = Object.fromEntries([...answer.headers].filter(([name]) => name !== 'date' && name !== 'content-length'));
  const { instance: _instance, ...body } = answer.json ?? {};
  return { status: answer.status, headers, body };
}

/**
 * A 200 with a tiny JSON body, and the committed row matching what was sent: `queued` (Redis is up, so
 * its job is added right after the commit; with role api nothing processes it), or `discarded`.
 */
async function expectStored(answer: ReceiverAnswer, w: SeededWebhook, sent: Record<string, unknown>, by: 'basic' | 'oauth', status = 'queued') {
  expect(answer.status, answer.text).toBe(200);
  expect(answer.headers.get('content-type')).toMatch(/^application\/json\b/);
  expect(answer.text.length).toBeLessThan(100);
  expect(answer.json).toEqual({ status: status === 'discarded' ? 'discarded' : 'received', id: expect.stringMatching(/^\d+$/) });
  const rows = await notificationRows(fx.db, w.id);
  const row = rows.find((r) => String(r.id) === answer.json!.id);
  expect(row, `row ${String(answer.json!.id)} of webhook ${w.id}`).toBeDefined();
  expect(row).toMatchObject({
    companyId: w.companyId,
    webhookId: w.id,
    resourceId: sent.id,
    type: sent.type,
    href: sent.href,
    body: sent,
    authenticatedBy: by,
    status,
  });
  return row!;
}

// ---- row 1: the endpoint key or clientIdentifier names a known webhook ------------------------

describe('check 1: the endpoint key or clientIdentifier names a known webhook', () => {
  it('an unknown endpoint key gets exactly the answer of a wrong Basic secret (and stores nothing)', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC');
    const body = notificationBody(c.apiBaseUrl);
    // Right credentials, unknown key (same length as a real one).
    const unknownKey = await nothingStored(() => sendBasic(w, body, { path: `/hooks/${'x'.repeat(w.endpointKey.length)}` }));
    const wrongSecret = await nothingStored(() => sendBasic(w, body, { secret: `${w.secret}x` }));
    expectProblem(unknownKey, 401, BASIC_CHALLENGE);
    expectProblem(wrongSecret, 401, BASIC_CHALLENGE);
    expect(comparable(unknownKey)).toEqual(comparable(wrongSecret));
  });

  it('an unknown endpoint key gets exactly the answer of a wrong OAuth secret', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const body = notificationBody(c.apiBaseUrl);
    const path = `/hooks/${'x'.repeat(w.endpointKey.length)}`;
    const unknownKey = await nothingStored(() => sendOAuth(w, body, { path, url: `${skyhook.url}${path}` }));
    const wrongSecret = await nothingStored(() => sendOAuth(w, body, { secret: `${w.secret}x` }));
    expectProblem(unknownKey, 401, OAUTH_CHALLENGE);
    expectProblem(wrongSecret, 401, OAUTH_CHALLENGE);
    expect(comparable(unknownKey)).toEqual(comparable(wrongSecret));
  });

  it('an unknown clientIdentifier on the shared /hooks gets the answer of a wrong secret (Basic and OAuth)', async () => {
    const c = await company();
    const basic = await webhook(c, 'BASIC', { shared: true });
    const oauth = await webhook(c, 'OAUTH', { shared: true });
    const body = notificationBody(c.apiBaseUrl);

    const stranger = { ...basic, clientIdentifier: `skh_unknown_${basic.clientIdentifier}` };
    const unknownBasic = await nothingStored(() => sendBasic(stranger, body));
    const wrongBasic = await nothingStored(() => sendBasic(basic, body, { secret: 'not-the-secret' }));
    expectProblem(unknownBasic, 401, BASIC_CHALLENGE);
    expect(comparable(unknownBasic)).toEqual(comparable(wrongBasic));

    const strangerOAuth = { ...oauth, clientIdentifier: `skh_unknown_${oauth.clientIdentifier}` };
    const unknownOAuth = await nothingStored(() => sendOAuth(strangerOAuth, body));
    const wrongOAuth = await nothingStored(() => sendOAuth(oauth, body, { secret: 'not-the-secret' }));
    expectProblem(unknownOAuth, 401, OAUTH_CHALLENGE);
    expect(comparable(unknownOAuth)).toEqual(comparable(wrongOAuth));
  });

  it('a request without credentials is refused with a Basic challenge', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC');
    const answer = await nothingStored(() => postNotification(skyhook.url, w.path, { body: JSON.stringify(notificationBody(c.apiBaseUrl)) }));
    expectProblem(answer, 401, BASIC_CHALLENGE);
  });

  it('credentials are checked before anything else: a wrong secret with a bad, oversized, text/plain body is a 401', async () => {
    const { webhook: w } = await companyWithWebhook('BASIC');
    const answer = await nothingStored(() => sendBasic(w, null, { secret: 'wrong', raw: 'x'.repeat(MAX_NOTIFICATION_BYTES + 10), contentType: 'text/plain' }));
    expectProblem(answer, 401, BASIC_CHALLENGE);
  });
});

// ---- row 2: Basic ----------------------------------------------------------------------------

describe('check 2: Basic secret', () => {
  it('the right secret on the webhook’s own targetURI is stored and answered 200', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC');
    const body = notificationBody(c.apiBaseUrl);
    await expectStored(await sendBasic(w, body), w, body, 'basic');
  });

  /**
   * Sends a valid notification whose JSON text ends with `extra` properties; returns the stored body's
   * id and the named properties as text (`->>`: exact, not read back through a JavaScript number).
   */
  async function storedWithExtra(extra: string, names: string[]): Promise<Record<string, string | null>> {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC');
    const body = notificationBody(c.apiBaseUrl);
    const answer = await sendBasic(w, body, { raw: JSON.stringify(body).replace(/}$/, `,${extra}}`) });
    expect(answer.status, answer.text).toBe(200);
    const { rows } = await fx.pool.query(`SELECT body->>'id' AS id, ${names.map((_, i) => `body->>$${i + 2} AS "${i}"`).join(', ')} FROM notifications WHERE id = $1`, [answer.json!.id, ...names]);
    expect(rows[0].id).toBe(body.id);
    return Object.fromEntries(names.map((name, i) => [name, rows[0][String(i)]]));
  }

  it('the body is stored as received: extra properties kept, numbers beyond double precision exact', async () => {
    // JSON.parse would round 12345678901234567890123 and 0.1000000000000000055511151231257827; jsonb keeps both.
    const stored = await storedWithExtra('"amount":12345678901234567890123,"rate":0.1000000000000000055511151231257827', ['amount', 'rate']);
    expect(stored).toEqual({ amount: '12345678901234567890123', rate: '0.1000000000000000055511151231257827' });
  });

  it('numbers JavaScript reads as Infinity or 0 but jsonb holds (1e400, 1e10000, 1e-400) are stored exactly as sent', async () => {
    const stored = await storedWithExtra('"huge":1e400,"huger":1e10000,"tiny":1e-400,"amount":12345678901234567890123', ['huge', 'huger', 'tiny', 'amount']);
    expect(stored).toEqual({ huge: `1${'0'.repeat(400)}`, huger: `1${'0'.repeat(10000)}`, tiny: `0.${'0'.repeat(399)}1`, amount: '12345678901234567890123' });
  });

  it.each([
    ['1e999999', 'it would have 1000000 digits before the decimal point'],
    ['1e-999999', 'it would have 999999 digits after the decimal point'],
  ])('a number jsonb cannot hold (%s) is refused with a 400 that names it and why, and nothing is stored', async (n, why) => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC');
    const body = notificationBody(c.apiBaseUrl);
    const answer = await nothingStored(() => sendBasic(w, body, { raw: JSON.stringify(body).replace(/}$/, `,"amount":${n}}`) }));
    expectProblem(answer, 400);
    expect(answer.json?.detail).toBe(
      `The body holds a number PostgreSQL cannot store, ${n}: ${why}, and PostgreSQL's numeric holds at most 131072 digits before the decimal point and 16383 after it.`,
    );
  });

  it('the right secret on the shared targetURI is stored for the webhook its clientIdentifier names', async () => {
    const c = await company();
    const other = await webhook(c, 'BASIC', { shared: true });
    const w = await webhook(c, 'BASIC', { shared: true });
    const body = notificationBody(c.apiBaseUrl);
    const answer = await sendBasic(w, body);
    expect(w.path).toBe('/hooks');
    await expectStored(answer, w, body, 'basic');
    expect(await countNotifications(fx.db, other.id)).toBe(0);
  });

  it('a wrong secret is a 401 with the Basic challenge', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC');
    const answer = await nothingStored(() => sendBasic(w, notificationBody(c.apiBaseUrl), { secret: w.secret.slice(0, -1) }));
    expectProblem(answer, 401, BASIC_CHALLENGE);
  });

  it('a malformed Basic header is a 401 with the Basic challenge', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC');
    for (const authorization of ['Basic !!!', 'Basic', `Basic ${Buffer.from('no-colon').toString('base64')}`]) {
      const answer = await nothingStored(() => postNotification(skyhook.url, w.path, { authorization, body: JSON.stringify(notificationBody(c.apiBaseUrl)) }));
      expectProblem(answer, 401, BASIC_CHALLENGE);
    }
  });

  it('the previous secret is accepted inside its grace period, next to the current one', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC', { previousSecret: 'the-previous-secret', previousSecretExpiresAt: new Date(Date.now() + 3_600_000) });
    const viaPrevious = notificationBody(c.apiBaseUrl);
    await expectStored(await sendBasic(w, viaPrevious, { secret: 'the-previous-secret' }), w, viaPrevious, 'basic');
    const viaCurrent = notificationBody(c.apiBaseUrl);
    await expectStored(await sendBasic(w, viaCurrent), w, viaCurrent, 'basic');
  });

  it('the previous secret is refused once its grace period is over', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC', { previousSecret: 'the-previous-secret', previousSecretExpiresAt: new Date(Date.now() - 1000) });
    const answer = await nothingStored(() => sendBasic(w, notificationBody(c.apiBaseUrl), { secret: 'the-previous-secret' }));
    expectProblem(answer, 401, BASIC_CHALLENGE);
  });
});

// ---- row 3: OAuth ----------------------------------------------------------------------------

describe('check 3: OAuth 1.0a signature', () => {
  it('a request signed as the simulator signs it (HMAC-SHA1, body hash) on the own targetURI is stored', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const body = notificationBody(c.apiBaseUrl);
    await expectStored(await sendOAuth(w, body), w, body, 'oauth');
  });

  it('a signed request on the shared targetURI is stored for the webhook its consumer key names', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH', { shared: true });
    const body = notificationBody(c.apiBaseUrl);
    expect(w.targetURI).toBe(`${skyhook.url}/hooks`);
    await expectStored(await sendOAuth(w, body), w, body, 'oauth');
  });

  it('HMAC-SHA256 with a SHA-1 body hash (as oauthlib, hence requests-oauthlib, signs) is accepted', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const body = notificationBody(c.apiBaseUrl);
    await expectStored(await sendOAuth(w, body, { signatureMethod: 'HMAC-SHA256', bodyHashAlgorithm: 'sha1' }), w, body, 'oauth');
  });

  it('HMAC-SHA256 with a SHA-256 body hash is accepted', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const body = notificationBody(c.apiBaseUrl);
    await expectStored(await sendOAuth(w, body, { signatureMethod: 'HMAC-SHA256', bodyHashAlgorithm: 'sha256' }), w, body, 'oauth');
  });

  it('HMAC-SHA1 with a SHA-256 body hash is a 401, though signed over the right body', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const answer = await nothingStored(() => sendOAuth(w, notificationBody(c.apiBaseUrl), { signatureMethod: 'HMAC-SHA1', bodyHashAlgorithm: 'sha256' }));
    expectProblem(answer, 401, OAUTH_CHALLENGE);
  });

  it('HMAC-SHA256 with the SHA-1 body hash of another body is a 401', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const authorization = signedOAuth(w, JSON.stringify(notificationBody(c.apiBaseUrl)), { signatureMethod: 'HMAC-SHA256', bodyHashAlgorithm: 'sha1' });
    const answer = await nothingStored(() => postNotification(skyhook.url, w.path, { authorization, body: JSON.stringify(notificationBody(c.apiBaseUrl)) }));
    expectProblem(answer, 401, OAUTH_CHALLENGE);
  });

  it('the previous OAuth secret is accepted inside its grace period and refused after it', async () => {
    const c = await company();
    const inGrace = await webhook(c, 'OAUTH', { previousSecret: 'old-oauth-secret', previousSecretExpiresAt: new Date(Date.now() + 3_600_000) });
    const body = notificationBody(c.apiBaseUrl);
    await expectStored(await sendOAuth(inGrace, body, { secret: 'old-oauth-secret' }), inGrace, body, 'oauth');
    const expired = await webhook(c, 'OAUTH', { previousSecret: 'old-oauth-secret', previousSecretExpiresAt: new Date(Date.now() - 1000) });
    expectProblem(await nothingStored(() => sendOAuth(expired, notificationBody(c.apiBaseUrl), { secret: 'old-oauth-secret' })), 401, OAUTH_CHALLENGE);
  });

  it('a bad signature is a 401 with the OAuth challenge', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const answer = await nothingStored(() => sendOAuth(w, notificationBody(c.apiBaseUrl), { secret: 'not-the-secret' }));
    expectProblem(answer, 401, OAUTH_CHALLENGE);
  });

  it('a signature over another URL (the shared one) does not pass on the own targetURI', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const answer = await nothingStored(() => sendOAuth(w, notificationBody(c.apiBaseUrl), { url: `${skyhook.url}/hooks` }));
    expectProblem(answer, 401, OAUTH_CHALLENGE);
  });

  it('a stale timestamp (more than 300 s old or ahead) is a 401', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const now = Math.floor(Date.now() / 1000);
    for (const timestamp of [now - 400, now + 400]) {
      const answer = await nothingStored(() => sendOAuth(w, notificationBody(c.apiBaseUrl), { timestamp }));
      expectProblem(answer, 401, OAUTH_CHALLENGE);
    }
  });

  it('a replayed request (same nonce) is refused the second time', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const body = notificationBody(c.apiBaseUrl);
    const rawBody = JSON.stringify(body);
    const authorization = signedOAuth(w, rawBody);
    await expectStored(await postNotification(skyhook.url, w.path, { authorization, body: rawBody }), w, body, 'oauth');
    const replay = await nothingStored(() => postNotification(skyhook.url, w.path, { authorization, body: rawBody }));
    expectProblem(replay, 401, OAUTH_CHALLENGE);
    expect(await countNotifications(fx.db, w.id)).toBe(1);
  });

  it('a nonce is kept as long as its timestamp can be accepted: about 601 s 300 s ahead, about 1 s 300 s behind', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const redis = new Redis(REDIS_URL);
    try {
      /** Sends a notification signed with `timestamp`; how long Redis keeps its nonce now (PTTL, ms). */
      const nonceKeptMs = async (timestamp: number) => {
        const body = notificationBody(c.apiBaseUrl);
        const rawBody = JSON.stringify(body);
        const authorization = signedOAuth(w, rawBody, { timestamp });
        await expectStored(await postNotification(skyhook.url, w.path, { authorization, body: rawBody }), w, body, 'oauth');
        const nonce = decodeURIComponent(/oauth_nonce="([^"]*)"/.exec(authorization)![1]!);
        return redis.pttl(`${skyhook.config.queuePrefix}:nonce:${w.clientIdentifier}:${nonce}`);
      };
      // Early in a second, so the receiver checks the 300 s behind timestamp within the second it was taken from.
      await new Promise((resolve) => setTimeout(resolve, 1010 - (Date.now() % 1000)));
      const now = Math.floor(Date.now() / 1000);
      const behind = await nonceKeptMs(now - 300);
      const ahead = await nonceKeptMs(now + 300);
      // Accepted until (timestamp + 301) s, plus the store's one-second margin; before the fix, 600 s for both.
      expect(behind).toBeGreaterThan(900);
      expect(behind).toBeLessThanOrEqual(2_000);
      expect(ahead).toBeGreaterThan(600_900);
      expect(ahead).toBeLessThanOrEqual(602_000);
    } finally {
      redis.disconnect();
    }
  });

  it('a body other than the one signed (wrong oauth_body_hash) is a 401', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const authorization = signedOAuth(w, JSON.stringify(notificationBody(c.apiBaseUrl)));
    const answer = await nothingStored(() => postNotification(skyhook.url, w.path, { authorization, body: JSON.stringify(notificationBody(c.apiBaseUrl)) }));
    expectProblem(answer, 401, OAUTH_CHALLENGE);
  });

  it('a header missing the OAuth parameters, or malformed, is a 401 with the OAuth challenge', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const rawBody = JSON.stringify(notificationBody(c.apiBaseUrl));
    for (const authorization of [
      `OAuth oauth_consumer_key="${w.clientIdentifier}"`,
      signedOAuth(w, rawBody).replace(/, oauth_nonce="[^"]*"/, ''),
      `OAuth oauth_consumer_key="${w.clientIdentifier}" junk`,
      'OAuth',
    ]) {
      const answer = await nothingStored(() => postNotification(skyhook.url, w.path, { authorization, body: rawBody }));
      expectProblem(answer, 401, OAUTH_CHALLENGE);
    }
  });

  it('an unsupported signature method is a 401, whatever its name', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('OAUTH');
    const rawBody = JSON.stringify(notificationBody(c.apiBaseUrl));
    for (const method of ['PLAINTEXT', 'constructor']) {
      const authorization = signedOAuth(w, rawBody).replace('oauth_signature_method="HMAC-SHA1"', `oauth_signature_method="${method}"`);
      const answer = await nothingStored(() => postNotification(skyhook.url, w.path, { authorization, body: rawBody }));
      expectProblem(answer, 401, OAUTH_CHALLENGE);
    }
  });
});

// ---- row 4: path key and credentials name the same webhook ---------------------------------------

describe('check 4: a path key and credentials name the same webhook', () => {
  it('another company’s clientIdentifier with its right Basic secret on this endpoint key is a 401', async () => {
    const mine = await companyWithWebhook('BASIC');
    const theirs = await companyWithWebhook('BASIC');
    const answer = await nothingStored(() => sendBasic(theirs.webhook, notificationBody(theirs.company.apiBaseUrl), { path: mine.webhook.path }));
    expectProblem(answer, 401, BASIC_CHALLENGE);
  });

  it('another company’s OAuth credentials, correctly signed for this endpoint key, are a 401', async () => {
    const mine = await companyWithWebhook('OAUTH');
    const theirs = await companyWithWebhook('OAUTH');
    const answer = await nothingStored(() =>
      sendOAuth(theirs.webhook, notificationBody(theirs.company.apiBaseUrl), { path: mine.webhook.path, url: mine.webhook.targetURI }),
    );
    expectProblem(answer, 401, OAUTH_CHALLENGE);
  });

  it('a Basic-typed webhook receiving OAuth (signed with its secret) is a 401, and an OAuth one receiving Basic too', async () => {
    const basic = await companyWithWebhook('BASIC');
    expectProblem(await nothingStored(() => sendOAuth(basic.webhook, notificationBody(basic.company.apiBaseUrl))), 401, OAUTH_CHALLENGE);
    const oauth = await companyWithWebhook('OAUTH');
    expectProblem(await nothingStored(() => sendBasic(oauth.webhook, notificationBody(oauth.company.apiBaseUrl))), 401, BASIC_CHALLENGE);
  });
});

// ---- rows 5 and 6: media type and size -------------------------------------------------------

describe('checks 5 and 6: Content-Type and size', () => {
  it('Content-Type text/plain is a 415 (and a missing Content-Type too)', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC');
    expectProblem(await nothingStored(() => sendBasic(w, notificationBody(c.apiBaseUrl), { contentType: 'text/plain' })), 415);
    expectProblem(await nothingStored(() => sendBasic(w, notificationBody(c.apiBaseUrl), { contentType: null })), 415);
  });

  it('application/json with a charset parameter is accepted', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC');
    const body = notificationBody(c.apiBaseUrl);
    await expectStored(await sendBasic(w, body, { contentType: 'application/json; charset=utf-8' }), w, body, 'basic');
  });

  /** A valid notification serialised to exactly `bytes` bytes. */
  const paddedTo = (apiBaseUrl: string, bytes: number) => {
    const body = notificationBody(apiBaseUrl, { padding: '' });
    body.padding = 'p'.repeat(bytes - Buffer.byteLength(JSON.stringify(body)));
    const raw = JSON.stringify(body);
    expect(Buffer.byteLength(raw)).toBe(bytes);
    return { body, raw };
  };

  it('a body over 256 KiB is a 413', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC');
    const { raw } = paddedTo(c.apiBaseUrl, 256 * 1024 + 1);
    expectProblem(await nothingStored(() => sendBasic(w, null, { raw })), 413);
  });

  it('a body of exactly 256 KiB is accepted', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC');
    const { body, raw } = paddedTo(c.apiBaseUrl, 256 * 1024);
    await expectStored(await sendBasic(w, null, { raw }), w, body, 'basic');
  });
});

// ---- row 7: the notification itself --------------------------------------------------------

describe('check 7: the body is a notification (400)', () => {
  let c: SeededCompany;
  let w: SeededWebhook;
  beforeAll(async () => {
    ({ company: c, webhook: w } = await companyWithWebhook('BASIC'));
  });

  it.each([
    ['not JSON', () => '{"id": "1", '],
    ['a JSON array', () => JSON.stringify([notificationBody(c.apiBaseUrl)])],
    ['a JSON string', () => JSON.stringify('rfqs')],
    ['null', () => 'null'],
    ['empty', () => ''],
  ])('a body that is %s is a 400', async (_what, raw) => {
    expectProblem(await nothingStored(() => sendBasic(w, null, { raw: raw() })), 400);
  });

  it.each([
    ['id', 'missing', undefined],
    ['id', 'a number', 42],
    ['id', 'empty', ''],
    ['type', 'missing', undefined],
    ['type', 'an object', { name: 'rfqs' }],
    ['href', 'missing', undefined],
    ['href', 'null', null],
    ['href', 'relative', '/api/rfqs/1'],
    ['href', 'not a URL', 'rfqs 1'],
  ])('%s %s is a 400 naming the field', async (field, _what, value) => {
    const body: Record<string, unknown> = notificationBody(c.apiBaseUrl);
    if (value === undefined) delete body[field];
    else body[field] = value;
    const answer = await nothingStored(() => sendBasic(w, body));
    expectProblem(answer, 400);
    expect(answer.json?.errors?.map((e) => e.field)).toEqual([field]);
  });

  it('an invalid body is refused before its href is looked at (400, not 422)', async () => {
    const body: Record<string, unknown> = { ...notificationBody(c.apiBaseUrl), href: 'https://evil.example.com/x' };
    delete body.id;
    expectProblem(await nothingStored(() => sendBasic(w, body)), 400);
  });
});

// ---- row 8: href scope -----------------------------------------------------------------------

describe('check 8: href is under the company’s API base URL (422 when it could never be fetched, else kept and not fetched)', () => {
  let c: SeededCompany;
  let w: SeededWebhook;
  beforeAll(async () => {
    c = await company('http://127.0.0.1:9/api');
    w = await webhook(c, 'BASIC');
  });

  it.each([
    ['user:pass@', 'http://user:pass@127.0.0.1:9/api/rfqs/1'],
    ['a user name only', 'http://user@127.0.0.1:9/api/rfqs/1'],
    ['a scheme that is not http(s)', 'ftp://127.0.0.1:9/api/rfqs/1'],
  ])('an href with %s is a 422', async (_what, href) => {
    const answer = await nothingStored(() => sendBasic(w, notificationBody(c.apiBaseUrl, { href })));
    expectProblem(answer, 422);
    expect(answer.json?.errors?.map((e) => e.field)).toEqual(['href']);
  });

  it.each([
    ['another host', 'http://localhost:9/api/rfqs/1'],
    ['another port', 'http://127.0.0.1:10/api/rfqs/1'],
    ['the default port', 'http://127.0.0.1/api/rfqs/1'],
    ['another scheme', 'https://127.0.0.1:9/api/rfqs/1'],
    ['outside the base path', 'http://127.0.0.1:9/admin/rfqs/1'],
    ['a sibling of the base path', 'http://127.0.0.1:9/apix/rfqs/1'],
    ['a dot-segment escape', 'http://127.0.0.1:9/api/../admin/rfqs/1'],
    ['an encoded dot-segment escape', 'http://127.0.0.1:9/api/%2e%2e/admin'],
  ])('an href on %s is kept and answered not_fetched: processed at once, never queued', async (_what, href) => {
    const answer = await sendBasic(w, notificationBody(c.apiBaseUrl, { href }));
    expect(answer.status).toBe(200);
    expect(answer.json).toMatchObject({ status: 'not_fetched' });
    const { rows } = await fx.pool.query('SELECT status, outcome, queued_at FROM notifications WHERE id = $1', [Number(answer.json?.id)]);
    expect(rows).toEqual([{ status: 'processed', outcome: 'not_fetched', queued_at: null }]);
  });

  it('an href at the base path itself or below it, with a query, is accepted', async () => {
    for (const href of ['http://127.0.0.1:9/api', 'http://127.0.0.1:9/api/rfqs/1?expand=all']) {
      const body = notificationBody(c.apiBaseUrl, { href });
      await expectStored(await sendBasic(w, body), w, body, 'basic');
    }
  });
});

// ---- success path ----------------------------------------------------------------------------

describe('success', () => {
  it('keeps extra properties in the stored body (admin API and database)', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC');
    const body = notificationBody(c.apiBaseUrl, { eventType: 'TripRequest', nested: { a: [1, 2, { b: null }] }, 'odd key': 'é ✈', count: 3.5, flag: false });
    const row = await expectStored(await sendBasic(w, body), w, body, 'basic');
    const viaAdmin = await skyhook.admin('GET', `/notifications/${row.id}`);
    expect(viaAdmin.status).toBe(200);
    expect(viaAdmin.body.body).toEqual(body);
  });

  it('a deactivated webhook is acknowledged with 200 and its notification stored as discarded', async () => {
    const { company: c, webhook: w } = await companyWithWebhook('BASIC', { active: false });
    const body = notificationBody(c.apiBaseUrl);
    await expectStored(await sendBasic(w, body), w, body, 'basic', 'discarded');
  });

  it('200 concurrent notifications are all answered 200 and each stored exactly once', async () => {
    const c = await company();
    const basic = await webhook(c, 'BASIC');
    const oauth = await webhook(c, 'OAUTH', { shared: true });
    const bodies = Array.from({ length: 200 }, () => notificationBody(c.apiBaseUrl));
    const answers = await Promise.all(bodies.map((body, i) => (i % 2 === 0 ? sendBasic(basic, body) : sendOAuth(oauth, body))));
    expect(answers.map((a) => a.status)).toEqual(bodies.map(() => 200));

    const rows = [...(await notificationRows(fx.db, basic.id)), ...(await notificationRows(fx.db, oauth.id))];
    expect(rows).toHaveLength(200);
    expect(new Set(rows.map((r) => r.resourceId)).size).toBe(200);
    // Every answer names the row that holds its own notification (group commit maps ids correctly).
    const byId = new Map(rows.map((r) => [String(r.id), r]));
    answers.forEach((answer, i) => {
      const row = byId.get(String(answer.json?.id));
      expect(row?.resourceId).toBe(bodies[i]!.id);
      expect(row?.webhookId).toBe(i % 2 === 0 ? basic.id : oauth.id);
    });
  });
});

// ---- row 9: the commit -----------------------------------------------------------------------

describe('check 9: the notification is committed (503 when the database is unavailable)', () => {
  /** A second Skyhook whose database connections all go through a TCP proxy the test can cut. */
  async function skyhookBehindProxy() {
    const server = new URL(SERVER_URL);
    const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port || 5432) });
    const url = new URL(database.url);
    url.host = `127.0.0.1:${proxy.port}`;
    const instance = await startSkyhook({ databaseUrl: url.toString(), queuePrefix: testQueuePrefix(), role: 'api' });
    const stop = async () => {
      await instance.stop();
      await proxy.close();
    };
    return { instance, proxy, stop };
  }

  const sendTo = (target: TestSkyhook, w: SeededWebhook, body: unknown) =>
    postNotification(target.url, w.path, { authorization: basicAuthorization(w.clientIdentifier, w.secret), body: JSON.stringify(body) });

  const expectUnavailable = (answer: ReceiverAnswer) => {
    expectProblem(answer, 503);
    expect(answer.headers.get('retry-after')).toMatch(/^\d+$/);
  };

  it('a database lost before the commit gives 503 with Retry-After, and nothing is stored', { timeout: 20_000 }, async () => {
    const behind = await skyhookBehindProxy();
    try {
      const c = await seedCompany(fx.db, behind.instance.config.secretKey);
      const w = await seedWebhook(fx.db, behind.instance.config.secretKey, { companyId: c.id, authType: 'BASIC', publicBaseUrl: behind.instance.url });
      // The webhook-change listener (its own connection, named by its channel) must be listening, or its
      // first connect would drop the credentials cache after the warm-up below.
      const isPool = (startup: Buffer) => startup.includes('skyhook-api');
      await eventually(async () => {
        const ports = behind.proxy
          .links()
          .filter((l) => !isPool(l.startup))
          .map((l) => l.upstreamPort);
        const { rows } = await fx.pool.query(`SELECT 1 FROM pg_stat_activity WHERE application_name = 'skyhook-listen skyhook_webhooks' AND state = 'idle' AND client_port = ANY($1::int[])
           AND (query LIKE 'LISTEN skyhook_ping%' OR query LIKE 'NOTIFY skyhook_ping%')`, [ports]);
        return rows.length > 0;
      }, 'the webhook-change listener of the proxied Skyhook');

      // Warm-up: the webhook is now known (cached) to the proxied Skyhook.
      const first = notificationBody(c.apiBaseUrl);
      await expectStored(await sendTo(behind.instance, w, first), w, first, 'basic');

      // The receiver's pool loses the database; the listener keeps its connection, so the cache stays.
      behind.proxy.cut((startup) => !isPool(startup));
      const answer = await nothingStored(() => sendTo(behind.instance, w, notificationBody(c.apiBaseUrl)));
      expectUnavailable(answer);
      expect(await countNotifications(fx.db, w.id)).toBe(1);
    } finally {
      await behind.stop();
    }
  });

  /** The proxied Skyhook has never looked this webhook up: the database is needed to attribute the request. */
  async function unseenWebhookWithDatabaseDown(authType: 'BASIC' | 'OAUTH') {
    const behind = await skyhookBehindProxy();
    const key = behind.instance.config.secretKey;
    const c = await seedCompany(fx.db, key);
    const w = await seedWebhook(fx.db, key, { companyId: c.id, authType, publicBaseUrl: behind.instance.url });
    behind.proxy.cut();
    return { behind, c, w };
  }

  it('a database lost before a Basic request’s webhook is looked up gives 503 with Retry-After, not a 401', { timeout: 20_000 }, async () => {
    const { behind, c, w } = await unseenWebhookWithDatabaseDown('BASIC');
    try {
      const answer = await nothingStored(() => sendTo(behind.instance, w, notificationBody(c.apiBaseUrl)));
      expectUnavailable(answer);
      expect(answer.text).not.toMatch(/select|webhooks/i); // no SQL in an answer
    } finally {
      await behind.stop();
    }
  });

  it('a database lost before an OAuth request’s webhook is looked up gives 503 with Retry-After, not a 500', { timeout: 20_000 }, async () => {
    const { behind, c, w } = await unseenWebhookWithDatabaseDown('OAUTH');
    try {
      const rawBody = JSON.stringify(notificationBody(c.apiBaseUrl));
      const answer = await nothingStored(() =>
        postNotification(behind.instance.url, w.path, {
          authorization: oauthAuthorization({ clientIdentifier: w.clientIdentifier, secret: w.secret, url: w.targetURI, rawBody }),
          body: rawBody,
        }),
      );
      expectUnavailable(answer);
    } finally {
      await behind.stop();
    }
  });
});
