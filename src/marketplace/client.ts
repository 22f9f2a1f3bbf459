/**
 * The one marketplace client, used by every path (admin API, CLI, workers): the company's connection (its
 * headers come from connection.ts, its OAuth token from oauth2.ts), JSON, a timeout, a bounded answer, and
 * typed errors. `exchange` is the single HTTP transport; `call` adds the envelope and retries (only calls
 * that are safe to repeat, GET and PUT, and only on network errors, timeouts, 408, 429 and 5xx); the worker
 * classifies `exchange`'s answers into its own outcomes (processing/fetch-job.ts).
 *
 * The transport is undici's request API rather than fetch(): the same HTTP client without the WHATWG
 * Request, Response and stream objects around every call, which showed in the worker's CPU profile.
 * Redirects are never followed, so a token is never carried to another address.
 */
import { Agent, request, type Dispatcher } from 'undici';
import { DEFAULT_ACCESS_TOKEN_LIFETIME_S, readEnvelopeMessage } from './contract.js';
import { actAsAccountHeader, callHeaders, fixedBearerToken, tokenRequestHeaders, type ApiConnection } from './connection.js';
import { isTransientStatus, MarketplaceError, type EnvelopeEntry } from './errors.js';
import { AccessTokens, type AccessToken, type OAuthConnection } from './oauth2.js';

export { isTransientStatus, MarketplaceError } from './errors.js';
export type { ApiConnection } from './connection.js';

/** The largest answer read; a larger one is refused while it is read, not after. */
export const MAX_ANSWER_BYTES = 5 * 1024 * 1024;

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

interface RequestOptions {
  body?: unknown;
  /** A stable name for metrics, e.g. `leads.create` (default: the method). */
  operation?: string;
  /** The user login the call acts as, in the header of the company's profile. */
  actAsAccount?: string;
  /** false: one attempt only, whatever the method (a check whose caller is waiting). Default true. */
  retry?: boolean;
}

const RETRYABLE_METHODS = new Set(['GET', 'PUT']);
const MAX_RETRIES = 2;
/** A Retry-After longer than this is not waited for by a caller who is waiting for the answer. */
const MAX_RETRY_WAIT_MS = 2000;
const MAX_TOKEN_ANSWER_BYTES = 64 * 1024;

export class MarketplaceClient {
  private readonly dispatcher: Agent;
  private readonly tokens: AccessTokens;

