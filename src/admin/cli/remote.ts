/**
 * The CLI against a running Skyhook's admin API (SPEC §10.1): `--url` or SKYHOOK_URL, and a key in
 * SKYHOOK_API_KEY. The same commands run the same code: they call these services, which answer what the
 * local ones answer, each over its admin route, so the output is the same, and the key's reach is the
 * server's to hold (another company's ids answer 404, a permission the role lacks 403). The server writes
 * the audit entries, as the key's.
 */
import { Problem } from '../../lib/problem.js';
import type { Services } from '../../services/index.js';
import { UsageError } from '../../lib/cli-usage.js';

type Query = Record<string, string | number | boolean | undefined | null>;

/** Where the CLI runs its commands: null when it runs them locally. */
export function remoteTarget(flagUrl: string | undefined, env: NodeJS.ProcessEnv): { url: string; key: string } | null {
  const url = flagUrl ?? env.SKYHOOK_URL;
  if (!url) return null;
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new UsageError([`--url must be the address of a running Skyhook, such as https://skyhook.example.com (got "${url}")`]);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new UsageError([`--url must be http or https (got "${url}")`]);
  const key = env.SKYHOOK_API_KEY;
  if (!key) throw new UsageError(['SKYHOOK_API_KEY must hold a key (skh_...) to run commands against a Skyhook at --url or SKYHOOK_URL']);
  return { url: parsed.toString().replace(/\/+$/, ''), key };
}

/** One admin API call: its JSON answer and status; a problem answered becomes the Problem the local services would throw. */
function client(target: { url: string; key: string }) {
  return async (method: string, path: string, opts: { query?: Query; body?: unknown } = {}): Promise<{ status: number; json: unknown }> => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== null) q.set(k, String(v));
    const res = await fetch(`${target.url}/admin${path}${q.size > 0 ? `?${q}` : ''}`, {
      method,
      headers: { authorization: `Bearer ${target.key}`, ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
    });
    const text = await res.text();
    let json: unknown = null;
    if (text) {
      try {
        json = JSON.parse(text);
      } catch {
        throw new Error(`${target.url} answered ${res.status} with something other than JSON: is it a Skyhook?`);
      }
    }
    if (res.status >= 400) {
      const p = (json ?? {}) as { title?: string; detail?: string; code?: string; errors?: { field: string; message: string }[] };
      throw new Problem(res.status, p.title ?? 'Error', p.detail, { code: p.code, errors: p.errors });
    }
    return { status: res.status, json };
  };
}

const enc = encodeURIComponent;

/** One lookup per distinct id, as a map by id. */
const byId = async (ids: string[], lookup: (id: string) => Promise<string>): Promise<Map<string, string>> =>
  new Map(await Promise.all([...new Set(ids)].map(async (id) => [id, await lookup(id)] as const)));

