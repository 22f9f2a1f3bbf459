/**
 * GET of a notification's href with the company's connection (SPEC §5, §14), through the one marketplace
 * client, classified into the outcomes the worker acts on. The href is used exactly as received.
 */
import { dataOf, isTransientStatus, MarketplaceError, MAX_ANSWER_BYTES, parseRetryAfter, softErrors, type ApiConnection, type MarketplaceClient } from '../marketplace/client.js';

/** What one GET found; `status` is the HTTP status, null when no answer came (a network error, a timeout). */
export type FetchResult =
  | { kind: 'ok'; status: number; resource: unknown }
  | { kind: 'soft_error'; status: number; message: string }
  | { kind: 'gone'; status: number }
  /** `status` null: the OAuth token endpoint refused the client credentials, so the GET was never sent. */
  | { kind: 'unauthorized'; status: number | null; message: string }
  /** `noAnswer` says why no answer came (status null). */
  | { kind: 'retry'; status: number | null; message: string; retryAfterMs?: number; noAnswer?: 'timeout' | 'network' }
  | { kind: 'failed'; status: number; message: string };

/** What a 401 or 403 refused, in the admin's words. */
function refusedWhat(conn: ApiConnection, status: number): string {
  if (conn.oauth) return status === 401 ? 'the OAuth access token was refused, a newly fetched one too' : 'the OAuth access token was refused';
  return conn.profile === 'avinode' ? 'the auth token or API token was refused' : 'the API token was refused';
}

export async function fetchResource(client: MarketplaceClient, href: string, conn: ApiConnection): Promise<FetchResult> {
  let answer;
  try {
    answer = await client.exchange(href, conn);
  } catch (err) {
    if (err instanceof MarketplaceError && err.kind === 'token_refused') return { kind: 'unauthorized', status: null, message: err.message };
    // The notification keeps its href: its error says what went wrong, not where (failures group by reason).
    const request = `GET ${href}`;
    if (err instanceof MarketplaceError) {
      const message = err.message.startsWith(request) ? `the GET ${err.message.slice(request.length).trim()}` : err.message;
      return { kind: 'retry', status: null, message, noAnswer: err.kind === 'timeout' ? 'timeout' : 'network' };
    }
    throw err;
  }
  const { status, text } = answer;
  if (status === 401 || status === 403) return { kind: 'unauthorized', status, message: `marketplace answered ${status}: ${refusedWhat(conn, status)}` };
  if (status === 404 || status === 410) return { kind: 'gone', status };
  if (isTransientStatus(status)) return { kind: 'retry', status, message: `marketplace answered ${status}`, retryAfterMs: parseRetryAfter(answer.header('retry-after')) };
  if (status < 200 || status >= 300) return { kind: 'failed', status, message: `marketplace answered ${status}` };
  if (text === null) return { kind: 'failed', status, message: `resource larger than ${MAX_ANSWER_BYTES} bytes` };

  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    // A 2xx without JSON is taken for a passing fault (a proxy's page, say): asked again with backoff.
    return { kind: 'retry', status, message: `marketplace answered ${status} without a JSON body` };
  }
  const errors = softErrors(body);
  if (errors) return { kind: 'soft_error', status, message: errors };
  return { kind: 'ok', status, resource: dataOf(body) };
}
