/**
 * Bad input (SPEC §4, §10: "every bad input gets a clear 4xx and leaves nothing behind; no bad input
 * crashes a process"). Two parts:
 *
 * 1. A corpus of bad requests against a real Skyhook (role api): the receiver (malformed, truncated,
 *    mistyped, huge, deeply nested and badly encoded bodies; every credential fault; hrefs aimed at other
 *    hosts, private addresses and other schemes) and the admin API. Each has its expected status and an
 *    `application/problem+json` body, and no table gains a row. Afterwards the process is healthy and
 *    still accepts valid notifications. The routes of SPEC §5.2 (destinations, deliveries, the events
 *    feed) have a corpus of their own, each case's problem naming the field (or the unknown id) it is about.
 * 2. Seeded-random fuzzing of the parsers the receiver trusts: parseOAuthHeader / readOAuthHeader /
 *    verifyOAuthHeader (src/receiver/oauth1.ts) and parseNotification / checkHrefScope
 *    (src/receiver/ingest.ts). They throw nothing but their documented errors and never accept what
 *    they must refuse. The seed is fixed (FUZZ_SEED overrides it), so a failure replays exactly.
 */
import { hash } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DbHandle } from '../../src/db/client.js';
import { Problem } from '../../src/lib/problem.js';
import {
  bodyHashMatches,
  OAuthHeaderError,
  parseOAuthHeader,
  readOAuthHeader,
  verifyOAuthHeader,
  type OAuthHeaderCheck,
} from '../../src/receiver/oauth1.js';
import { MAX_NOTIFICATION_BYTES } from '../../src/receiver/routes.js';
import { checkHrefScope, hrefDisposition, parseNotification } from '../../src/receiver/ingest.js';
import { createTestDatabase, testQueuePrefix, type TestDatabase } from '../helpers/database.js';
import {
  basicAuthorization,
  connectFixtures,
  notificationBody,
  oauthAuthorization,
  parseAnswerBody,
  postNotification,
  readAnswer,
  seedCompany,
  seedWebhook,
  type ReceiverAnswer,
  type SeededCompany,
  type SeededWebhook,
} from '../helpers/fixtures.js';
import { ADMIN_TOKEN, startSkyhook, type TestSkyhook } from '../helpers/skyhook.js';
import { prng } from '../helpers/prng.js';

const BASIC = 'Basic realm="skyhook"';
const OAUTH = 'OAuth realm="skyhook"';

let database: TestDatabase;
let skyhook: TestSkyhook;
let fx: DbHandle;
let company: SeededCompany;
let other: SeededCompany;
/** BASIC on its own targetURI, OAUTH on its own targetURI, and both kinds on the shared /hooks. */
let basic: SeededWebhook;
let oauth: SeededWebhook;
let sharedBasic: SeededWebhook;
let otherBasic: SeededWebhook;
let otherOAuth: SeededWebhook;

beforeAll(async () => {
  database = await createTestDatabase();
  skyhook = await startSkyhook({ databaseUrl: database.url, queuePrefix: testQueuePrefix(), role: 'api' });
  fx = connectFixtures(database.url);
  const key = skyhook.config.secretKey;
  company = await seedCompany(fx.db, key, { apiBaseUrl: 'http://127.0.0.1:4010/api' });
  other = await seedCompany(fx.db, key, { apiBaseUrl: 'http://127.0.0.1:4010/api' });
  const hook = (c: SeededCompany, authType: 'BASIC' | 'OAUTH', shared = false) =>
    seedWebhook(fx.db, key, { companyId: c.id, authType, publicBaseUrl: skyhook.url, shared });
  basic = await hook(company, 'BASIC');
  oauth = await hook(company, 'OAUTH');
  sharedBasic = await hook(company, 'BASIC', true);
  otherBasic = await hook(other, 'BASIC');
  otherOAuth = await hook(other, 'OAUTH');
});

afterAll(async () => {
  await skyhook?.stop();
  await fx?.pool.end();
  await database?.drop();
});

// ---- senders ----------------------------------------------------------------------------------

const valid = () => notificationBody(company.apiBaseUrl) as { id: string; type: string; href: string };
const json = (v: unknown) => JSON.stringify(v);

const sendBasic = (raw: string | Buffer, opts: { hook?: SeededWebhook; path?: string; secret?: string; contentType?: string | null; authorization?: string } = {}) => {
  const w = opts.hook ?? basic;
  return postNotification(skyhook.url, opts.path ?? w.path, {
    authorization: opts.authorization ?? basicAuthorization(w.clientIdentifier, opts.secret ?? w.secret),
    body: raw,
    contentType: opts.contentType,
  });
};

interface OAuthOpts {
  hook?: SeededWebhook;
  path?: string;
  secret?: string;
  signedUrl?: string;
  signedBody?: string;
  method?: string;
  timestamp?: number;
  signatureMethod?: 'HMAC-SHA1' | 'HMAC-SHA256';
  token?: { key: string; secret: string };
  /** Changes the signed header's parameters (then re-serialised, not re-signed). */
  edit?: (params: Record<string, string>) => Record<string, string>;
  header?: string;
  contentType?: string | null;
}

const enc = (v: string) => encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
const serialiseOAuth = (params: Record<string, string>) => `OAuth ${Object.entries(params).map(([k, v]) => `${k}="${enc(v)}"`).join(', ')}`;

function oauthHeader(raw: string, o: OAuthOpts = {}): string {
  const w = o.hook ?? oauth;
  const header = oauthAuthorization({
    clientIdentifier: w.clientIdentifier,
    secret: o.secret ?? w.secret,
    url: o.signedUrl ?? `${skyhook.url}${o.path ?? w.path}`,
    rawBody: o.signedBody ?? raw,
    method: o.method,
    timestamp: o.timestamp,
    signatureMethod: o.signatureMethod,
    token: o.token,
  });
  return o.edit ? serialiseOAuth(o.edit({ ...parseOAuthHeader(header) })) : header;
}

const sendOAuth = (raw: string | Buffer, o: OAuthOpts = {}) =>
  postNotification(skyhook.url, o.path ?? (o.hook ?? oauth).path, { authorization: o.header ?? oauthHeader(raw.toString(), o), body: raw, contentType: o.contentType });

async function admin(method: string, path: string, opts: { body?: string | Buffer; contentType?: string | null; token?: string | null } = {}): Promise<ReceiverAnswer> {
  const headers: Record<string, string> = {};
  const token = opts.token === undefined ? ADMIN_TOKEN : opts.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  const contentType = opts.contentType === undefined ? (opts.body !== undefined ? 'application/json' : null) : opts.contentType;
  if (contentType !== null) headers['content-type'] = contentType;
  return readAnswer(await fetch(`${skyhook.url}${path}`, { method, headers, body: opts.body === undefined ? undefined : typeof opts.body === 'string' ? Buffer.from(opts.body) : opts.body }));
}

/** One HTTP request written byte for byte on a socket: what fetch refuses to send. */
function rawHttp(request: string | Buffer): Promise<ReceiverAnswer> {
  const { port } = new URL(skyhook.url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.setTimeout(5000, () => socket.destroy(new Error('raw request timed out')));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const [statusLine = '', ...headerLines] = head.split('\r\n');
      const headers = new Headers();
      for (const line of headerLines) {
        const i = line.indexOf(':');
        if (i > 0) headers.append(line.slice(0, i).trim(), line.slice(i + 1).trim());
      }
      resolve({ status: Number(statusLine.split(' ')[1] ?? 0), headers, text: body, json: parseAnswerBody(body) });
    });
    socket.end(request);
  });
}

// ---- what "nothing stored" means ----------------------------------------------------------------
// Every table's rows stay as they were; the audit log alone may gain a refused change's entry. A partitioned
// table counts its partitions' rows (they are not counted again on their own).

async function rowCounts(): Promise<Record<string, number>> {
  const { rows: tables } = await fx.pool.query<{ table_name: string }>(
    `SELECT c.relname AS table_name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition ORDER BY 1`,
  );
  const counts: Record<string, number> = {};
  for (const { table_name } of tables) {
    const { rows } = await fx.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${table_name}"`);
    counts[table_name] = rows[0]!.n;
  }
  return counts;
}

// ---- the corpus -------------------------------------------------------------------------------

interface BadRequest {
  name: string;
  send: () => Promise<ReceiverAnswer>;
  /** The status, or the statuses that are all fine answers. */
  status: number | number[];
  /** The WWW-Authenticate the answer must carry. */
  challenge?: string;
  /** Matched against the problem's detail. */
  detail?: RegExp;
  /** What the problem must name (in its detail or its errors' fields and messages): the field, or the unknown thing. */
  names?: string;
}

const nested = (depth: number, leaf: unknown = 1): unknown => {
  let v = leaf;
  for (let i = 0; i < depth; i++) v = { a: v };
  return v;
};
const now = () => Math.floor(Date.now() / 1000);
const hrefCase = (name: string, href: string): BadRequest => ({ name: `href ${name}: ${href.slice(0, 60)}`, send: () => sendBasic(json({ ...valid(), href })), status: 422 });

/**
 * Hrefs under none of the company's base URLs: not bad requests since SPEC §14 (docs/decisions.md), but kept,
 * answered `not_fetched` and never fetched, so the company's token goes nowhere near them.
 */
const OFF_SCOPE_HREFS: [string, string][] = [
  ['on another host', 'http://evil.example/api/rfqs/1'],
  ['on a private address', 'http://10.0.0.1/api/rfqs/1'],
  ['on the cloud metadata address', 'http://169.254.169.254/latest/meta-data/iam/security-credentials/'],
  ['on localhost by name', 'http://localhost:4010/api/rfqs/1'],
  ['on IPv6 loopback', 'http://[::1]:4010/api/rfqs/1'],
  ['on the API host, another port', 'http://127.0.0.1:4011/api/rfqs/1'],
  ['on the API host, default port', 'http://127.0.0.1/api/rfqs/1'],
  ['https where the API is http', 'https://127.0.0.1:4010/api/rfqs/1'],
  ['on a host that starts like the API host', 'http://127.0.0.1.evil.example:4010/api/rfqs/1'],
  ['outside the base path', 'http://127.0.0.1:4010/admin/rfqs/1'],
  ['on a path that only starts like the base path', 'http://127.0.0.1:4010/apix/rfqs/1'],
  ['escaping the base path with ..', 'http://127.0.0.1:4010/api/../admin'],
  ['escaping the base path with %2e%2e', 'http://127.0.0.1:4010/api/%2e%2e/admin'],
  ['escaping with backslashes', 'http://127.0.0.1:4010/api\\..\\admin'],
];