/** The services the CLI's commands call, each over the admin API. A command that needs more (a live tail) says it runs only locally. */
export function remoteServices(target: { url: string; key: string }): Services {
  const call = client(target);
  const get = async (path: string, query?: Query) => (await call('GET', path, { query })).json as never;
  const send = async (method: string, path: string, body?: unknown, query?: Query) => (await call(method, path, { body, query })).json as never;
  /** POST that answers 201 for a new one and 200 for a repeat: `created` says which. */
  const sendOnce = async (path: string, body: unknown) => {
    const { status, json } = await call('POST', path, { body });
    return { view: json as never, created: status === 201 };
  };
  // A company the key cannot see is named by its id (a company key sees its own alone).
  const companyName = (id: string) =>
    get(`/companies/${enc(id)}`).then(
      (c) => (c as { name: string }).name,
      (err: unknown) => {
        if (err instanceof Problem && err.status === 404) return id;
        throw err;
      },
    );
  const services = {
    companies: {
      create: (body: unknown) => send('POST', '/companies', body),
      list: (q: Query) => get('/companies', q),
      get: (id: string) => get(`/companies/${enc(id)}`),
      update: (id: string, patch: unknown) => send('PATCH', `/companies/${enc(id)}`, patch),
      names: (ids: string[]) => byId(ids, companyName),
    },
    deletions: {
      deleteCompany: async (id: string, opts: { force?: boolean }) => (await send('DELETE', `/companies/${enc(id)}`, undefined, { force: opts.force || undefined })) ?? { remainingRemoteSettings: [] },
      deleteWebhook: async (companyId: string, webhookId: string, opts: { force?: boolean }) =>
        (await send('DELETE', `/companies/${enc(companyId)}/webhooks/${enc(webhookId)}`, undefined, { force: opts.force || undefined })) ?? { remainingRemoteSettings: [] },
    },
    webhooks: {
      create: (companyId: string, body: unknown) => send('POST', `/companies/${enc(companyId)}/webhooks`, body),
      list: (companyId: string) => get(`/companies/${enc(companyId)}/webhooks`),
      get: (companyId: string, id: string) => get(`/companies/${enc(companyId)}/webhooks/${enc(id)}`),
      update: (companyId: string, id: string, patch: unknown) => send('PATCH', `/companies/${enc(companyId)}/webhooks/${enc(id)}`, patch),
      reconcile: (companyId: string, opts: { apply: boolean }) => send('POST', `/companies/${enc(companyId)}/webhooks/reconcile`, { apply: opts.apply }),
    },
    notifications: {
      list: (q: Query) => get('/notifications', q),
      get: (id: number) => get(`/notifications/${id}`),
      replay: (id: number) => send('POST', `/notifications/${id}/replay`),
      replayMatching: (filter: unknown) => send('POST', '/notifications/replay', filter),
      resync: (companyId: string) => send('POST', `/companies/${enc(companyId)}/resync`),
      listResources: (q: Query) => get('/resources', q),
      resourceHistory: (q: Query) => get('/resources/history', q),
    },
    leads: {
      create: async (companyId: string, lead: unknown) => sendOnce(`/companies/${enc(companyId)}/leads`, lead).then(({ view, created }) => ({ lead: view, created })),
      list: (companyId: string, q: Query) => get(`/companies/${enc(companyId)}/leads`, q),
    },
    quotes: {
      submit: async (companyId: string, body: unknown) => sendOnce(`/companies/${enc(companyId)}/quotes`, body).then(({ view, created }) => ({ quote: view, created })),
      list: (companyId: string, q: Query) => get(`/companies/${enc(companyId)}/quotes`, q),
    },
    declines: {
      decline: async (companyId: string, body: unknown) => sendOnce(`/companies/${enc(companyId)}/declines`, body).then(({ view, created }) => ({ decline: view, created })),
      list: (companyId: string, q: Query) => get(`/companies/${enc(companyId)}/declines`, q),
    },
    destinations: {
      create: (companyId: string, body: unknown) => send('POST', `/companies/${enc(companyId)}/destinations`, body),
      list: (companyId: string, q: Query) => get(`/companies/${enc(companyId)}/destinations`, q),
      get: (companyId: string, id: string) => get(`/companies/${enc(companyId)}/destinations/${enc(id)}`),
      update: (companyId: string, id: string, patch: unknown) => send('PATCH', `/companies/${enc(companyId)}/destinations/${enc(id)}`, patch),
      delete: async (companyId: string, id: string) => void (await send('DELETE', `/companies/${enc(companyId)}/destinations/${enc(id)}`)),
      secret: (companyId: string, id: string) => get(`/companies/${enc(companyId)}/destinations/${enc(id)}/secret`),
      test: (companyId: string, id: string) => send('POST', `/companies/${enc(companyId)}/destinations/${enc(id)}/test`),
      replay: (companyId: string, id: string, body: unknown) => send('POST', `/companies/${enc(companyId)}/destinations/${enc(id)}/replay`, body ?? {}),
      deliveries: (companyId: string, q: Query) => get(`/companies/${enc(companyId)}/deliveries`, q),
      delivery: (companyId: string, id: number) => get(`/companies/${enc(companyId)}/deliveries/${id}`),
      replayDelivery: (companyId: string, id: number) => send('POST', `/companies/${enc(companyId)}/deliveries/${id}/replay`),
      urls: (companyId: string, ids: string[]) =>
        byId(ids, async (id) => ((await get(`/companies/${enc(companyId)}/destinations/${enc(id)}`)) as { url: string }).url),
    },
    events: {
      page: (companyId: string, after: string | undefined, limit: number) => get(`/companies/${enc(companyId)}/events`, { after, limit }),
    },
    keys: {
      create: (input: { expiresAt?: Date | null }) => send('POST', '/keys', { ...input, expiresAt: input.expiresAt ? input.expiresAt.toISOString() : undefined }),
      list: (q: Query) => get('/keys', q),
      revoke: (id: string) => send('DELETE', `/keys/${enc(id)}`),
    },
    audit: {
      list: (q: Query) => get('/audit', q),
    },
  };
  // Anything else a command calls exists only where the database is.
  const only = (group: string, methods: object) =>
    new Proxy(methods, {
      get: (target, prop) => {
        if (prop in target) return target[prop as keyof typeof target];
        if (typeof prop === 'symbol' || prop === 'then') return undefined;
        throw new UsageError([`this command runs only where Skyhook's database is (${group}.${String(prop)} has no admin API route): run it without --url and SKYHOOK_URL`]);
      },
    });
  return Object.fromEntries(Object.entries(services).map(([group, methods]) => [group, only(group, methods)])) as unknown as Services;
}
