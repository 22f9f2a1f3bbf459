/**
 * GET of a notification's href with the company's token (SPEC §5), classified into the outcomes the
 * worker acts on. The href is used exactly as received; redirects are never followed, so the token
 * cannot be carried to another address.
 */
import { authorizationHeader } from '../marketplace/contract.js';
import { parseRetryAfter, softErrors } from '../marketplace/client.js';

const MAX_BODY_BYTES = 5 * 1024 * 1024;

export type FetchResult =
  | { kind: 'ok'; resource: unknown }
  | { kind: 'soft_error'; message: string }
  | { kind: 'gone'; status: number }
  | { kind: 'unauthorized'; status: number }
  | { kind: 'retry'; message: string; retryAfterMs?: number }
  | { kind: 'failed'; message: string };

export async function fetchResource(href: string, apiToken: string, timeoutMs: number): Promise<FetchResult> {
  let res: Response;
  try {
    res = await fetch(href, {
      headers: { authorization: authorizationHeader(apiToken), accept: 'application/json' },
      redirect: 'manual',
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const e = err as Error & { cause?: { code?: string } };
    const why = e.name === 'TimeoutError' ? `timed out after ${timeoutMs} ms` : (e.cause?.code ?? e.message);
    return { kind: 'retry', message: `GET failed: ${why}` };
  }
  const status = res.status;
  if (status === 401 || status === 403) return drained(res, { kind: 'unauthorized', status });
  if (status === 404 || status === 410) return drained(res, { kind: 'gone', status });
  if (status === 429 || status === 408 || status >= 500) {
    return drained(res, { kind: 'retry', message: `marketplace answered ${status}`, retryAfterMs: parseRetryAfter(res.headers.get('retry-after')) });
  }
  if (status < 200 || status >= 300) return drained(res, { kind: 'failed', message: `marketplace answered ${status}` });

  const declared = Number(res.headers.get('content-length') ?? 0);
  if (declared > MAX_BODY_BYTES) return drained(res, { kind: 'failed', message: `resource larger than ${MAX_BODY_BYTES} bytes` });
  let body: unknown;
  try {
    const text = await res.text();
    if (text.length > MAX_BODY_BYTES) return { kind: 'failed', message: `resource larger than ${MAX_BODY_BYTES} bytes` };
    body = JSON.parse(text);
  } catch {
    return { kind: 'retry', message: `marketplace answered ${status} without a JSON body` };
  }
  const errors = softErrors(body);
  if (errors) return { kind: 'soft_error', message: errors };
  // The envelope's data is the resource; a bare body is kept whole.
  const resource = isEnvelope(body) ? body.data : body;
  return { kind: 'ok', resource };
}

const isEnvelope = (body: unknown): body is { meta: unknown; data: unknown } =>
  typeof body === 'object' && body !== null && 'meta' in body && 'data' in body;

async function drained<T>(res: Response, result: T): Promise<T> {
  await res.body?.cancel().catch(() => {});
  return result;
}
