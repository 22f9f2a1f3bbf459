/**
 * A company's application in miniature, for development (SPEC §5.2: `skyhook listen`, the demo's own
 * receivers): an HTTP server on a loopback address that takes each POST as a delivery, verifies its
 * signature with the reference Standard Webhooks library (the npm package `standardwebhooks`, as the docs
 * tell a company's developer to), says what it got, and answers 200, or 401 when the signature does not
 * verify. Without a secret it answers 200 and says it could not verify.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** Far above a delivery's body limit (DELIVERY_BODY_LIMIT_BYTES, 256 KiB by default): a larger body is refused 413. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

/** What a delivery's body says of itself (docs/deliveries.md), as far as it says it. */
export interface HeardEvent {
  id?: unknown;
  type?: unknown;
  resource?: { type?: unknown; id?: unknown; version?: unknown; previousVersion?: unknown } | null;
}

/** One request, as the listener took it. */
export interface Heard {
  at: Date;
  method: string;
  path: string;
  /** The `webhook-id` header: the delivery's idempotency key. */
  webhookId: string | null;
  /** The body, when it is a JSON object. */
  event: HeardEvent | null;
  verification: 'verified' | 'failed' | 'no secret';
  /** Why it did not verify, or why the request is not a delivery; null when all is well. */
  problem: string | null;
  /** What the listener answered. */
  status: number;
}

export interface WebhookListener {
  url: string;
  close(): Promise<void>;
}

/** A `whsec_` secret the library can use, or why not (for a usage error naming the flag). */
export function secretProblem(secret: string): string | null {
  if (!/^whsec_[A-Za-z0-9+/]+={0,2}$/.test(secret)) return 'must be a signing secret, whsec_ and base64 (as `skyhook destinations create` or `destinations secret` print it)';
  const bytes = Buffer.from(secret.slice('whsec_'.length), 'base64').length;
  return bytes < 24 || bytes > 64 ? `must hold 24 to 64 bytes after whsec_ (it holds ${bytes})` : null;
}

const header = (req: IncomingMessage, name: string): string | null => {
  const value = req.headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? null;
};

function readBody(req: IncomingMessage): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) return void resolve(null);
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function parseEvent(body: string): HeardEvent | null {
  try {
    const value: unknown = JSON.parse(body);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as HeardEvent) : null;
  } catch {
    // Not JSON: a delivery always is, so the line says so (problem) and nothing is parsed.
    return null;
  }
}

/** The library's reason in the words a developer acts on. */
function whyNotVerified(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (message === 'No matching signature found') return 'no signature matches the secret (is it this destination\'s current secret?)';
  if (message === 'Missing required headers') return 'webhook-id, webhook-timestamp or webhook-signature is missing';
  if (message === 'Message timestamp too old' || message === 'Message timestamp too new') return `${message.toLowerCase()} (more than 5 minutes from this machine's clock)`;
  return message;
}

function answer(res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', ...extra });
  res.end(`${text}\n`);
}

/** Listens on `host` (a loopback address) at `port` (0: any free one); calls `onRequest` once per request, after answering it. */
export async function startWebhookListener(opts: { host?: string; port: number; path: string; secret?: string; onRequest: (heard: Heard) => void }): Promise<WebhookListener> {
  const verifier = opts.secret === undefined ? undefined : new Webhook(opts.secret);
  const server = createServer((req, res) => {
    void handle(req, res).catch((err: unknown) => {
      // Only the request's own stream can fail here (a client gone mid-body): said on its line.
      if (!res.headersSent) answer(res, 400, 'the request could not be read');
      opts.onRequest({ at: new Date(), method: req.method ?? '?', path: req.url ?? '/', webhookId: header(req, 'webhook-id'), event: null, verification: 'failed', problem: `the request could not be read: ${String(err)}`, status: 400 });
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const at = new Date();
    const path = (req.url ?? '/').split('?')[0]!;
    const base = { at, method: req.method ?? '?', path, webhookId: header(req, 'webhook-id') };
    const body = await readBody(req);
    /** A request that is not a delivery: answered `text`, and said as `problem`. */
    const refuse = (status: number, text: string, problem: string, extra?: Record<string, string>) => {
      answer(res, status, text, extra);
      opts.onRequest({ ...base, event: null, verification: 'failed', problem, status });
    };
    if (path !== opts.path) return refuse(404, `nothing here: deliveries are POSTed to ${opts.path}`, `not the path listened on (${opts.path})`);
    if (req.method !== 'POST') return refuse(405, 'deliveries are POSTed', 'not a POST', { allow: 'POST' });
    if (body === null) return refuse(413, `the body is over ${MAX_BODY_BYTES} bytes`, 'body too large');
    const text = body.toString('utf8');
    const event = parseEvent(text);
    if (!verifier) {
      answer(res, 200, 'received, not verified: the listener has no secret');
      return opts.onRequest({ ...base, event, verification: 'no secret', problem: event ? null : 'the body is not a JSON object', status: 200 });
    }
    const headers = { 'webhook-id': base.webhookId ?? '', 'webhook-timestamp': header(req, 'webhook-timestamp') ?? '', 'webhook-signature': header(req, 'webhook-signature') ?? '' };
    try {
      // jsonParse off: the signature is over the bytes; whether they are JSON is said apart.
      verifier.verify(text, headers, { jsonParse: false });
    } catch (error) {
      const why = whyNotVerified(error);
      answer(res, 401, `signature not verified: ${why}`);
      return opts.onRequest({ ...base, event, verification: 'failed', problem: why, status: 401 });
    }
    answer(res, 200, 'verified');
    opts.onRequest({ ...base, event, verification: 'verified', problem: event ? null : 'the body is not a JSON object', status: 200 });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { address, port } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}${opts.path}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
