/**
 * GET of a notification's href with the company's token (SPEC §5), through the one marketplace client,
 * classified into the outcomes the worker acts on. The href is used exactly as received.
 */
import { dataOf, isTransientStatus, MarketplaceError, MAX_ANSWER_BYTES, parseRetryAfter, softErrors, type MarketplaceClient } from '../marketplace/client.js';

/** What one GET found; `status` is the HTTP status, null when no answer came (a network error, a timeout). */
export type FetchResult =
  | { kind: 'ok'; status: number; resource: unknown }
  | { kind: 'soft_error'; status: number; message: string }
  | { kind: 'gone'; status: number }
  | { kind: 'unauthorized'; status: number }
  /** `noAnswer` says why no answer came (status null). */
  | { kind: 'retry'; status: number | null; message: string; retryAfterMs?: number; noAnswer?: 'timeout' | 'network' }
  | { kind: 'failed'; status: number; message: string };

export async function fetchResource(client: MarketplaceClient, href: string, apiToken: string): Promise<FetchResult> {
  let answer;
  try {
    answer = await client.exchange(href, apiToken);
  } catch (err) {
    // The notification keeps its href: its error says what went wrong, not where (failures group by reason).
    const request = `GET ${href}`;
    if (err instanceof MarketplaceError) {
      const message = err.message.startsWith(request) ? `the GET ${err.message.slice(request.length).trim()}` : err.message;
      return { kind: 'retry', status: null, message, noAnswer: err.kind === 'timeout' ? 'timeout' : 'network' };
    }
    throw err;
  }
  const { status, text } = answer;
  if (status === 401 || status === 403) return { kind: 'unauthorized', status };
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
