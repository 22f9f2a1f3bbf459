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
import { authorizationHeader, type EnvelopeMessage } from './contract.js';

/** The largest answer read; a larger one is refused while it is read, not after. */
export const MAX_ANSWER_BYTES = 5 * 1024 * 1024;

export interface ApiConnection {
  baseUrl: string;
  token: string;
}

export type MarketplaceErrorKind = 'network' | 'timeout' | 'http' | 'soft' | 'invalid_response';

/** Network errors raised while connecting: the request was never sent. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

export class MarketplaceError extends Error {
  readonly status?: number;
  readonly errors: EnvelopeMessage[];
  readonly retryAfterMs?: number;
  /** The network error's code (kind `network`). */
  readonly code?: string;

  constructor(
    readonly kind: MarketplaceErrorKind,
    message: string,
    details: { status?: number; errors?: EnvelopeMessage[]; retryAfterMs?: number; code?: string } = {},
  ) {
    super(message);
    this.status = details.status;
    this.errors = details.errors ?? [];
    this.retryAfterMs = details.retryAfterMs;
    this.code = details.code;
  }

  /**
   * Whether the marketplace may have acted on the call although no success was read: the request may
   * have been sent and the answer is missing (a timeout, a dropped connection), unreadable (a 2xx
   * without JSON, too large), or a server error other than 503. A refusal (4xx, 503, a soft error) or a
   * failure to connect means it did not.
   */
  get mayHaveActed(): boolean {
    switch (this.kind) {
      case 'timeout':
      case 'invalid_response':
        return true;
      case 'network':
        return !NOT_CONNECTED.has(this.code ?? '');
      case 'http':
        return (this.status ?? 0) >= 500 && this.status !== 503;
      case 'soft':
        return false;
    }
  }
}

/** An HTTP answer as received; `text` is null when it was larger than MAX_ANSWER_BYTES (not read further). */
export interface Answer {
  status: number;
  header(name: string): string | null;
  text: string | null;
}

/** The message of a soft error (a body whose meta.errors is not empty), or null. */
export function softErrors(body: unknown): string | null {
  const errors = envelopeErrors(body);
  if (errors.length === 0) return null;
  return errors
    .map((e: { message?: unknown; field?: unknown }) => [e?.field, e?.message].filter((x) => typeof x === 'string').join(': ') || JSON.stringify(e))
    .join('; ');
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
    if (status < 200 || status >= 300) {
      const detail = softErrors(body) ?? (text.slice(0, 200) || `status ${status}`);
      throw new MarketplaceError('http', `${method} ${path} answered ${status}: ${detail}`, {
        status,
        errors: envelopeErrors(body),
        retryAfterMs: parseRetryAfter(answer.header('retry-after')),
      });
    }
    if (typeof body !== 'object' || body === null) throw new MarketplaceError('invalid_response', `${method} ${path} answered ${status} without a JSON body`, { status });
    const soft = softErrors(body);
    if (soft) throw new MarketplaceError('soft', `${method} ${path} was refused: ${soft}`, { status, errors: envelopeErrors(body) });
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

function envelopeErrors(body: unknown): EnvelopeMessage[] {
  const errors = (body as { meta?: { errors?: unknown } } | null)?.meta?.errors;
  return Array.isArray(errors) ? (errors as EnvelopeMessage[]) : [];
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or bad. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
