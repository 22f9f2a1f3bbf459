/**
 * The one marketplace client, used by every path (admin API, CLI, workers): the company's token, JSON,
 * a timeout, a bounded answer, and typed errors. `exchange` is the single HTTP transport; `call` adds
 * the envelope and retries (only calls that are safe to repeat, GET and PUT, and only on network
 * errors, timeouts, 408, 429 and 5xx); the worker classifies `exchange`'s answers into its own outcomes
 * (processing/fetch-resource.ts).
 *
 * The transport is undici's request API rather than fetch(): the same HTTP client without the WHATWG
 * Request, Response and stream objects around every call, which cost the worker about a tenth of its CPU
 * in the benchmark's profile. Connections are kept alive and reused; redirects are never followed, so a
 * token is never carried to another address.
 */
import { Agent, request, type Dispatcher } from 'undici';
import { authorizationHeader, readEnvelopeMessage, type EnvelopeEntry } from './contract.js';
import { MarketplaceError } from './errors.js';

export { MarketplaceError, type MarketplaceErrorKind } from './errors.js';

/** The largest answer read; a larger one is refused while it is read, not after. */
export const MAX_ANSWER_BYTES = 5 * 1024 * 1024;

export interface ApiConnection {
  baseUrl: string;
  token: string;
}

/** An HTTP answer as received; `text` is null when it was larger than MAX_ANSWER_BYTES (not read further). */
export interface Answer {
  status: number;
  header(name: string): string | null;
  text: string | null;
}

/** The message of a soft error (a body whose meta.errors is not empty), or null: each entry as `field: text (code)`. */
export function softErrors(body: unknown): string | null {
  const errors = envelopeErrors(body);
  if (errors.length === 0) return null;
  return errors.map(describeEntry).join('; ');
}

const describeEntry = (e: EnvelopeEntry): string => `${e.field !== undefined ? `${e.field}: ` : ''}${e.message}${e.code !== undefined ? ` (${e.code})` : ''}`;

/** Entries read from one answer; the rest are counted, so an answer of thousands stays a readable problem. */
const MAX_ENVELOPE_ERRORS = 50;

/**
 * The envelope's error entries, each read by readEnvelopeMessage. `meta.errors` that is not a list but
 * holds something (a string, an object) is one entry: a refusal in an odd form is still a refusal.
 */
export function envelopeErrors(body: unknown): EnvelopeEntry[] {
  const raw = (body as { meta?: { errors?: unknown } } | null)?.meta?.errors;
  const empty = !raw || (typeof raw === 'object' && Object.keys(raw).length === 0);
  const list: unknown[] = Array.isArray(raw) ? raw : empty ? [] : [raw];
  const entries = list.slice(0, MAX_ENVELOPE_ERRORS).map(readEnvelopeMessage);
  if (list.length > MAX_ENVELOPE_ERRORS) entries.push({ message: `and ${list.length - MAX_ENVELOPE_ERRORS} more errors` });
  return entries;
}

/** The envelope's `data`; a body without the envelope is taken whole. */
export const dataOf = (body: unknown): unknown => (typeof body === 'object' && body !== null && 'meta' in body && 'data' in body ? body.data : body);

/** Answers worth asking again: the marketplace was busy or briefly failing. */
export const isTransientStatus = (status: number): boolean => status === 408 || status === 429 || status >= 500;

export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** A stable name for metrics, e.g. `leads.create` (default: the method). */
  operation?: string;
}

const RETRYABLE_METHODS = new Set(['GET', 'PUT']);
const MAX_RETRIES = 2;
/** A Retry-After longer than this is not waited for by a caller who is waiting for the answer. */
const MAX_RETRY_WAIT_MS = 2000;

export class MarketplaceClient {
  private readonly dispatcher: Agent;

