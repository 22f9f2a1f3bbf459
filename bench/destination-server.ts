/**
 * The companies' own applications for `--deliveries` (bench/deliveries.ts), in a process of their own so that
 * their CPU is not Skyhook's: every `POST /d/<name>` is a delivery to destination `<name>`, answered 200 at
 * once unless `POST /_config` `{"<name>": "ok" | "fail" | "hang"}` says to answer 500 at once, or never (the
 * request hangs until Skyhook's timeout, or until `POST /_release?name=<name>` closes it). No signature is
 * checked (the integration tests verify them with the reference library): only what the bench measures.
 *
 * Per name, of the requests answered 2xx: how many, when the first and the last were answered (ms since the
 * epoch, sub-millisecond), how many repeated a `webhook-id` already answered, how many carried a version of
 * their resource no higher than the last one answered (out of order), and each one's delivery id (from
 * `webhook-id: msg_<id>`) with when it was answered: `GET /_stats`, `GET /_arrivals?name=<name>`.
 * `POST /_reset` forgets what was answered (the modes stay).
 */
import http from 'node:http';

type Mode = 'ok' | 'fail' | 'hang';

interface Tally {
  attempts: number;
  firstAttemptAt: number | null;
  ok: number;
  failed: number;
  firstOkAt: number | null;
  lastOkAt: number | null;
  duplicates: number;
  outOfOrder: number;
  seen: Set<string>;
  lastVersion: Map<string, number>;
  deliveryIds: number[];
  at: number[];
  hung: Set<http.ServerResponse>;
}

const modes = new Map<string, Mode>();
const tallies = new Map<string, Tally>();
/** Wall-clock time with the monotonic clock's resolution: compared with PostgreSQL's timestamps, on the same machine. */
const nowMs = () => performance.timeOrigin + performance.now();

const tallyOf = (name: string): Tally => {
  let t = tallies.get(name);
  if (!t) tallies.set(name, (t = { attempts: 0, firstAttemptAt: null, ok: 0, failed: 0, firstOkAt: null, lastOkAt: null, duplicates: 0, outOfOrder: 0, seen: new Set(), lastVersion: new Map(), deliveryIds: [], at: [], hung: new Set() }));
  return t;
};

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

function read(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function delivered(t: Tally, webhookId: string, body: string): void {
  const at = nowMs();
  t.ok++;
  t.firstOkAt ??= at;
  t.lastOkAt = at;
  if (t.seen.has(webhookId)) t.duplicates++;
  t.seen.add(webhookId);
  const { resource } = JSON.parse(body) as { resource: { id: string; version: number } };
  if ((t.lastVersion.get(resource.id) ?? 0) >= resource.version) t.outOfOrder++;
  t.lastVersion.set(resource.id, Math.max(resource.version, t.lastVersion.get(resource.id) ?? 0));
  t.deliveryIds.push(Number(webhookId.replace(/^msg_/, '')));
  t.at.push(at);
}

const summary = (t: Tally) => ({ attempts: t.attempts, firstAttemptAt: t.firstAttemptAt, ok: t.ok, failed: t.failed, hung: t.hung.size, firstOkAt: t.firstOkAt, lastOkAt: t.lastOkAt, duplicates: t.duplicates, outOfOrder: t.outOfOrder });

const server = http.createServer(async (req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const name = url.searchParams.get('name') ?? '';
  if (url.pathname === '/_stats') return json(res, 200, Object.fromEntries([...tallies].map(([n, t]) => [n, summary(t)])));
  if (url.pathname === '/_arrivals') {
    const t = tallyOf(name);
    return json(res, 200, { deliveryIds: t.deliveryIds, at: t.at });
  }
  const body = await read(req);
  if (url.pathname === '/_config') {
    for (const [n, mode] of Object.entries(JSON.parse(body) as Record<string, Mode>)) modes.set(n, mode);
    return json(res, 200, Object.fromEntries(modes));
  }
  if (url.pathname === '/_release') {
    const t = tallyOf(name);
    for (const hung of t.hung) hung.destroy();
    t.hung.clear();
    return json(res, 200, {});
  }
  if (url.pathname === '/_reset') {
    for (const [n, t] of tallies) if (t.hung.size === 0) tallies.delete(n);
    return json(res, 200, {});
  }
  const [, d, destination] = url.pathname.split('/');
  if (d !== 'd' || !destination) return json(res, 404, {});
  const t = tallyOf(destination);
  t.attempts++;
  t.firstAttemptAt ??= nowMs();
  const mode = modes.get(destination) ?? 'ok';
  if (mode === 'hang') {
    t.hung.add(res);
    res.on('close', () => t.hung.delete(res));
    return;
  }
  if (mode === 'fail') {
    t.failed++;
    return json(res, 500, { error: 'failing on purpose' });
  }
  delivered(t, String(req.headers['webhook-id']), body);
  res.writeHead(200).end();
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
