/** The operator console over HTTP, as a browser without JavaScript would use it: no redirect followed, forms url-encoded. */
import { expect } from 'vitest';
import { ADMIN_TOKEN } from './skyhook.js';

/** `url`: Skyhook's, read at each request (a test file learns it in beforeAll). */
export function consoleClient(url: () => string) {
  const get = (path: string, cookie?: string, headers: Record<string, string> = {}) =>
    fetch(`${url()}/console${path}`, { redirect: 'manual', headers: { ...(cookie ? { cookie } : {}), ...headers } });
  const post = (path: string, form: Record<string, string>, cookie?: string, headers: Record<string, string> = {}) =>
    fetch(`${url()}/console${path}`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}), ...headers },
      body: new URLSearchParams(form).toString(),
    });

  /** Signs in (with ADMIN_TOKEN unless told a key); answers the cookie to send and the session's CSRF token (read from the page it lands on, as a browser would). */
  async function signIn(token = ADMIN_TOKEN): Promise<{ cookie: string; setCookie: string; csrf: string }> {
    const res = await post('/sign-in', { token, next: '/' });
    expect(res.status).toBe(303);
    const setCookie = res.headers.get('set-cookie') ?? '';
    const cookie = setCookie.split(';')[0]!;
    const landing = (res.headers.get('location') ?? '/console').slice('/console'.length) || '/';
    const page = await (await get(landing, cookie)).text();
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec(page)?.[1] ?? '';
    expect(csrf).not.toBe('');
    return { cookie, setCookie, csrf };
  }

  return { get, post, signIn };
}