  constructor(
    private readonly opts: {
      /** Bounds the wait for an answer's headers, then each pause while its body arrives. */
      timeoutMs: number;
      retryDelayMs?: number;
      /** Connections kept per marketplace origin (the worker sizes it to its concurrency). */
      connections?: number;
      onCall?: (operation: string, outcome: string) => void;
    },
  ) {
    this.dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: opts.connections ?? 16 });
  }

  /** One HTTP exchange with the company's token; throws MarketplaceError (network, timeout) when there is no answer. */
  async exchange(url: string, token: string, init: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal } = {}): Promise<Answer> {
    const method = init.method ?? 'GET';
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method: method as Dispatcher.HttpMethod,
        headers: { authorization: authorizationHeader(token), accept: 'application/json', ...init.headers },
        body: init.body,
        dispatcher: this.dispatcher,
        headersTimeout: this.opts.timeoutMs,
        bodyTimeout: this.opts.timeoutMs,
        signal: init.signal,
      });
    } catch (err) {
      throw noAnswer(err, `${method} ${url}`, this.opts.timeoutMs);
    }
    const header = (name: string): string | null => {
      const value = res.headers[name];
      return (Array.isArray(value) ? value[0] : value) ?? null;
    };
    try {
      const declared = Number(header('content-length') ?? 0);
      if (declared > MAX_ANSWER_BYTES) {
        res.body.destroy();
        return { status: res.statusCode, header, text: null };
      }
      return { status: res.statusCode, header, text: await readAtMost(res.body, MAX_ANSWER_BYTES) };
    } catch (err) {
      throw noAnswer(err, `${method} ${url}`, this.opts.timeoutMs);
    }
  }

  /** Sends one call and returns the envelope's `data`; throws MarketplaceError. */
  async call<T>(conn: ApiConnection, method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const retries = RETRYABLE_METHODS.has(method) ? MAX_RETRIES : 0;
    for (let attempt = 0; ; attempt++) {
      try {
        const data = await this.once<T>(conn, method, path, options);
        this.opts.onCall?.(options.operation ?? method, 'ok');
        return data;
      } catch (err) {
        const e = err as MarketplaceError;
        this.opts.onCall?.(options.operation ?? method, e.kind === 'http' ? `http_${e.status}` : (e.kind ?? 'error'));
        const transient = e.kind === 'network' || e.kind === 'timeout' || (e.kind === 'http' && isTransientStatus(e.status ?? 0));
        const waitMs = Math.max(e.retryAfterMs ?? 0, (this.opts.retryDelayMs ?? 250) * 2 ** attempt);
        if (!transient || attempt >= retries || waitMs > MAX_RETRY_WAIT_MS) throw err;
        await new Promise((r) => setTimeout(r, waitMs));
      }
    }
  }

  private async once<T>(conn: ApiConnection, method: string, path: string, options: RequestOptions): Promise<T> {
    const url = `${conn.baseUrl.replace(/\/+$/, '')}${path}`;
    const answer = await this.exchange(url, conn.token, {
      method,
      headers: { ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}), ...options.headers },
      body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
      // One deadline for the whole call, answer included: an answer that trickles in must not outlast it
      // (sendOnce takes a call older than twice the timeout for a crashed one and sends it again).
      signal: AbortSignal.timeout(this.opts.timeoutMs),
    });
    const { status } = answer;
    const text = answer.text ?? '';
    // The status first: a 503 or 429 with a huge body is still worth retrying.
    if (answer.text === null && status >= 200 && status < 300) throw new MarketplaceError('invalid_response', `${method} ${path} answered more than ${MAX_ANSWER_BYTES} bytes`, { status });
    let body: unknown = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* handled below */
    }
    const errors = envelopeErrors(body);
    const said = errors.map(describeEntry).join('; ');
    if (status < 200 || status >= 300) {
      throw new MarketplaceError('http', `${method} ${path} answered ${status}: ${said || text.slice(0, 200) || `status ${status}`}`, {
        status,
        errors,
        retryAfterMs: parseRetryAfter(answer.header('retry-after')),
      });
    }
    if (typeof body !== 'object' || body === null) throw new MarketplaceError('invalid_response', `${method} ${path} answered ${status} without a JSON body`, { status });
    if (errors.length > 0) throw new MarketplaceError('soft', `${method} ${path} was refused: ${said}`, { status, errors });
    return dataOf(body) as T;
  }
}

function noAnswer(err: unknown, what: string, timeoutMs: number): MarketplaceError {
  const e = err as Error & { code?: string };
  if (e.code === 'UND_ERR_HEADERS_TIMEOUT') return new MarketplaceError('timeout', `${what} timed out after ${timeoutMs} ms`);
  if (e.code === 'UND_ERR_BODY_TIMEOUT') return new MarketplaceError('timeout', `${what}: the answer stalled for ${timeoutMs} ms`);
  if (e.name === 'TimeoutError') return new MarketplaceError('timeout', `${what} took longer than ${timeoutMs} ms`);
  return new MarketplaceError('network', `${what} failed: ${e.code ?? e.message}`, { code: e.code });
}

/** The body as text, or null once it exceeds `limit` bytes (then the rest is not read). */
async function readAtMost(body: Dispatcher.ResponseData['body'], limit: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      body.destroy();
      return null;
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or bad. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