function receiverCorpus(): BadRequest[] {
  const base = company.apiBaseUrl; // http://127.0.0.1:4010/api
  const v = valid();
  const whole = json(v);
  return [
    // Bodies: syntax.
    { name: 'malformed JSON', send: () => sendBasic('{"id": "a", "type": rfqs}'), status: 400 },
    { name: 'truncated JSON (half a valid body)', send: () => sendBasic(whole.slice(0, Math.floor(whole.length / 2))), status: 400 },
    { name: 'truncated JSON (last byte missing)', send: () => sendBasic(whole.slice(0, -1)), status: 400 },
    { name: 'trailing garbage after the object', send: () => sendBasic(`${whole} x`), status: 400 },
    { name: 'two JSON objects', send: () => sendBasic(`${whole}${whole}`), status: 400 },
    { name: 'empty body', send: () => sendBasic(''), status: 400 },
    { name: 'whitespace only', send: () => sendBasic('   \n'), status: 400 },
    { name: 'JSON with comments', send: () => sendBasic(`/* hi */ ${whole}`), status: 400 },
    { name: 'single quotes', send: () => sendBasic(whole.replaceAll('"', "'")), status: 400 },
    { name: 'NaN literal', send: () => sendBasic(json(v).replace('}', ',"n":NaN}')), status: 400 },
    // Bodies: not a notification.
    { name: 'a JSON array', send: () => sendBasic(json([v])), status: 400 },
    { name: 'a JSON string', send: () => sendBasic(json('rfqs')), status: 400 },
    { name: 'a JSON number', send: () => sendBasic('42'), status: 400 },
    { name: 'JSON null', send: () => sendBasic('null'), status: 400 },
    { name: 'JSON true', send: () => sendBasic('true'), status: 400 },
    { name: 'an empty object', send: () => sendBasic('{}'), status: 400 },
    { name: 'id a number', send: () => sendBasic(json({ ...v, id: 12 })), status: 400 },
    { name: 'id null', send: () => sendBasic(json({ ...v, id: null })), status: 400 },
    { name: 'id empty', send: () => sendBasic(json({ ...v, id: '' })), status: 400 },
    { name: 'id too long (513)', send: () => sendBasic(json({ ...v, id: 'i'.repeat(513) })), status: 400 },
    { name: 'type an array', send: () => sendBasic(json({ ...v, type: ['rfqs'] })), status: 400 },
    { name: 'type missing', send: () => sendBasic(json({ id: v.id, href: v.href })), status: 400 },
    { name: 'type too long (129)', send: () => sendBasic(json({ ...v, type: 't'.repeat(129) })), status: 400 },
    { name: 'href an object', send: () => sendBasic(json({ ...v, href: { url: v.href } })), status: 400 },
    { name: 'href a boolean', send: () => sendBasic(json({ ...v, href: true })), status: 400 },
    { name: 'href relative', send: () => sendBasic(json({ ...v, href: '/api/rfqs/1' })), status: 400 },
    { name: 'href not a URL', send: () => sendBasic(json({ ...v, href: 'rfqs 1' })), status: 400 },
    { name: 'href too long (2049)', send: () => sendBasic(json({ ...v, href: `${base}/rfqs/${'x'.repeat(2049)}` })), status: 400 },
    // Bodies: size and shape.
    { name: 'a body over 256 KiB', send: () => sendBasic(json({ ...v, pad: 'x'.repeat(MAX_NOTIFICATION_BYTES) })), status: 413 },
    { name: 'a 2 MiB body', send: () => sendBasic(Buffer.alloc(2 * 1024 * 1024, 0x20)), status: 413 },
    { name: 'nested 65 objects deep', send: () => sendBasic(json({ ...v, extra: nested(64) })), status: 400, detail: /nested deeper/ },
    { name: 'nested 100 000 arrays deep', send: () => sendBasic(`{"id":"a","type":"rfqs","href":"${base}/rfqs/a","x":${'['.repeat(100_000)}${']'.repeat(100_000)}}`), status: 400 },
    { name: 'nested 100 000 arrays, unclosed', send: () => sendBasic(`{"x":${'['.repeat(120_000)}`), status: 400 },
    // Bodies: encoding.
    { name: 'invalid UTF-8 (0xFF 0xFE in a string)', send: () => sendBasic(Buffer.concat([Buffer.from('{"id":"'), Buffer.from([0xff, 0xfe]), Buffer.from(whole.slice(whole.indexOf('",')))])), status: 400 },
    { name: 'overlong UTF-8 encoding of "/"', send: () => sendBasic(Buffer.concat([Buffer.from(whole.slice(0, -2)), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')])), status: 400 },
    { name: 'UTF-8-encoded surrogate (ED A0 80)', send: () => sendBasic(Buffer.concat([Buffer.from('{"id":"'), Buffer.from([0xed, 0xa0, 0x80]), Buffer.from(whole.slice(whole.indexOf('",')))])), status: 400 },
    { name: 'UTF-16LE body', send: () => sendBasic(Buffer.from(whole, 'utf16le')), status: 400 },
    { name: 'NUL in a value (\\u0000)', send: () => sendBasic(json({ ...v, note: 'a\u0000b' })), status: 400 },
    { name: 'NUL in a key', send: () => sendBasic(json({ ...v, ['k\u0000']: 1 })), status: 400 },
    // PostgreSQL's jsonb refuses a lone surrogate escape just as it refuses \u0000.
    { name: 'lone surrogate escape in id (\\ud800)', send: () => sendBasic(whole.replace(`"id":"${v.id}"`, `"id":"${v.id}\\ud800"`)), status: 400 },
    { name: 'lone surrogate escape in an extra property', send: () => sendBasic(`${whole.slice(0, -1)},"note":"\\udc00x"}`), status: 400 },
    // PostgreSQL's numeric holds at most 131072 digits before the point and 16383 after it.
    { name: 'a number jsonb cannot hold (1e999999)', send: () => sendBasic(`${whole.slice(0, -1)},"amount":1e999999}`), status: 400, detail: /cannot store, 1e999999: .* 131072 digits before/ },
    { name: 'a number jsonb cannot hold (1e-999999)', send: () => sendBasic(`${whole.slice(0, -1)},"amount":1e-999999}`), status: 400, detail: /cannot store, 1e-999999: .* 16383 after/ },
    // Content-Type.
    { name: 'Content-Type text/plain', send: () => sendBasic(whole, { contentType: 'text/plain' }), status: 415 },
    { name: 'no Content-Type', send: () => sendBasic(whole, { contentType: null }), status: 415 },
    { name: 'Content-Type form-urlencoded', send: () => sendBasic(whole, { contentType: 'application/x-www-form-urlencoded' }), status: 415 },
    { name: 'Content-Type multipart/form-data', send: () => sendBasic(whole, { contentType: 'multipart/form-data; boundary=x' }), status: 415 },
    { name: 'Content-Type application/jsonx', send: () => sendBasic(whole, { contentType: 'application/jsonx' }), status: 415 },
    // Authentication comes first (SPEC §4's order): an OAuth body hash is checked before the Content-Type.
    { name: 'OAuth, text/plain, a body other than the one signed', send: () => sendOAuth(whole, { signedBody: json(valid()), contentType: 'text/plain' }), status: 401, challenge: OAUTH },
    { name: 'OAuth, text/plain, the body signed', send: () => sendOAuth(whole, { contentType: 'text/plain' }), status: 415 },
    { name: 'OAuth, no Content-Type, a body other than the one signed', send: () => sendOAuth(whole, { signedBody: json(valid()), contentType: null }), status: 401, challenge: OAUTH },
    // Credentials: Basic.
    { name: 'no Authorization', send: () => postNotification(skyhook.url, basic.path, { body: whole }), status: 401, challenge: BASIC },
    { name: 'wrong Basic secret', send: () => sendBasic(whole, { secret: `${basic.secret}x` }), status: 401, challenge: BASIC },
    { name: 'empty Basic secret', send: () => sendBasic(whole, { secret: '' }), status: 401, challenge: BASIC },
    { name: 'unknown endpoint key', send: () => sendBasic(whole, { path: `/hooks/${'k'.repeat(32)}` }), status: 401, challenge: BASIC },
    { name: 'endpoint key with traversal', send: () => sendBasic(whole, { path: `/hooks/..%2F..%2Fadmin%2Fcompanies` }), status: 401, challenge: BASIC },
    // Input the database cannot take as a parameter is an unknown key like any other, never a 500.
    { name: 'NUL in the endpoint key', send: () => sendBasic(whole, { path: `${basic.path}%00` }), status: 401, challenge: BASIC },
    { name: 'NUL alone as the endpoint key', send: () => sendBasic(whole, { path: '/hooks/%00' }), status: 401, challenge: BASIC },
    { name: 'NUL in the Basic user name on /hooks', send: () => sendBasic(whole, { path: '/hooks', authorization: basicAuthorization(`${basic.clientIdentifier}\u0000`, basic.secret) }), status: 401, challenge: BASIC },
    { name: 'NUL in oauth_consumer_key', send: () => sendOAuth(whole, { edit: (p) => ({ ...p, oauth_consumer_key: `${p.oauth_consumer_key}\u0000` }) }), status: 401, challenge: OAUTH },
    { name: 'NUL in oauth_consumer_key on /hooks', send: () => sendOAuth(whole, { path: '/hooks', edit: (p) => ({ ...p, oauth_consumer_key: '\u0000' }) }), status: 401, challenge: OAUTH },
    // Router errors, as problems too.
    { name: 'a bad percent-encoding in the path', send: () => sendBasic(whole, { path: '/hooks/%E0%A4%A' }), status: 400 },
    { name: 'an endpoint key longer than the router takes', send: () => sendBasic(whole, { path: `/hooks/${'k'.repeat(500)}` }), status: 414 },
    { name: 'unknown clientIdentifier on /hooks', send: () => sendBasic(whole, { path: '/hooks', authorization: basicAuthorization('skh_nobody', 'secret') }), status: 401, challenge: BASIC },
    { name: 'another company’s Basic credentials on this key', send: () => sendBasic(whole, { path: basic.path, authorization: basicAuthorization(otherBasic.clientIdentifier, otherBasic.secret) }), status: 401, challenge: BASIC },
    { name: 'this company’s other webhook’s credentials on this key', send: () => sendBasic(whole, { path: basic.path, authorization: basicAuthorization(sharedBasic.clientIdentifier, sharedBasic.secret) }), status: 401, challenge: BASIC },
    { name: 'Basic credentials of an OAUTH webhook', send: () => sendBasic(whole, { path: '/hooks', authorization: basicAuthorization(oauth.clientIdentifier, oauth.secret) }), status: 401, challenge: BASIC },
    { name: 'Basic with invalid base64', send: () => sendBasic(whole, { authorization: 'Basic !!!not-base64!!!' }), status: 401 },
    { name: 'Basic without a colon', send: () => sendBasic(whole, { authorization: `Basic ${Buffer.from(basic.clientIdentifier).toString('base64')}` }), status: 401 },
    { name: 'Basic with nothing after the scheme', send: () => sendBasic(whole, { authorization: 'Basic' }), status: 401 },
    { name: 'a Bearer token', send: () => sendBasic(whole, { authorization: `Bearer ${ADMIN_TOKEN}` }), status: 401 },
    { name: 'an unknown scheme', send: () => sendBasic(whole, { authorization: 'Digest username="x"' }), status: 401 },
    // Credentials: OAuth.
    { name: 'OAuth without parameters', send: () => sendOAuth(whole, { header: 'OAuth' }), status: 401, challenge: OAUTH },
    { name: 'OAuth garbage', send: () => sendOAuth(whole, { header: 'OAuth ,,,=="' }), status: 401, challenge: OAUTH },
    { name: 'OAuth without oauth_signature', send: () => sendOAuth(whole, { edit: ({ oauth_signature: _s, ...p }) => p }), status: 401, challenge: OAUTH },
    { name: 'OAuth without oauth_nonce', send: () => sendOAuth(whole, { edit: ({ oauth_nonce: _n, ...p }) => p }), status: 401, challenge: OAUTH },
    { name: 'OAuth without oauth_timestamp', send: () => sendOAuth(whole, { edit: ({ oauth_timestamp: _t, ...p }) => p }), status: 401, challenge: OAUTH },
    { name: 'OAuth without oauth_consumer_key', send: () => sendOAuth(whole, { edit: ({ oauth_consumer_key: _k, ...p }) => p }), status: 401, challenge: OAUTH },
    { name: 'OAuth without oauth_signature_method', send: () => sendOAuth(whole, { edit: ({ oauth_signature_method: _m, ...p }) => p }), status: 401, challenge: OAUTH },
    { name: 'OAuth PLAINTEXT', send: () => sendOAuth(whole, { edit: (p) => ({ ...p, oauth_signature_method: 'PLAINTEXT', oauth_signature: `${oauth.secret}&` }) }), status: 401, challenge: OAUTH },
    { name: 'OAuth RSA-SHA1', send: () => sendOAuth(whole, { edit: (p) => ({ ...p, oauth_signature_method: 'RSA-SHA1' }) }), status: 401, challenge: OAUTH },
    { name: 'OAuth signature method named "constructor"', send: () => sendOAuth(whole, { edit: (p) => ({ ...p, oauth_signature_method: 'constructor' }) }), status: 401, challenge: OAUTH },
    { name: 'OAuth version 2.0', send: () => sendOAuth(whole, { edit: (p) => ({ ...p, oauth_version: '2.0' }) }), status: 401, challenge: OAUTH },
    { name: 'OAuth with an oauth_token', send: () => sendOAuth(whole, { token: { key: 'tok', secret: 'toksecret' } }), status: 401, challenge: OAUTH },
    { name: 'OAuth wrong secret', send: () => sendOAuth(whole, { secret: `${oauth.secret}x` }), status: 401, challenge: OAUTH },
    { name: 'OAuth stale timestamp (-600 s)', send: () => sendOAuth(whole, { timestamp: now() - 600 }), status: 401, challenge: OAUTH, detail: /timestamp/ },
    { name: 'OAuth future timestamp (+600 s)', send: () => sendOAuth(whole, { timestamp: now() + 600 }), status: 401, challenge: OAUTH, detail: /timestamp/ },
    { name: 'OAuth timestamp not a number', send: () => sendOAuth(whole, { edit: (p) => ({ ...p, oauth_timestamp: '1e9' }) }), status: 401, challenge: OAUTH },
    { name: 'OAuth wrong body hash (another body signed)', send: () => sendOAuth(whole, { signedBody: json(valid()) }), status: 401, challenge: OAUTH },
    { name: 'OAuth body hash edited', send: () => sendOAuth(whole, { edit: (p) => ({ ...p, oauth_body_hash: hash('sha1', 'other', 'base64') }) }), status: 401, challenge: OAUTH },
    { name: 'OAuth signed for another URL', send: () => sendOAuth(whole, { signedUrl: `${skyhook.url}/hooks` }), status: 401, challenge: OAUTH },
    { name: 'OAuth signed for GET', send: () => sendOAuth(whole, { method: 'GET' }), status: 401, challenge: OAUTH },
    { name: 'OAuth HMAC-SHA256 claimed, SHA-1 signed', send: () => sendOAuth(whole, { edit: (p) => ({ ...p, oauth_signature_method: 'HMAC-SHA256' }) }), status: 401, challenge: OAUTH },
    { name: 'OAuth duplicate parameter', send: () => sendOAuth(whole, { header: `${oauthHeader(whole)}, oauth_nonce="again"` }), status: 401, challenge: OAUTH },
    { name: 'OAuth unknown parameter', send: () => sendOAuth(whole, { header: `${oauthHeader(whole)}, foo="bar"` }), status: 401, challenge: OAUTH },
    { name: 'OAuth bad percent-encoding', send: () => sendOAuth(whole, { header: oauthHeader(whole).replace(/oauth_nonce="[^"]*"/, 'oauth_nonce="%zz"') }), status: 401, challenge: OAUTH },
    { name: 'OAuth header over 4 KiB', send: () => sendOAuth(whole, { header: `${oauthHeader(whole)}, realm="${'r'.repeat(5000)}"` }), status: 401, challenge: OAUTH },
    { name: 'OAuth consumer key of a BASIC webhook', send: () => sendOAuth(whole, { hook: basic }), status: 401, challenge: OAUTH },
    { name: 'another company’s OAuth credentials on this key', send: () => sendOAuth(whole, { hook: otherOAuth, path: oauth.path }), status: 401, challenge: OAUTH },
    { name: 'another company’s OAuth credentials, signed for that company’s key, sent to this one', send: () => sendOAuth(whole, { hook: otherOAuth, path: oauth.path, signedUrl: `${skyhook.url}${otherOAuth.path}` }), status: 401, challenge: OAUTH },
    // The href rule: the token must never leave for anything but the company's API.
    hrefCase('with credentials', 'http://user:pass@127.0.0.1:4010/api/rfqs/1'),
    hrefCase('with the API host as user name', 'http://127.0.0.1:4010@evil.example/api/rfqs/1'),
    hrefCase('file:', 'file:///etc/passwd'),
    hrefCase('gopher:', 'gopher://127.0.0.1:6379/_FLUSHALL'),
    hrefCase('javascript:', 'javascript:alert(document.cookie)'),
    hrefCase('data:', 'data:application/json,{"id":"x"}'),
    hrefCase('ftp:', 'ftp://127.0.0.1:4010/api/rfqs/1'),
    hrefCase('ws:', 'ws://127.0.0.1:4010/api/rfqs/1'),
    // Routes.
    { name: 'GET on the receiver', send: () => admin('GET', basic.path, { token: null }), status: 404 },
    { name: 'PUT on the shared receiver', send: () => admin('PUT', '/hooks', { body: whole, token: null }), status: 404 },
    { name: 'an unknown route', send: () => admin('POST', '/hooks/a/b/c', { body: whole, token: null }), status: 404 },
  ];
}

function adminCorpus(): BadRequest[] {
  const c = `/admin/companies/${company.id}`;
  const lead = { clientIdentifier: 'lead-1', inquiryLift: [{ aircraftType: 'Citation' }] };
  return [
    { name: 'admin: malformed JSON', send: () => admin('POST', '/admin/companies', { body: '{"name":' }), status: 400 },
    { name: 'admin: truncated JSON', send: () => admin('POST', '/admin/companies', { body: '{"name":"a","apiBaseUrl":"http://x/api","apiToken":"t"' }), status: 400 },
    { name: 'admin: a JSON array', send: () => admin('POST', '/admin/companies', { body: '[]' }), status: 400 },
    { name: 'admin: empty body with a JSON content type', send: () => admin('POST', '/admin/companies', { body: '' }), status: 400 },
    { name: 'admin: name a number', send: () => admin('POST', '/admin/companies', { body: json({ name: 5, apiBaseUrl: 'http://127.0.0.1:4010/api', apiToken: 't' }) }), status: 400 },
    { name: 'admin: apiToken missing', send: () => admin('POST', '/admin/companies', { body: json({ name: 'a', apiBaseUrl: 'http://127.0.0.1:4010/api' }) }), status: 400 },
    { name: 'admin: an unknown property', send: () => admin('POST', '/admin/companies', { body: json({ name: 'a', apiBaseUrl: 'http://127.0.0.1:4010/api', apiToken: 't', admin: true }) }), status: 400 },
    { name: 'admin: __proto__ property', send: () => admin('POST', '/admin/companies', { body: '{"name":"a","apiBaseUrl":"http://127.0.0.1:4010/api","apiToken":"t","__proto__":{"x":1}}' }), status: 400 },
    { name: 'admin: apiBaseUrl file:', send: () => admin('POST', '/admin/companies', { body: json({ name: 'a', apiBaseUrl: 'file:///etc/passwd', apiToken: 't' }) }), status: 400 },
    { name: 'admin: apiBaseUrl javascript:', send: () => admin('POST', '/admin/companies', { body: json({ name: 'a', apiBaseUrl: 'javascript:alert(1)', apiToken: 't' }) }), status: 400 },
    { name: 'admin: apiBaseUrl gopher:', send: () => admin('POST', '/admin/companies', { body: json({ name: 'a', apiBaseUrl: 'gopher://127.0.0.1:6379/_', apiToken: 't' }) }), status: 400 },
    { name: 'admin: apiBaseUrl with credentials', send: () => admin('POST', '/admin/companies', { body: json({ name: 'a', apiBaseUrl: 'http://u:p@127.0.0.1/api', apiToken: 't' }) }), status: 400 },
    { name: 'admin: apiBaseUrl not a URL', send: () => admin('POST', '/admin/companies', { body: json({ name: 'a', apiBaseUrl: 'sandbox', apiToken: 't' }) }), status: 400 },
    { name: 'admin: name empty after trimming', send: () => admin('POST', '/admin/companies', { body: json({ name: '   ', apiBaseUrl: 'http://127.0.0.1:4010/api', apiToken: 't' }) }), status: 400 },
    { name: 'admin: apiToken over 4096 characters', send: () => admin('POST', '/admin/companies', { body: json({ name: 'a', apiBaseUrl: 'http://127.0.0.1:4010/api', apiToken: 't'.repeat(4097) }) }), status: 400 },
    { name: 'admin: a body over 1 MiB', send: () => admin('POST', '/admin/companies', { body: json({ name: 'a', apiBaseUrl: 'http://x/api', apiToken: 't'.repeat(1024 * 1024 + 10) }) }), status: 413 },
    { name: 'admin: nested 10 000 deep', send: () => admin('POST', '/admin/companies', { body: `${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}` }), status: 400 },
    { name: 'admin: invalid UTF-8', send: () => admin('POST', '/admin/companies', { body: Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xff]), Buffer.from('","apiBaseUrl":"http://127.0.0.1:4010/api","apiToken":"t"}')]) }), status: 400 },
    { name: 'admin: NUL in the name', send: () => admin('POST', '/admin/companies', { body: json({ name: 'a\u0000b', apiBaseUrl: 'http://127.0.0.1:4010/api', apiToken: 't' }) }), status: 400 },
    { name: 'admin: a number jsonb cannot hold', send: () => admin('POST', '/admin/companies', { body: '{"name":"a","apiBaseUrl":"http://127.0.0.1:4010/api","apiToken":"t","n":1e999999}' }), status: 400, detail: /cannot store, 1e999999/ },
    // Not a notification, so no 415 rule: a 400 (the body is not the object asked for) is as clear.
    { name: 'admin: Content-Type text/plain', send: () => admin('POST', '/admin/companies', { body: '{}', contentType: 'text/plain' }), status: [400, 415] },
    { name: 'admin: company id not a UUID', send: () => admin('GET', '/admin/companies/1%20OR%201=1'), status: 400 },
    { name: 'admin: unknown company', send: () => admin('GET', '/admin/companies/00000000-0000-4000-8000-000000000000'), status: 404 },
    { name: 'admin: PATCH with nothing to change', send: () => admin('PATCH', c, { body: '{}' }), status: 400 },
    { name: 'admin: PATCH an unknown company', send: () => admin('PATCH', '/admin/companies/00000000-0000-4000-8000-000000000000', { body: json({ name: 'x' }) }), status: 404 },
    { name: 'admin: webhook authType FOO', send: () => admin('POST', `${c}/webhooks`, { body: json({ eventTypes: ['TripRequest'], authType: 'FOO' }) }), status: 400 },
    { name: 'admin: webhook without event types', send: () => admin('POST', `${c}/webhooks`, { body: json({ eventTypes: [], authType: 'BASIC' }) }), status: 400 },
    { name: 'admin: webhook with a repeated event type', send: () => admin('POST', `${c}/webhooks`, { body: json({ eventTypes: ['TripRequest', 'TripRequest'], authType: 'BASIC' }) }), status: 400 },
    { name: 'admin: webhook with an unknown event type', send: () => admin('POST', `${c}/webhooks`, { body: json({ eventTypes: ['Everything'], authType: 'BASIC' }) }), status: 400 },
    { name: 'admin: PATCH a webhook of another company', send: () => admin('PATCH', `${c}/webhooks/${otherBasic.id}`, { body: json({ active: false }) }), status: 404 },
    { name: 'admin: lead with a bad e-mail', send: () => admin('POST', `${c}/leads`, { body: json({ ...lead, leadContactInfo: { emailAddresses: [{ type: 'Work', emailAddress: 'not-an-email' }] } }) }), status: 400 },
    { name: 'admin: lead with a negative price', send: () => admin('POST', `${c}/leads`, { body: json({ ...lead, inquiryLift: [{ priceExpectation: -1 }] }) }), status: 400 },
    { name: 'admin: lead with a lower-case currency', send: () => admin('POST', `${c}/leads`, { body: json({ ...lead, leadCurrency: 'usd' }) }), status: 400 },
    { name: 'admin: empty-leg lead without searchId', send: () => admin('POST', `${c}/leads`, { body: json({ clientIdentifier: 'l2', inquiryLift: [{ emptyLegId: 'e1' }] }) }), status: 400 },
    { name: 'admin: quote without submission', send: () => admin('POST', `${c}/quotes`, { body: json({ requestId: 'r1' }) }), status: 400 },
    { name: 'admin: decline without decline', send: () => admin('POST', `${c}/declines`, { body: json({ requestId: 'r1' }) }), status: 400, detail: /decline/ },
    { name: 'admin: decline with an unknown reason', send: () => admin('POST', `${c}/declines`, { body: json({ requestId: 'r1', decline: { declineReason: 'NOPE' } }) }), status: 400, detail: /declineReason/ },
    { name: 'admin: decline with a reason not a string', send: () => admin('POST', `${c}/declines`, { body: json({ requestId: 'r1', decline: { declineReason: 7 } }) }), status: 400, detail: /declineReason/ },
    { name: 'admin: NUL in a decline message', send: () => admin('POST', `${c}/declines`, { body: '{"requestId":"r1","decline":{"declineReason":"OTHER","message":"a\\u0000"}}' }), status: 400 },
    { name: 'admin: NUL in a declines requestId filter', send: () => admin('GET', `${c}/declines?requestId=r%00`), status: 400, detail: /requestId/ },
    { name: 'admin: a decline id not a UUID', send: () => admin('GET', `${c}/declines/abc`), status: 400, detail: /declineId/ },
    { name: 'admin: notifications limit 100000', send: () => admin('GET', '/admin/notifications?limit=100000'), status: 400 },
    { name: 'admin: notifications status bogus', send: () => admin('GET', '/admin/notifications?status=bogus'), status: 400 },
    { name: 'admin: notifications companyId not a UUID', send: () => admin('GET', "/admin/notifications?companyId=x'--"), status: 400 },
    { name: 'admin: NUL in the type filter', send: () => admin('GET', '/admin/notifications?type=rfqs%00'), status: 400, detail: /type/ },
    { name: 'admin: NUL in the resources type filter', send: () => admin('GET', '/admin/resources?type=%00'), status: 400, detail: /type/ },
    { name: 'admin: NUL in a quote liftId filter', send: () => admin('GET', `${c}/quotes?liftId=lift%00`), status: 400, detail: /liftId/ },
    { name: 'admin: NUL in replay-all type', send: () => admin('POST', '/admin/notifications/replay', { body: '{"type":"rfqs\\u0000"}' }), status: 400 },
    { name: 'admin: a bad percent-encoding in the path', send: () => admin('GET', '/admin/companies/%zz'), status: 400 },
    { name: 'admin: a company id longer than the router takes', send: () => admin('GET', `/admin/companies/${'c'.repeat(500)}`), status: 414 },
    { name: 'admin: notification id not a number', send: () => admin('GET', '/admin/notifications/abc'), status: 400 },
    { name: 'admin: replay of a notification id -1', send: () => admin('POST', '/admin/notifications/-1/replay'), status: 400 },
    { name: 'admin: replay of an unknown notification', send: () => admin('POST', '/admin/notifications/999999999/replay'), status: 404 },
    { name: 'admin: replay-all limit 0', send: () => admin('POST', '/admin/notifications/replay', { body: json({ limit: 0 }) }), status: 400 },
    { name: 'admin: replay-all of discarded', send: () => admin('POST', '/admin/notifications/replay', { body: json({ status: 'discarded' }) }), status: 400 },
    { name: 'admin: wrong token', send: () => admin('GET', '/admin/companies', { token: `${ADMIN_TOKEN}x` }), status: 401 },
    { name: 'admin: no token, with a bad body', send: () => admin('POST', '/admin/companies', { body: '{"name":', token: null }), status: 401 },
    { name: 'admin: token in the query string', send: () => admin('GET', `/admin/companies?token=${ADMIN_TOKEN}`, { token: null }), status: 401 },
    { name: 'admin: Basic with the token as password (API)', send: () => fetch(`${skyhook.url}/admin/companies`, { headers: { authorization: basicAuthorization('admin', ADMIN_TOKEN) } }).then(readAnswer), status: 401 },
  ];
}

/** What the §5.2 corpus needs to exist: a destination of each company, and deliveries (a pending one) of each. */
interface DeliveryFixtures {
  destinationId: string;
  otherDestinationId: string;
  pendingDeliveryId: number;
  otherDeliveryId: number;
  eventId: number;
  otherEventId: number;
}

function deliveryCorpus(f: DeliveryFixtures): BadRequest[] {
  const c = `/admin/companies/${company.id}`;
  const d = `${c}/destinations/${f.destinationId}`;
  const nobody = '00000000-0000-4000-8000-000000000000';
  const url = 'http://127.0.0.1:9/hooks';
  const post = (body: unknown) => admin('POST', `${c}/destinations`, { body: typeof body === 'string' ? body : json(body) });
  const patch = (body: unknown) => admin('PATCH', d, { body: typeof body === 'string' ? body : json(body) });
  const replay = (body: unknown) => admin('POST', `${d}/replay`, { body: typeof body === 'string' ? body : json(body) });
  const get = (path: string) => admin('GET', `${c}${path}`);
  const base64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
  return [
    // Unknown ids: this company's, another company's, or none.
    { name: 'dest: list of an unknown company', send: () => admin('GET', `/admin/companies/${nobody}/destinations`), status: 404, names: nobody },
    { name: 'dest: create for an unknown company', send: () => admin('POST', `/admin/companies/${nobody}/destinations`, { body: json({ url }) }), status: 404, names: nobody },
    { name: 'dest: an unknown destination', send: () => get(`/destinations/${nobody}`), status: 404, names: `Destination ${nobody}` },
    { name: 'dest: another company’s destination', send: () => get(`/destinations/${f.otherDestinationId}`), status: 404, names: f.otherDestinationId },
    { name: 'dest: PATCH another company’s destination', send: () => admin('PATCH', `${c}/destinations/${f.otherDestinationId}`, { body: json({ description: 'x' }) }), status: 404, names: f.otherDestinationId },
    { name: 'dest: DELETE an unknown destination', send: () => admin('DELETE', `${c}/destinations/${nobody}`), status: 404, names: nobody },
    { name: 'dest: the secret of another company’s destination', send: () => get(`/destinations/${f.otherDestinationId}/secret`), status: 404, names: f.otherDestinationId },
    { name: 'dest: test an unknown destination', send: () => admin('POST', `${c}/destinations/${nobody}/test`), status: 404, names: nobody },
    { name: 'dest: replay an unknown destination', send: () => admin('POST', `${c}/destinations/${nobody}/replay`, { body: '{}' }), status: 404, names: nobody },
    { name: 'deliveries of an unknown company', send: () => admin('GET', `/admin/companies/${nobody}/deliveries`), status: 404, names: nobody },
    { name: 'an unknown delivery', send: () => get('/deliveries/999999999'), status: 404, names: 'Delivery 999999999' },
    { name: 'another company’s delivery', send: () => get(`/deliveries/${f.otherDeliveryId}`), status: 404, names: `Delivery ${f.otherDeliveryId}` },
    { name: 'replay of another company’s delivery', send: () => admin('POST', `${c}/deliveries/${f.otherDeliveryId}/replay`), status: 404, names: `Delivery ${f.otherDeliveryId}` },
    { name: 'events of an unknown company', send: () => admin('GET', `/admin/companies/${nobody}/events`), status: 404, names: nobody },
    { name: 'the event stream of an unknown company', send: () => admin('GET', `/admin/companies/${nobody}/events/stream`), status: 404, names: nobody },
    { name: 'an unknown event', send: () => get('/events/999999999'), status: 404, names: 'Event 999999999' },
    { name: 'another company’s event', send: () => get(`/events/${f.otherEventId}`), status: 404, names: `Event ${f.otherEventId}` },
    // Ids that are not ids.
    { name: 'dest: destination id not a UUID', send: () => get('/destinations/not-a-uuid'), status: 400, names: 'params.destinationId' },
    { name: 'dest: NUL as the destination id', send: () => get('/destinations/%00'), status: 400, names: 'params.destinationId' },
    { name: 'dest: company id not a UUID', send: () => admin('GET', '/admin/companies/acme/destinations'), status: 400, names: 'params.companyId' },
    { name: 'deliveries: destinationId not a UUID', send: () => get("/deliveries?destinationId=x'--"), status: 400, names: 'querystring.destinationId' },
    { name: 'delivery id not a number', send: () => get('/deliveries/abc'), status: 400, names: 'params.deliveryId' },
    { name: 'delivery id negative', send: () => get('/deliveries/-1'), status: 400, names: 'params.deliveryId' },
    { name: 'delivery id beyond a safe integer', send: () => get('/deliveries/99999999999999999999'), status: 400, names: 'params.deliveryId' },
    { name: 'replay of delivery id 0', send: () => admin('POST', `${c}/deliveries/0/replay`), status: 400, names: 'params.deliveryId' },
    { name: 'event id not a number', send: () => get('/events/first'), status: 400, names: 'params.eventId' },
    // Bodies that are not JSON, or not the object asked for.
    { name: 'dest: malformed JSON', send: () => post('{"url":'), status: 400 },
    { name: 'dest: a JSON array', send: () => post('[]'), status: 400 },
    { name: 'dest: PATCH malformed JSON', send: () => patch('{'), status: 400 },
    { name: 'dest: replay body not JSON', send: () => replay('since yesterday'), status: 400 },
    { name: 'dest: url missing', send: () => post({ description: 'x' }), status: 400, names: 'body.url' },
    { name: 'dest: url a number', send: () => post({ url: 42 }), status: 400, names: 'body.url' },
    { name: 'dest: active a string', send: () => post({ url, active: 'false' }), status: 400, names: 'body.active' },
    { name: 'dest: Content-Type text/plain', send: () => admin('POST', `${c}/destinations`, { body: json({ url }), contentType: 'text/plain' }), status: [400, 415] },
    // Unknown fields.
    { name: 'dest: a secret of its own', send: () => post({ url, secret: 'whsec_AAAA' }), status: 400, names: 'secret' },
    { name: 'dest: PATCH an unknown field', send: () => patch({ urll: url }), status: 400, names: 'urll' },
    { name: 'dest: an unknown filter field', send: () => patch({ filter: { resourceTypes: ['rfqs'], companies: ['x'] } }), status: 400, names: 'companies' },
    { name: 'dest: an unknown rotateSecret field', send: () => patch({ rotateSecret: { graceSeconds: 5, now: true } }), status: 400, names: 'now' },
    { name: 'dest: an unknown replay field', send: () => replay({ force: true }), status: 400, names: 'force' },
    // Over-long strings and NUL characters.
    { name: 'dest: url over 2048 characters', send: () => post({ url: `${url}/${'u'.repeat(2048)}` }), status: 400, names: 'body.url' },
    { name: 'dest: description over 500 characters', send: () => post({ url, description: 'd'.repeat(501) }), status: 400, names: 'body.description' },
    { name: 'dest: a resource type over 100 characters', send: () => patch({ filter: { resourceTypes: ['r'.repeat(101)] } }), status: 400, names: 'body.filter.resourceTypes.0' },
    { name: 'dest: NUL in the description', send: () => post({ url, description: 'a\u0000b' }), status: 400, names: 'body.description' },
    { name: 'dest: NUL in the url', send: () => post({ url: `${url}\u0000x` }), status: 400, names: 'body.url' },
    { name: 'dest: lone surrogate in the description', send: () => patch(`{"description":"a\\ud800"}`), status: 400, names: 'body.description' },
    { name: 'dest: NUL in an event type', send: () => patch({ filter: { eventTypes: ['TripRequest\u0000'] } }), status: 400, names: 'body.filter.eventTypes.0' },
    { name: 'deliveries: resourceId over 200 characters', send: () => get(`/deliveries?resourceId=${'r'.repeat(201)}`), status: 400, names: 'querystring.resourceId' },
    { name: 'deliveries: NUL in resourceId', send: () => get('/deliveries?resourceId=r%00'), status: 400, names: 'querystring.resourceId' },
    { name: 'events: after over 200 characters', send: () => get(`/events?after=${'e'.repeat(201)}`), status: 400, names: 'querystring.after' },
    { name: 'events: NUL in after', send: () => get('/events?after=e1.%00'), status: 400, names: 'querystring.after' },
    // URLs.
    { name: 'dest: url not a URL', send: () => post({ url: 'our crm' }), status: 400, names: 'url' },
    { name: 'dest: url empty', send: () => post({ url: '' }), status: 400, names: 'body.url' },
    { name: 'dest: url ftp:', send: () => post({ url: 'ftp://127.0.0.1/hooks' }), status: 400, names: 'url' },
    { name: 'dest: url javascript:', send: () => post({ url: 'javascript:alert(1)' }), status: 400, names: 'url' },
    { name: 'dest: url with credentials', send: () => post({ url: 'http://user:pw@127.0.0.1:9/hooks' }), status: 400, names: 'url' },
    { name: 'dest: url with a fragment', send: () => post({ url: `${url}#crm` }), status: 400, names: 'url' },
    { name: 'dest: url on a private network', send: () => post({ url: 'https://10.0.0.1/hooks' }), status: 400, names: 'url' },
    { name: 'dest: url on the cloud metadata address', send: () => post({ url: 'http://169.254.169.254/latest/' }), status: 400, names: 'url' },
    { name: 'dest: url on an IPv4-mapped private address', send: () => post({ url: 'http://[::ffff:192.168.1.1]/hooks' }), status: 400, names: 'url' },
    { name: 'dest: PATCH url file:', send: () => patch({ url: 'file:///etc/passwd' }), status: 400, names: 'url' },
    // Filter lists.
    { name: 'dest: a repeated resource type', send: () => post({ url, filter: { resourceTypes: ['rfqs', 'rfqs'] } }), status: 400, names: 'body.filter.resourceTypes' },
    { name: 'dest: a repeated event type', send: () => patch({ filter: { eventTypes: ['TripRequest', 'TripRequest'] } }), status: 400, names: 'body.filter.eventTypes' },
    { name: 'dest: an empty resource type list', send: () => patch({ filter: { resourceTypes: [] } }), status: 400, names: 'body.filter.resourceTypes' },
    { name: 'dest: 51 resource types', send: () => patch({ filter: { resourceTypes: Array.from({ length: 51 }, (_, i) => `t${i}`) } }), status: 400, names: 'body.filter.resourceTypes' },
    { name: 'dest: a resource type with a space', send: () => patch({ filter: { resourceTypes: ['rfqs list'] } }), status: 400, names: 'body.filter.resourceTypes.0' },
    { name: 'dest: a filter that is a list', send: () => patch({ filter: ['rfqs'] }), status: 400, names: 'body.filter' },
    // Limits out of range.
    { name: 'dest: maxConcurrency 0', send: () => post({ url, maxConcurrency: 0 }), status: 400, names: 'body.maxConcurrency' },
    { name: 'dest: maxConcurrency 1001', send: () => patch({ maxConcurrency: 1001 }), status: 400, names: 'body.maxConcurrency' },
    { name: 'dest: maxConcurrency 1.5', send: () => patch({ maxConcurrency: 1.5 }), status: 400, names: 'body.maxConcurrency' },
    { name: 'dest: ratePerSecond 0', send: () => patch({ ratePerSecond: 0 }), status: 400, names: 'body.ratePerSecond' },
    { name: 'dest: ratePerSecond 10001', send: () => post({ url, ratePerSecond: 10_001 }), status: 400, names: 'body.ratePerSecond' },
    { name: 'dest: timeoutMs 99', send: () => patch({ timeoutMs: 99 }), status: 400, names: 'body.timeoutMs' },
    { name: 'dest: timeoutMs 60001', send: () => post({ url, timeoutMs: 60_001 }), status: 400, names: 'body.timeoutMs' },
    { name: 'dest: graceSeconds -1', send: () => patch({ rotateSecret: { graceSeconds: -1 } }), status: 400, names: 'body.rotateSecret.graceSeconds' },
    { name: 'dest: graceSeconds over 30 days', send: () => patch({ rotateSecret: { graceSeconds: 30 * 86_400 + 1 } }), status: 400, names: 'body.rotateSecret.graceSeconds' },
    { name: 'dest: list limit 0', send: () => get('/destinations?limit=0'), status: 400, names: 'querystring.limit' },
    { name: 'deliveries: limit 100000', send: () => get('/deliveries?limit=100000'), status: 400, names: 'querystring.limit' },
    { name: 'events: limit 0', send: () => get('/events?limit=0'), status: 400, names: 'querystring.limit' },
    { name: 'events: limit 501', send: () => get('/events?limit=501'), status: 400, names: 'querystring.limit' },
    // PATCH rules.
    { name: 'dest: PATCH with nothing to change', send: () => patch({}), status: 400 },
    { name: 'dest: skipBefore alone', send: () => patch({ skipBefore: '2026-01-01T00:00:00Z' }), status: 400, names: 'skipBefore' },
    { name: 'dest: skipBefore with active false', send: () => patch({ active: false, skipBefore: '2026-01-01T00:00:00Z' }), status: 400, names: 'skipBefore' },
    { name: 'dest: skipBefore not an instant', send: () => patch({ active: true, skipBefore: 'yesterday' }), status: 400, names: 'body.skipBefore' },
    { name: 'dest: skipBefore without its offset', send: () => patch({ active: true, skipBefore: '2026-01-01T00:00:00' }), status: 400, names: 'body.skipBefore' },
    // Replays and filters.
    { name: 'replay of a pending delivery', send: () => admin('POST', `${c}/deliveries/${f.pendingDeliveryId}/replay`), status: 409, names: `Delivery ${f.pendingDeliveryId} is pending` },
    { name: 'dest: replay of pending ones', send: () => replay({ status: 'pending' }), status: 400, names: 'body.status' },
    { name: 'dest: replay since not an instant', send: () => replay({ since: 'last week' }), status: 400, names: 'body.since' },
    { name: 'dest: replay dryRun a string', send: () => replay({ dryRun: 'yes' }), status: 400, names: 'body.dryRun' },
    { name: 'deliveries: status bogus', send: () => get('/deliveries?status=bogus'), status: 400, names: 'querystring.status' },
    { name: 'deliveries: after not an instant', send: () => get('/deliveries?after=yesterday'), status: 400, names: 'querystring.after' },
    // Cursors.
    { name: 'events: a cursor not one the feed wrote', send: () => get('/events?after=nonsense'), status: 400, names: '"after"' },
    { name: 'events: a cursor cut to its prefix', send: () => get('/events?after=e1.'), status: 400, names: '"after"' },
    { name: 'events: a negative cursor', send: () => get(`/events?after=e1.${Buffer.from('-1').toString('base64url')}`), status: 400, names: '"after"' },
    { name: 'events stream: a bad cursor', send: () => get('/events/stream?after=nonsense'), status: 400, names: '"after"' },
    { name: 'deliveries: a bad cursor', send: () => get('/deliveries?cursor=nonsense'), status: 400, names: '"cursor"' },
    { name: 'deliveries: a cursor of text', send: () => get(`/deliveries?cursor=${base64('12')}`), status: 400, names: '"cursor"' },
    { name: 'dest: a bad list cursor', send: () => get('/destinations?cursor=nonsense'), status: 400, names: '"cursor"' },
    { name: 'dest: a list cursor of 36 hyphens', send: () => get(`/destinations?cursor=${base64('-'.repeat(36))}`), status: 400, names: '"cursor"' },
  ];
}

function expectProblem(name: string, answer: ReceiverAnswer, status: number | number[]): void {
  const statuses = Array.isArray(status) ? status : [status];
  expect(statuses, `${name}: ${answer.status} ${answer.text.slice(0, 300)}`).toContain(answer.status);
  expect(answer.headers.get('content-type'), `${name}: content-type`).toMatch(/^application\/problem\+json\b/);
  expect(answer.json, name).toMatchObject({ status: answer.status, title: expect.any(String) });
}

/** Sends each case in turn; answers the first failed expectation of every case not answered as expected. */
async function corpusFailures(cases: BadRequest[]): Promise<string[]> {
  const failures: string[] = [];
  for (const c of cases) {
    const before = await rowCounts();
    const answer = await c.send();
    try {
      expectProblem(c.name, answer, c.status);
      if (c.challenge) expect(answer.headers.get('www-authenticate'), `${c.name}: challenge`).toBe(c.challenge);
      if (c.detail) expect(String(answer.json?.detail), `${c.name}: detail`).toMatch(c.detail);
      if (c.names) expect(JSON.stringify([answer.json?.detail, answer.json?.errors]), `${c.name}: names`).toContain(c.names);
      const { audit_log: auditBefore = 0, ...dataBefore } = before;
      const { audit_log: auditAfter = 0, ...dataAfter } = await rowCounts();
      expect(dataAfter, `${c.name}: rows`).toEqual(dataBefore);
      // The audit log says a change was asked for and refused (SPEC §10.1), in one row, and nothing else; a
      // request its schema refused never reached a change and is not an entry.
      const { rows } = await fx.pool.query<{ outcome: string; status: number | null }>("SELECT outcome, (details->>'status')::int AS status FROM audit_log ORDER BY id DESC LIMIT $1", [auditAfter - auditBefore]);
      expect(rows, `${c.name}: audit`).toEqual(rows.length === 0 ? [] : [{ outcome: 'refused', status: answer.status }]);
    } catch (err) {
      failures.push((err as Error).message.split('\n')[0]!);
    }
  }
  return failures;
}

describe('a corpus of bad requests', () => {
  it('has at least 60 cases', () => {
    expect(receiverCorpus().length + adminCorpus().length).toBeGreaterThanOrEqual(60);
  });

  it('the receiver answers each with its 4xx problem and stores nothing', async () => {
    expect(await corpusFailures(receiverCorpus()), 'bad requests not answered as expected').toEqual([]);
  }, 60_000);

  it('the admin API answers each with its 4xx problem and stores nothing', async () => {
    expect(await corpusFailures(adminCorpus()), 'bad admin requests not answered as expected').toEqual([]);
  }, 60_000);

  it("an href under none of the company's base URLs is answered 200 not_fetched, stored processed and never queued", async () => {
    for (const [name, href] of OFF_SCOPE_HREFS) {
      const answer = await sendBasic(json({ ...valid(), href }));
      expect(answer.status, name).toBe(200);
      expect(answer.json, name).toMatchObject({ status: 'not_fetched' });
      const { rows } = await fx.pool.query('SELECT status, outcome, queued_at FROM notifications WHERE id = $1', [Number(answer.json?.id)]);
      expect(rows, name).toEqual([{ status: 'processed', outcome: 'not_fetched', queued_at: null }]);
    }
  });

  it('a replayed OAuth nonce is refused (the first request is stored, the replay is not)', async () => {
    const raw = json(valid());
    const header = oauthHeader(raw);
    const before = await rowCounts();
    expect((await sendOAuth(raw, { header })).status).toBe(200);
    const replay = await sendOAuth(raw, { header });
    expectProblem('replay', replay, 401);
    expect(replay.headers.get('www-authenticate')).toBe(OAUTH);
    expect((await rowCounts()).notifications).toBe(before.notifications! + 1);
  });

  const malformedHttp = (): [string, string, number][] => [
    ['a garbage request line', 'GARBAGE\r\n\r\n', 400],
    ['a header over 16 KiB', `POST ${basic.path} HTTP/1.1\r\nHost: x\r\nX-Pad: ${'p'.repeat(20_000)}\r\nContent-Length: 0\r\n\r\n`, 431],
    ['a Content-Length larger than the body', `POST ${basic.path} HTTP/1.1\r\nHost: x\r\nAuthorization: ${basicAuthorization(basic.clientIdentifier, basic.secret)}\r\nContent-Type: application/json\r\nContent-Length: 10\r\nConnection: close\r\n\r\n{}`, 400],
    ['two Content-Length headers', `POST ${basic.path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`, 400],
  ];

  it('malformed HTTP itself (not reaching a route) gets a 4xx and leaves nothing behind', async () => {
    for (const [name, request, status] of malformedHttp()) {
      const before = await rowCounts();
      const answer = await rawHttp(request);
      expect(answer.status, `${name}: ${answer.text.slice(0, 120)}`).toBe(status);
      expect(await rowCounts(), `${name}: rows`).toEqual(before);
    }
  });

  it('malformed HTTP is answered as application/problem+json too (SPEC §4: errors are RFC 9457 problems)', async () => {
    const failures: string[] = [];
    for (const [name, request] of malformedHttp()) {
      const answer = await rawHttp(request);
      const type = answer.headers.get('content-type') ?? '';
      if (!/^application\/problem\+json\b/.test(type)) failures.push(`${name}: ${answer.status} ${type} ${answer.text.slice(0, 100)}`);
    }
    expect(failures, 'answered by Fastify’s default clientErrorHandler, not as problems').toEqual([]);
  });

  it('a body the database refuses does not take the valid notifications committed with it down (group commit)', async () => {
    const before = await rowCounts();
    const good = Array.from({ length: 30 }, () => json(valid()));
    const poison = `${json(valid()).slice(0, -1)},"note":"\\ud800"}`;
    const answers = await Promise.all([...good.map((raw) => sendBasic(raw)), sendBasic(poison), sendBasic(poison)]);
    expect(answers.slice(0, good.length).map((a) => a.status)).toEqual(good.map(() => 200));
    expect((await rowCounts()).notifications).toBe(before.notifications! + good.length);
  });

  it('a body cut off mid-way (the client goes away) leaves nothing behind', async () => {
    const before = await rowCounts();
    const whole = Buffer.from(json(valid()));
    await new Promise<void>((resolve) => {
      const req = httpRequest(`${skyhook.url}${basic.path}`, {
        method: 'POST',
        headers: { authorization: basicAuthorization(basic.clientIdentifier, basic.secret), 'content-type': 'application/json', 'content-length': String(whole.length) },
      });
      req.on('error', () => resolve());
      req.write(whole.subarray(0, 10), () => setTimeout(() => (req.destroy(), resolve()), 100));
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(await rowCounts()).toEqual(before);
  });

  it('leaves the process healthy: /healthz answers and valid notifications are still accepted', async () => {
    expect((await fetch(`${skyhook.url}/healthz`)).status).toBe(200);
    const before = await rowCounts();
    const b = await sendBasic(json(valid()));
    expect(b.status, b.text).toBe(200);
    const raw = json(valid());
    const o = await sendOAuth(raw);
    expect(o.status, o.text).toBe(200);
    const s = await sendBasic(json(valid()), { hook: sharedBasic, path: '/hooks' });
    expect(s.status, s.text).toBe(200);
    expect((await rowCounts()).notifications).toBe(before.notifications! + 3);
    const companies = await admin('GET', '/admin/companies');
    expect(companies.status).toBe(200);
  });
});

describe('bad input on the destinations, deliveries and events routes (SPEC §5.2)', () => {
  let fixtures: DeliveryFixtures;

  beforeAll(async () => {
    const destinationOf = async (c: SeededCompany) => {
      const created = await admin('POST', `/admin/companies/${c.id}/destinations`, { body: json({ url: 'http://127.0.0.1:9/hooks' }) });
      expect(created.status, created.text).toBe(201);
      return String(created.json!.id);
    };
    // An event of each company with a delivery: this api-only Skyhook sends none, so they stay pending.
    const pendingDelivery = async (c: SeededCompany, destinationId: string) => {
      const { rows: [event] } = await fx.pool.query<{ id: string }>(
        `INSERT INTO events (company_id, seq, type, resource_id, href, snapshot_version, snapshot) VALUES ($1, 1, 'rfqs', 'r1', $2, 1, '{}') RETURNING id`,
        [c.id, `${c.apiBaseUrl}/rfqs/r1`],
      );
      const { rows: [delivery] } = await fx.pool.query<{ id: string }>(
        `INSERT INTO deliveries (company_id, destination_id, event_id, href, resource_type, resource_id, version) VALUES ($1, $2, $3, $4, 'rfqs', 'r1', 1) RETURNING id`,
        [c.id, destinationId, event!.id, `${c.apiBaseUrl}/rfqs/r1`],
      );
      return { eventId: Number(event!.id), deliveryId: Number(delivery!.id) };
    };
    const destinationId = await destinationOf(company);
    const otherDestinationId = await destinationOf(other);
    const ours = await pendingDelivery(company, destinationId);
    const theirs = await pendingDelivery(other, otherDestinationId);
    fixtures = { destinationId, otherDestinationId, pendingDeliveryId: ours.deliveryId, otherDeliveryId: theirs.deliveryId, eventId: ours.eventId, otherEventId: theirs.eventId };
  });

  it('answers each with its 4xx problem naming the field or the unknown id, and stores nothing', async () => {
    const cases = deliveryCorpus(fixtures);
    expect(cases.length).toBeGreaterThanOrEqual(80);
    expect(await corpusFailures(cases), 'bad §5.2 requests not answered as expected').toEqual([]);
  }, 60_000);

  it('leaves what exists as it was: the destination, its secret, its pending delivery', async () => {
    const c = `/admin/companies/${company.id}`;
    const destination = await admin('GET', `${c}/destinations/${fixtures.destinationId}`);
    expect(destination.json).toMatchObject({ url: 'http://127.0.0.1:9/hooks', description: '', filter: { resourceTypes: null, eventTypes: null }, active: true, limits: { maxConcurrency: null, ratePerSecond: null, timeoutMs: null } });
    expect((await admin('GET', `${c}/destinations/${fixtures.destinationId}/secret`)).json).toMatchObject({ previousSecret: null });
    expect((await admin('GET', `${c}/deliveries/${fixtures.pendingDeliveryId}`)).json).toMatchObject({ status: 'pending', replay: false, attempts: 0 });
  });
});

// ---- fuzzing ----------------------------------------------------------------------------------

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed);
const ITERATIONS = Number(process.env.FUZZ_ITERATIONS ?? 3000);

class Gen {
  constructor(readonly random: () => number) {}
  int(n: number): number {
    return Math.floor(this.random() * n);
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }
  chance(p: number): boolean {
    return this.random() < p;
  }
  string(alphabet: readonly string[], max: number): string {
    let s = '';
    const n = this.int(max + 1);
    for (let i = 0; i < n; i++) s += this.pick(alphabet);
    return s;
  }
  /** Inserts, deletes, replaces or duplicates characters; or truncates. */
  mutate(s: string, alphabet: readonly string[]): string {
    let out = s;
    const edits = 1 + this.int(3);
    for (let e = 0; e < edits; e++) {
      const i = this.int(out.length + 1);
      switch (this.int(5)) {
        case 0:
          out = out.slice(0, i) + this.pick(alphabet) + out.slice(i);
          break;
        case 1:
          out = out.slice(0, i) + out.slice(i + 1 + this.int(4));
          break;
        case 2:
          out = out.slice(0, i) + this.pick(alphabet) + out.slice(i + 1);
          break;
        case 3:
          out = out.slice(0, i) + out.slice(Math.max(0, i - 8), i) + out.slice(i);
          break;
        default:
          out = out.slice(0, i);
      }
    }
    return out;
  }
}

const OAUTH_ALPHABET = ['OAuth', 'oauth', ' ', '  ', '\t', ',', '=', '"', '%', '%2', '%zz', '%41', '%E2%82%AC', '%C3', 'oauth_', 'consumer_key', 'nonce', 'signature', 'signature_method', 'timestamp', 'token', 'body_hash', 'version', 'realm', '__proto__', 'constructor', 'a', 'Z', '9', '-', '.', '_', '~', '+', '/', 'é', '€', '\u0000', '\n', 'HMAC-SHA1', '1.0'];

function signedRequest(g: Gen) {
  const secret = `s${g.int(1e9)}`;
  const url = g.pick(['http://127.0.0.1:3000/hooks', 'https://skyhook.example.com/hooks/abc?x=1&y=%20', 'http://localhost:8080/hooks/k~e.y']);
  const rawBody = json({ id: `r${g.int(1e6)}`, type: 'rfqs', href: 'http://127.0.0.1:4010/api/rfqs/1', note: g.string(['a', 'é', ' ', '"', '\\'], 10) });
  const signatureMethod = g.pick(['HMAC-SHA1', 'HMAC-SHA256'] as const);
  const timestamp = 1_700_000_000 + g.int(1_000_000);
  const header = oauthAuthorization({ clientIdentifier: `skh_${g.int(1e9)}`, secret, url, rawBody, signatureMethod, timestamp, realm: g.chance(0.3) ? 'skyhook' : undefined });
  return { secret, url: new URL(url), rawBody, header, timestamp };
}

/**
 * parseOAuthHeader's documented contract: a record of oauth_* (and realm) strings, or OAuthHeaderError.
 * A plain object: none of those names is one Object.prototype has, and nothing inherited is enumerable.
 */
function checkedParse(header: string): Record<string, string> | OAuthHeaderError {
  try {
    const params = parseOAuthHeader(header);
    const inherited: string[] = [];
    for (const k in params) if (!Object.hasOwn(params, k)) inherited.push(k);
    expect(inherited, header).toEqual([]);
    for (const [k, v] of Object.entries(params)) {
      expect(k.startsWith('oauth_') || k === 'realm', `${header} -> key ${k}`).toBe(true);
      expect(typeof v).toBe('string');
    }
    return params;
  } catch (err) {
    if (err instanceof OAuthHeaderError) return err;
    throw new Error(`parseOAuthHeader(${JSON.stringify(header.slice(0, 200))}) threw ${String(err)}`, { cause: err });
  }
}

const signedPart = (p: Record<string, string>) => {
  const { oauth_signature: _s, realm: _r, ...rest } = p;
  return rest;
};

describe(`fuzz (seed ${SEED}, ${ITERATIONS} iterations each)`, () => {
  it('parseOAuthHeader and readOAuthHeader: only OAuthHeaderError / null, never a foreign key, never a throw', () => {
    const g = new Gen(prng(SEED));
    for (let i = 0; i < ITERATIONS; i++) {
      const header = g.chance(0.5) ? `OAuth ${g.string(OAUTH_ALPHABET, 40)}` : g.string(OAUTH_ALPHABET, 40);
      checkedParse(header);
      const read = readOAuthHeader(header);
      if (read !== null) {
        expect(read.clientIdentifier.length).toBeGreaterThan(0);
        expect(read.clientIdentifier).toBe(read.params.oauth_consumer_key);
      }
    }
    // Very long headers are refused without a regular-expression blow-up.
    const started = Date.now();
    for (const header of [`OAuth ${'oauth_a="b", '.repeat(400)}`, `OAuth oauth_a="${'%'.repeat(4000)}`, `OAuth ${' '.repeat(4000)}x`, `OAuth oauth_${'a'.repeat(4000)}`]) {
      checkedParse(header);
    }
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('parseOAuthHeader reads back exactly what was serialised (any oauth_* values, any characters)', () => {
    const g = new Gen(prng(SEED + 1));
    const valueAlphabet = ['a', 'Z', '0', ' ', '"', ',', '=', '%', '+', '/', '&', 'é', '€', '😀', '\\', '\t', ''];
    for (let i = 0; i < ITERATIONS; i++) {
      const params: Record<string, string> = {};
      const n = 1 + g.int(8);
      for (let k = 0; k < n; k++) params[`oauth_${g.string(['a', 'b', '_', '9', '.', '~', '-'], 8)}`] = g.string(valueAlphabet, 12);
      if (g.chance(0.3)) params.realm = g.string(valueAlphabet, 6);
      const header = serialiseOAuth(params);
      const parsed = checkedParse(g.chance(0.5) ? header : header.replaceAll(', ', ','));
      expect(parsed instanceof OAuthHeaderError ? parsed.message : { ...parsed }, header).toEqual(params);
    }
  });

  it('verifyOAuthHeader: never throws on a mutated header; accepts it only if the signed content is unchanged', () => {
    const g = new Gen(prng(SEED + 2));
    let accepted = 0;
    for (let i = 0; i < ITERATIONS; i++) {
      const r = signedRequest(g);
      const original = parseOAuthHeader(r.header);
      const opts = { nowSeconds: r.timestamp, skewSeconds: 300 };
      const baseline = verifyOAuthHeader({ clientIdentifier: original.oauth_consumer_key!, params: original }, { method: 'POST', url: r.url }, [r.secret], opts);
      expect(baseline.ok, r.header).toBe(true);
      expect(bodyHashMatches(baseline as OAuthHeaderCheck, Buffer.from(r.rawBody))).toBe(true);

      const mutated = g.mutate(r.header, OAUTH_ALPHABET);
      const read = readOAuthHeader(mutated);
      if (!read) continue;
      const check = verifyOAuthHeader(read, { method: 'POST', url: r.url }, [r.secret], opts);
      if (check.ok) {
        accepted++;
        // Whatever changed was not signed content: the same parameters, the same signature bytes.
        expect(signedPart(read.params), mutated).toEqual(signedPart(original));
        expect(Buffer.from(read.params.oauth_signature!, 'base64').equals(Buffer.from(original.oauth_signature!, 'base64')), mutated).toBe(true);
      }
      // Another body never passes the body hash of the signed one.
      const otherBody = g.mutate(r.rawBody, ['x', '"', '}', ' ', 'é']);
      if (otherBody !== r.rawBody) expect(bodyHashMatches(baseline as OAuthHeaderCheck, Buffer.from(otherBody))).toBe(false);
      // Nor another secret, method or URL.
      const p = { clientIdentifier: original.oauth_consumer_key!, params: original };
      expect(verifyOAuthHeader(p, { method: 'POST', url: r.url }, [`${r.secret}x`], opts).ok).toBe(false);
      expect(verifyOAuthHeader(p, { method: 'PUT', url: r.url }, [r.secret], opts).ok).toBe(false);
      expect(verifyOAuthHeader(p, { method: 'POST', url: new URL(`${r.url.origin}/hooks/other`) }, [r.secret], opts).ok).toBe(false);
    }
    // The generator does produce harmless mutations too (whitespace, realm), so the checks on an accepted
    // header above really ran.
    expect(accepted, 'mutated headers that still verified').toBeGreaterThan(0);
  });

  it('parseNotification: only a 400 Problem; what it accepts is a storable {id, type, href} object', () => {
    const g = new Gen(prng(SEED + 3));
    const strings = ['a', 'Z', ' ', 'é', '😀', '\u0000', '\ud800', '\udfff', '"', '\\', '/', 'http://127.0.0.1:4010/api/rfqs/1', 'https://x', '', 'x'.repeat(600)];
    const keys = ['id', 'type', 'href', 'extra', '__proto__', 'constructor', 'k\u0000', '\ud800'];
    const value = (depth: number): unknown => {
      switch (g.int(depth > 70 ? 4 : 7)) {
        case 0:
          return g.string(strings, 3);
        case 1:
          return g.pick([0, -1, 1.5, 1e308, Number.MAX_SAFE_INTEGER + 2]);
        case 2:
          return g.pick([true, false, null]);
        case 3:
          return g.pick(['http://127.0.0.1:4010/api/rfqs/1', 'rfqs', 'not a url', '']);
        case 4:
          return Array.from({ length: g.int(3) }, () => value(depth + 1));
        default: {
          const o: Record<string, unknown> = {};
          for (let k = 0; k < g.int(4); k++) o[g.pick(keys)] = value(depth + 1);
          return o;
        }
      }
    };
    const notificationLike = () => {
      const o: Record<string, unknown> = { id: g.string(strings, 3), type: g.pick(['rfqs', 'leads', '', 5]), href: g.pick(['http://127.0.0.1:4010/api/rfqs/1', 'relative', `http://h/${'p'.repeat(2100)}`]) };
      if (g.chance(0.5)) o.extra = value(g.chance(0.1) ? 60 : 0);
      return o;
    };
    let acceptedCount = 0;
    for (let i = 0; i < ITERATIONS; i++) {
      let raw: Buffer;
      const text = JSON.stringify(g.chance(0.7) ? notificationLike() : value(0)) ?? 'null';
      switch (g.int(4)) {
        case 0:
          raw = Buffer.from(text);
          break;
        case 1:
          raw = Buffer.from(g.mutate(text, ['{', '}', '"', ',', ':', '\\', '\\u', '\\u0000', '\\ud800', 'é', ' ']));
          break;
        case 2: {
          raw = Buffer.from(text);
          if (raw.length > 0) raw[g.int(raw.length)] = g.int(256);
          break;
        }
        default:
          raw = Buffer.from(Array.from({ length: g.int(40) }, () => g.int(256)));
      }
      let body: Record<string, unknown>;
      try {
        body = parseNotification(raw).body as unknown as Record<string, unknown>;
      } catch (err) {
        if (!(err instanceof Problem) || err.status !== 400) throw new Error(`parseNotification(${JSON.stringify(raw.toString('latin1').slice(0, 200))}) threw ${String(err)}`, { cause: err });
        continue;
      }
      acceptedCount++;
      const shown = raw.toString('utf8').slice(0, 200);
      expect(typeof body === 'object' && body !== null && !Array.isArray(body), shown).toBe(true);
      for (const [field, max] of [['id', 512], ['type', 128], ['href', 2048]] as const) {
        const v = body[field];
        expect(typeof v === 'string' && v.length > 0 && v.length <= max, `${shown}: ${field}`).toBe(true);
      }
      expect(URL.canParse(body.href as string), shown).toBe(true);
      // What PostgreSQL's jsonb refuses must never get this far: NUL, and strings that are not well-formed UTF-16.
      const stored = JSON.stringify(body);
      expect(stored.includes('\\u0000'), `${shown}: NUL accepted`).toBe(false);
      expect(everyStringWellFormed(body), `${shown}: a lone surrogate accepted (jsonb refuses it: the INSERT fails, a 500)`).toBe(true);
    }
    expect(acceptedCount).toBeGreaterThan(0);
  });

  it('checkHrefScope: only a 422 Problem; what it accepts is on the API’s scheme, host and port, under its path, without credentials', () => {
    const g = new Gen(prng(SEED + 4));
    const bases = ['http://127.0.0.1:4010/api', 'https://sandbox.example.com/api', 'https://api.example.com', 'http://[::1]:8080/v1/api'];
    const schemes = ['http', 'https', 'HTTP', 'file', 'gopher', 'javascript', 'data', 'ftp', 'ws', 'blob:http'];
    const userinfo = ['', 'user@', 'user:pass@', ':@', '@', '127.0.0.1:4010@'];
    const hostsFor = (base: URL) => [base.host, base.host.toUpperCase(), `${base.hostname}.`, 'evil.example', `${base.hostname}.evil.example`, `evil.example#@${base.host}`, '10.0.0.1', '169.254.169.254', '[::1]', '0x7f.1', '2130706433', 'localhost', base.hostname];
    const ports = ['', ':4010', ':80', ':443', ':8080', ':0', ':99999'];
    const segments = ['api', 'API', 'apix', 'v1', '..', '%2e%2e', '.', '%2F', 'rfqs', '\\', '', 'a b', '%00', '\t', '?q=1', '#f', '@', ';'];
    let acceptedCount = 0;
    for (let i = 0; i < ITERATIONS; i++) {
      const base = new URL(g.pick(bases));
      const requireHttps = g.chance(0.3);
      const href = g.chance(0.9)
        ? `${g.pick(schemes)}:${g.pick(['//', '/', '', '///', '\\\\'])}${g.pick(userinfo)}${g.pick(hostsFor(base))}${g.pick(ports)}/${Array.from({ length: g.int(5) }, () => g.pick(segments)).join('/')}`
        : g.string(['h', 't', 'p', ':', '/', '.', '@', '1', 'a', '%', '\\', '[', ']'], 30);
      if (!URL.canParse(href)) continue; // parseNotification refuses those with a 400 first
      try {
        checkHrefScope(new URL(href), base, requireHttps);
      } catch (err) {
        if (!(err instanceof Problem) || err.status !== 422) throw new Error(`checkHrefScope(${href}, ${base.href}) threw ${String(err)}`, { cause: err });
        continue;
      }
      acceptedCount++;
      const url = new URL(href);
      const basePath = base.pathname.replace(/\/+$/, '');
      expect(url.protocol, href).toBe(base.protocol);
      expect(url.host, href).toBe(base.host);
      expect(url.username + url.password, href).toBe('');
      expect(url.pathname === basePath || url.pathname.startsWith(`${basePath}/`), `${href} under ${base.href}`).toBe(true);
      if (requireHttps) expect(url.protocol, href).toBe('https:');
      // The worker GETs href as received: fetch resolves it to the same origin.
      expect(new Request(href).url.startsWith(`${base.origin}/`), href).toBe(true);
    }
    expect(acceptedCount).toBeGreaterThan(0);
  });

  it("hrefDisposition: only a 422 Problem; what it would fetch is under one of the company's base URLs, without credentials", () => {
    const g = new Gen(prng(SEED + 5));
    const basesOf = [['http://127.0.0.1:4010/api'], ['https://sandbox.example.com/api', 'https://sched.example.com/scheduling'], ['https://api.example.com', 'http://[::1]:8080/v1/api']];
    const hosts = ['127.0.0.1:4010', 'sandbox.example.com', 'sched.example.com', 'api.example.com', '[::1]:8080', 'evil.example', 'sched.example.com.evil.example', '127.0.0.1:4010@evil.example', 'localhost:4010'];
    const segments = ['api', 'scheduling', 'v1', 'apix', '..', '%2e%2e', '.', 'contacts', '', '%2F', '@', '\\'];
    let fetched = 0;
    for (let i = 0; i < ITERATIONS; i++) {
      const bases = g.pick(basesOf).map((b) => new URL(b));
      const requireHttps = g.chance(0.3);
      const href = `${g.pick(['http', 'https', 'ftp', 'file'])}://${g.pick(['', 'user@', 'u:p@'])}${g.pick(hosts)}/${Array.from({ length: g.int(5) }, () => g.pick(segments)).join('/')}`;
      if (!URL.canParse(href)) continue;
      let disposition: string;
      try {
        disposition = hrefDisposition(new URL(href), bases, requireHttps);
      } catch (err) {
        if (!(err instanceof Problem) || err.status !== 422) throw new Error(`hrefDisposition(${href}) threw ${String(err)}`, { cause: err });
        continue;
      }
      const url = new URL(href);
      expect(url.username + url.password, href).toBe('');
      expect(['http:', 'https:'], href).toContain(url.protocol);
      if (disposition === 'not_fetched') continue;
      fetched++;
      // Fetched only under one of the bases: checkHrefScope, the one rule the RFQ answers use, agrees with one of them.
      expect(
        bases.some((b) => {
          try {
            checkHrefScope(url, b, requireHttps);
            return true;
          } catch {
            return false;
          }
        }),
        `${href} fetched, under none of ${bases.map((b) => b.href).join(', ')}`,
      ).toBe(true);
    }
    expect(fetched).toBeGreaterThan(0);
  });
});

/** String.prototype.isWellFormed (ES2024; the project's lib is ES2023): no lone surrogate. */
const wellFormed = (s: string): boolean => !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

function everyStringWellFormed(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string' && !wellFormed(v)) return false;
    if (typeof v === 'object' && v !== null) {
      for (const [k, child] of Object.entries(v)) {
        if (!wellFormed(k)) return false;
        stack.push(child);
      }
    }
  }
  return true;
}
