/**
 * The one marketplace client, used by every path (admin API, CLI, workers): the company's base URL
 * and token, JSON, a timeout, the envelope, and typed errors. Only calls that are safe to repeat
 * (GET, PUT) are retried, and only on network errors, 429 and 5xx.
 */
import { authorizationHeader, type EnvelopeMessage } from './contract.js';

export interface ApiConnection {
  baseUrl: string;
  token: string;
}

export type MarketplaceErrorKind = 'network' | 'timeout' | 'http' | 'soft' | 'invalid_response';

export class MarketplaceError extends Error {
  constructor(
    readonly kind: MarketplaceErrorKind,
    message: string,
    readonly status?: number,
    readonly errors: EnvelopeMessage[] = [],
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** The message of a soft error (a body whose meta.errors is not empty), or null. */
export function softErrors(body: unknown): string | null {
  const errors = (body as { meta?: { errors?: unknown } } | null)?.meta?.errors;
  if (!Array.isArray(errors) || errors.length === 0) return null;
  return errors
    .map((e: { message?: unknown; field?: unknown }) => [e?.field, e?.message].filter((x) => typeof x === 'string').join(': ') || JSON.stringify(e))
    .join('; ');
}

export interface RequestOptions {
  body?: unknown;
  headers?: Record<string, string>;
  /** A stable name for metrics, e.g. `leads.create` (default: the method). */
  operation?: string;
}

const RETRYABLE_METHODS = new Set(['GET', 'PUT', 'DELETE']);
const MAX_RETRIES = 2;

export class MarketplaceClient {
  constructor(private readonly opts: { timeoutMs: number; retryDelayMs?: number; onCall?: (operation: string, outcome: string) => void }) {}

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
        const transient = e.kind === 'network' || e.kind === 'timeout' || (e.kind === 'http' && (e.status === 429 || (e.status ?? 0) >= 500));
        if (!transient || attempt >= retries) throw err;
        await new Promise((r) => setTimeout(r, (this.opts.retryDelayMs ?? 250) * 2 ** attempt));
      }
    }
  }

  private async once<T>(conn: ApiConnection, method: string, path: string, options: RequestOptions): Promise<T> {
    const url = `${conn.baseUrl.replace(/\/+$/, '')}${path}`;
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        redirect: 'manual',
        headers: {
          authorization: authorizationHeader(conn.token),
          accept: 'application/json',
          ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...options.headers,
        },
        body: options.body !== undefined ? JSON.stringify(options.body) : undefined,
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
    } catch (err) {
      const e = err as Error & { cause?: { code?: string } };
      if (e.name === 'TimeoutError') throw new MarketplaceError('timeout', `${method} ${path} timed out after ${this.opts.timeoutMs} ms`);
      throw new MarketplaceError('network', `${method} ${path} failed: ${e.cause?.code ?? e.message}`);
    }
    const text = await res.text().catch(() => '');
    let body: unknown = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* handled below */
    }
    if (!res.ok) {
      const detail = softErrors(body) ?? (text.slice(0, 200) || res.statusText);
      const retryAfterMs = parseRetryAfter(res.headers.get('retry-after'));
      throw new MarketplaceError('http', `${method} ${path} answered ${res.status}: ${detail}`, res.status, envelopeErrors(body), retryAfterMs);
    }
    if (typeof body !== 'object' || body === null) throw new MarketplaceError('invalid_response', `${method} ${path} answered ${res.status} without a JSON body`, res.status);
    const soft = softErrors(body);
    if (soft) throw new MarketplaceError('soft', `${method} ${path} was refused: ${soft}`, res.status, envelopeErrors(body));
    return (body as { data: T }).data;
  }
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