  constructor(
    private readonly opts: {
      /** Bounds the wait for an answer's headers, then each pause while its body arrives. */
      timeoutMs: number;
      retryDelayMs?: number;
      /** Connections kept per marketplace origin (the worker sizes it to its concurrency). */
      connections?: number;
      onCall?: (operation: string, outcome: string) => void;
      /** The process's OAuth token cache, shared by its clients (default: one of this client's own). */
      tokens?: AccessTokens;
      /** A 2xx answer to a call with a company's credentials: the connection was used (companies/usage.ts). */
      onUsed?: (companyId: string | undefined) => void;
    },
  ) {
    this.dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: opts.connections ?? 16 });
    this.tokens = opts.tokens ?? new AccessTokens();
  }

  /**
   * One HTTP exchange with the company's connection; throws MarketplaceError (network, timeout, token_*) when
   * there is no answer. A 401 to an OAuth token gets one new token and one retry before it stands: the token
   * may have expired early or been revoked.
   */
  async exchange(url: string, conn: ApiConnection, init: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal } = {}): Promise<Answer> {
    const bearer = await this.bearerToken(conn);
    let answer = await this.send(url, conn, bearer, init);
    if (answer.status === 401 && conn.oauth) {
      this.tokens.invalidate(conn as OAuthConnection, bearer);
      answer = await this.send(url, conn, await this.bearerToken(conn), init);
    }
    if (answer.status >= 200 && answer.status < 300) this.opts.onUsed?.(conn.companyId);
    return answer;
  }

  /** The connection's bearer token: fixed, or its OAuth access token (cached, single-flight). */
  private async bearerToken(conn: ApiConnection): Promise<string> {
    const fixed = fixedBearerToken(conn);
    if (fixed !== undefined) return fixed;
    if (!conn.oauth) throw new MarketplaceError('invalid_request', 'the connection has no token to send; nothing was sent');
    const oauth = conn as OAuthConnection;
    return this.tokens.get(oauth, () => this.requestAccessToken(oauth));
  }

  /** RFC 6749 §4.4: a client-credentials grant at the connection's token URL (contract.ts says how). */
  private async requestAccessToken(conn: OAuthConnection): Promise<AccessToken> {
    const what = `the token request to ${conn.oauth.tokenUrl}`;
    let answer: Answer;
    try {
      answer = await this.transport(conn.oauth.tokenUrl, what, MAX_TOKEN_ANSWER_BYTES, {
        method: 'POST',
        headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded', ...tokenRequestHeaders(conn) },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: conn.oauth.clientId, client_secret: conn.oauth.clientSecret }).toString(),
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
    } catch (err) {
      const e = err as MarketplaceError;
      this.opts.onCall?.('oauth.token', e.kind);
      throw new MarketplaceError('token_unavailable', e.message, { code: e.code });
    }
    const { status } = answer;
    const token = readTokenAnswer(status, answer.text, what);
    this.opts.onCall?.('oauth.token', token instanceof MarketplaceError ? (token.kind === 'token_refused' ? `refused_${status}` : `http_${status}`) : 'ok');
    if (token instanceof MarketplaceError) throw token;
    return token;
  }

  private send(url: string, conn: ApiConnection, bearer: string, init: { method?: string; headers?: Record<string, string>; body?: string; signal?: AbortSignal }): Promise<Answer> {
    const method = init.method ?? 'GET';
    return this.transport(url, `${method} ${url}`, MAX_ANSWER_BYTES, { ...init, method, headers: { accept: 'application/json', ...init.headers, ...callHeaders(conn, bearer) } });
  }

  /** One request, its answer read up to `maxBytes`; throws MarketplaceError (network, timeout) naming it `what` when there is none. */
  private async transport(url: string, what: string, maxBytes: number, init: { method: string; headers: Record<string, string>; body?: string; signal?: AbortSignal }): Promise<Answer> {
    try {
      const res = await request(url, {
        method: init.method as Dispatcher.HttpMethod,
        headers: init.headers,
        body: init.body,
        dispatcher: this.dispatcher,
        headersTimeout: this.opts.timeoutMs,
        bodyTimeout: this.opts.timeoutMs,
        signal: init.signal,
      });
      const header = (name: string): string | null => {
        const value = res.headers[name];
        return (Array.isArray(value) ? value[0] : value) ?? null;
      };
      if (Number(header('content-length') ?? 0) > maxBytes) {
        res.body.destroy();
        return { status: res.statusCode, header, text: null };
      }
      return { status: res.statusCode, header, text: await readAtMost(res.body, maxBytes) };
    } catch (err) {
      throw noAnswer(err, what, this.opts.timeoutMs);
    }
  }

  /**
   * Sends one call and returns the envelope's `data`; throws MarketplaceError. `path` is under the company's
   * API base URL; a URL is an href the marketplace gave, called as given (its caller checked its scope).
   */
  async call<T>(conn: ApiConnection, method: string, path: string | URL, options: RequestOptions = {}): Promise<T> {
    const retries = RETRYABLE_METHODS.has(method) && options.retry !== false ? MAX_RETRIES : 0;
    for (let attempt = 0; ; attempt++) {
      try {
        const data = await this.once<T>(conn, method, path, options);
        this.opts.onCall?.(options.operation ?? method, 'ok');
        return data;
      } catch (err) {
        const e = err as MarketplaceError;
        this.opts.onCall?.(options.operation ?? method, e.kind === 'http' ? `http_${e.status}` : (e.kind ?? 'error'));
        const transient = e instanceof MarketplaceError && e.transient;
        const waitMs = Math.max(e.retryAfterMs ?? 0, (this.opts.retryDelayMs ?? 250) * 2 ** attempt);
        if (!transient || attempt >= retries || waitMs > MAX_RETRY_WAIT_MS) throw err;
        await new Promise((r) => setTimeout(r, waitMs));
      }
    }
  }

  private async once<T>(conn: ApiConnection, method: string, path: string | URL, options: RequestOptions): Promise<T> {
    const url = typeof path === 'string' ? `${conn.baseUrl.replace(/\/+$/, '')}${path}` : path.href;
    const answer = await this.exchange(url, conn, {
      method,
      headers: {
        ...(options.body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...(options.actAsAccount !== undefined ? { [actAsAccountHeader(conn.profile)]: options.actAsAccount } : {}),
      },
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

/**
 * A token endpoint's answer (RFC 6749 §5.1, §5.2): the token, or why there is none. A 4xx is a refusal of the
 * client credentials (its `error` and `error_description` kept, never the request); a 5xx, 408 or 429 is
 * worth asking again; a 2xx without a bearer `access_token` is a refusal too (the URL is not a token endpoint).
 */
export function readTokenAnswer(status: number, text: string | null, what: string): AccessToken | MarketplaceError {
  let body: Record<string, unknown> = {};
  try {
    const parsed: unknown = text ? JSON.parse(text) : undefined;
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) body = parsed as Record<string, unknown>;
  } catch {
    // Not JSON: the status alone decides below (body stays {}).
  }
  if (isTransientStatus(status)) return new MarketplaceError('token_unavailable', `${what} answered ${status}`, { status });
  const code = typeof body.error === 'string' ? body.error : undefined;
  if (status < 200 || status >= 300 || code !== undefined) {
    const entry = readEnvelopeMessage({ title: typeof body.error_description === 'string' ? body.error_description : (code ?? `status ${status}`), code: code ?? `http_${status}`, path: 'connection' });
    return new MarketplaceError('token_refused', `${what} was refused (${status}): ${entry.message}${code !== undefined && entry.message !== code ? ` (${code})` : ''}`, { status, errors: [entry] });
  }
  const tokenType = typeof body.token_type === 'string' ? body.token_type.toLowerCase() : 'bearer';
  if (typeof body.access_token !== 'string' || body.access_token === '' || tokenType !== 'bearer') {
    return new MarketplaceError('token_refused', `${what} answered ${status} without a bearer access_token`, { status, errors: [{ message: 'no bearer access_token in the answer', field: 'connection.tokenUrl', code: 'no_access_token' }] });
  }
  const expiresIn = typeof body.expires_in === 'number' ? body.expires_in : typeof body.expires_in === 'string' ? Number(body.expires_in) : Number.NaN;
  return { value: body.access_token, lifetimeS: Number.isFinite(expiresIn) && expiresIn > 0 ? expiresIn : DEFAULT_ACCESS_TOKEN_LIFETIME_S };
}

/** Retry-After as delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined when absent or bad. */
export function parseRetryAfter(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
