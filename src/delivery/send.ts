/**
 * One POST of a delivery to its destination (SPEC §5.2): through a connection whose address was checked
 * (lib/addresses.ts), redirects never followed (a 3xx fails the attempt like any other non-2xx), ended at the
 * destination's timeout, the answer read up to its first 4 KB. Answers what happened; never throws for
 * what the destination did.
 */
import { LRUCache } from 'lru-cache';
import { Agent, request, type Dispatcher } from 'undici';
import { parseRetryAfter } from '../marketplace/client.js';
import { checkedLookup, urlProblem, type AddressRules } from '../lib/addresses.js';

/** Keep-alive pools, one per destination: its own address checks, and no destination's connections shared with another's. */
const MAX_POOLS = 1000;
const RESPONSE_BYTES = 4096;

export type SendResult =
  | { kind: 'answered'; status: number; retryAfterMs: number | undefined; response: string; durationMs: number }
  /** No answer: a timeout, a network error, or an address the rules refuse. */
  | { kind: 'no_answer'; error: string; durationMs: number };

export interface Delivery {
  destinationId: string;
  companyId: string;
  url: string;
  body: string;
  headers: Record<string, string>;
  timeoutMs: number;
}

export class DeliverySender {
  private readonly pools = new LRUCache<string, { url: string; agent: Agent }>({ max: MAX_POOLS, dispose: ({ agent }) => void agent.close() });

  constructor(private readonly rules: AddressRules) {}

  async send(d: Delivery): Promise<SendResult> {
    const started = performance.now();
    const took = () => Math.round(performance.now() - started);
    // The URL's rules hold at each attempt, not only when it was set: a destination stored in development, or
    // admitted by a DESTINATION_ALLOW entry since removed, is not sent over http in production. A literal
    // address is never looked up: urlProblem checks it here.
    const refused = urlProblem(this.rules, d.url, d.companyId);
    if (refused) return { kind: 'no_answer', error: `address refused: ${refused}`, durationMs: took() };
    const url = new URL(d.url);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    try {
      const res = await request(d.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'user-agent': 'Skyhook-Webhooks/1.0', ...d.headers },
        body: d.body,
        dispatcher: this.pool(d.destinationId, d.companyId, url, host),
        headersTimeout: d.timeoutMs,
        bodyTimeout: d.timeoutMs,
        signal: AbortSignal.timeout(d.timeoutMs),
      });
      const header = res.headers['retry-after'];
      const response = await readStart(res.body);
      return { kind: 'answered', status: res.statusCode, retryAfterMs: parseRetryAfter((Array.isArray(header) ? header[0] : header) ?? null), response, durationMs: took() };
    } catch (err) {
      const e = err as { code?: string; name?: string; message?: string; cause?: { code?: string; message?: string } };
      const timedOut = e.name === 'TimeoutError' || e.code === 'UND_ERR_HEADERS_TIMEOUT' || e.code === 'UND_ERR_BODY_TIMEOUT';
      const why = timedOut ? `no answer within ${d.timeoutMs} ms` : (e.cause?.message ?? e.message ?? e.code ?? String(err));
      return { kind: 'no_answer', error: why, durationMs: took() };
    }
  }

  /** The destination's pool, made again when its URL's origin changed (an edited URL applies to its next attempt). */
  private pool(destinationId: string, companyId: string, url: URL, host: string): Dispatcher {
    const cached = this.pools.get(destinationId);
    if (cached?.url === url.origin) return cached.agent;
    const agent = new Agent({ keepAliveTimeout: 10_000, connections: 64, connect: { lookup: checkedLookup(this.rules, companyId, host) } });
    this.pools.set(destinationId, { url: url.origin, agent });
    return agent;
  }

  async close(): Promise<void> {
    const agents = [...this.pools.values()].map((p) => p.agent);
    this.pools.clear();
    await Promise.allSettled(agents.map((a) => a.close()));
  }
}

/** The answer's first 4 KB, as text PostgreSQL can store (a NUL shown as U+FFFD, as a broken byte is); the rest is not read. */
async function readStart(body: Dispatcher.ResponseData['body']): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= RESPONSE_BYTES) {
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, RESPONSE_BYTES).toString('utf8').replaceAll('\u0000', '\uFFFD');
}
