/**
 * GET of a notification's href with the company's token (SPEC §5), classified into the outcomes the
 * worker acts on. The href is used exactly as received; redirects are never followed, so the token
 * cannot be carried to another address.
 */
import { Agent, request, type Dispatcher } from 'undici';
import { authorizationHeader } from '../marketplace/contract.js';
import { parseRetryAfter, softErrors } from '../marketplace/client.js';

const MAX_BODY_BYTES = 5 * 1024 * 1024;

/**
 * undici's own request API rather than fetch(): the same HTTP client without the WHATWG Request,
 * Response and stream objects around every call, which cost the worker about a tenth of its CPU in
 * the benchmark's profile. Connections to the marketplace are kept alive and reused.
 */
const dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 64 });

export type FetchResult =
  | { kind: 'ok'; resource: unknown }
  | { kind: 'soft_error'; message: string }
  | { kind: 'gone'; status: number }
  | { kind: 'unauthorized'; status: number }
  | { kind: 'retry'; message: string; retryAfterMs?: number }
  | { kind: 'failed'; message: string };

/** `timeoutMs` bounds the wait for the answer's headers and, separately, each pause while its body arrives. */
export async function fetchResource(href: string, apiToken: string, timeoutMs: number): Promise<FetchResult> {
  let res: Dispatcher.ResponseData;
  try {
    res = await request(href, {
      method: 'GET',
      headers: { authorization: authorizationHeader(apiToken), accept: 'application/json' },
      dispatcher,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
  } catch (err) {
    const e = err as Error & { code?: string };
    const why = e.code === 'UND_ERR_HEADERS_TIMEOUT' ? `timed out after ${timeoutMs} ms` : (e.code ?? e.message);
    return { kind: 'retry', message: `GET failed: ${why}` };
  }
  const status = res.statusCode;
  if (status === 401 || status === 403) return drained(res, { kind: 'unauthorized', status });
  if (status === 404 || status === 410) return drained(res, { kind: 'gone', status });
  if (status === 429 || status === 408 || status >= 500) {
    return drained(res, { kind: 'retry', message: `marketplace answered ${status}`, retryAfterMs: parseRetryAfter(header(res, 'retry-after')) });
  }
  if (status < 200 || status >= 300) return drained(res, { kind: 'failed', message: `marketplace answered ${status}` });

  const declared = Number(header(res, 'content-length') ?? 0);
  if (declared > MAX_BODY_BYTES) return drained(res, { kind: 'failed', message: `resource larger than ${MAX_BODY_BYTES} bytes` });
  let body: unknown;
  try {
    const text = await readAtMost(res.body, MAX_BODY_BYTES);
    if (text === null) return { kind: 'failed', message: `resource larger than ${MAX_BODY_BYTES} bytes` };
    body = JSON.parse(text);
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'UND_ERR_BODY_TIMEOUT') return { kind: 'retry', message: `GET failed: the body stalled for ${timeoutMs} ms` };
    if (code?.startsWith('UND_ERR')) return { kind: 'retry', message: `GET failed: ${code}` };
    return { kind: 'retry', message: `marketplace answered ${status} without a JSON body` };
  }
  const errors = softErrors(body);
  if (errors) return { kind: 'soft_error', message: errors };
  // The envelope's data is the resource; a bare body is kept whole.
  const resource = isEnvelope(body) ? body.data : body;
  return { kind: 'ok', resource };
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

const header = (res: Dispatcher.ResponseData, name: string): string | null => {
  const value = res.headers[name];
  return (Array.isArray(value) ? value[0] : value) ?? null;
};

const isEnvelope = (body: unknown): body is { meta: unknown; data: unknown } =>
  typeof body === 'object' && body !== null && 'meta' in body && 'data' in body;

async function drained<T>(res: Dispatcher.ResponseData, result: T): Promise<T> {
  // Read and dropped (small error bodies), so the connection can be reused.
  await res.body.dump().catch(() => {});
  return result;
}
