/**
 * A local resource server standing in for the marketplace's resource GETs: answers every
 * GET /api/<type>/<id> with a small enveloped resource at once, and counts GETs per path (GET /_counts).
 *
 * For `--tenants` (bench/tenants.ts) it behaves per API token, the `Authorization: Bearer <token>` of the
 * call: `POST /_config` with `{"<token>": {latencyMs?, ratePerSecond?, retryAfterS?, refuse?}}` replaces
 * those tokens' settings (`{}` resets one). `refuse` answers 401 to resource GETs and to
 * `GET /api/webhooks/settings` (the call Skyhook checks credentials with; otherwise an empty list);
 * `ratePerSecond` answers at most that many of the token's resource GETs in any sliding second and the
 * others 429 with `Retry-After: <retryAfterS>` (default 1), at once; `latencyMs` delays the answered ones.
 * `GET /_tokens` gives per token the calls answered 200, refused 429 and refused 401, and the settings
 * calls among them.
 */
import http from 'node:http';
import { SlidingWindow } from '../src/simulator/rate-window.js';

interface TokenConfig {
  latencyMs?: number;
  ratePerSecond?: number;
  retryAfterS?: number;
  refuse?: boolean;
}
interface TokenCounts {
  answered: number;
  refused429: number;
  refused401: number;
  settings: number;
}

const ENVELOPE_META = { errors: [], warnings: [], infos: [] };
const SETTINGS_PATH = '/api/webhooks/settings';

const counts = new Map<string, number>();
const configs = new Map<string, { config: TokenConfig; window: SlidingWindow | null }>();
const tokenCounts = new Map<string, TokenCounts>();

const tallyOf = (token: string): TokenCounts => {
  let tally = tokenCounts.get(token);
  if (!tally) tokenCounts.set(token, (tally = { answered: 0, refused429: 0, refused401: 0, settings: 0 }));
  return tally;
};

function json(res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

function configure(req: http.IncomingMessage, res: http.ServerResponse): void {
  let text = '';
  req.setEncoding('utf8');
  req.on('data', (chunk: string) => (text += chunk));
  req.on('end', () => {
    try {
      const given = JSON.parse(text) as Record<string, TokenConfig>;
      for (const [token, config] of Object.entries(given)) {
        const rate = config.ratePerSecond;
        configs.set(token, { config, window: rate !== undefined && rate > 0 ? new SlidingWindow(rate) : null });
      }
      json(res, 200, Object.fromEntries([...configs].map(([token, { config }]) => [token, config])));
    } catch (error) {
      json(res, 400, { error: error instanceof Error ? error.message : String(error) });
    }
  });
}

const server = http.createServer((req, res) => {
  const path = req.url ?? '/';
  if (path === '/_counts') return json(res, 200, Object.fromEntries(counts));
  if (path === '/_tokens') return json(res, 200, Object.fromEntries(tokenCounts));
  if (path === '/_config' && req.method === 'POST') return configure(req, res);

  const token = /^Bearer (\S+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
  const tally = tallyOf(token);
  const own = configs.get(token);
  if (path === SETTINGS_PATH) {
    tally.settings++;
    if (own?.config.refuse) {
      tally.refused401++;
      return json(res, 401, { meta: { ...ENVELOPE_META, errors: [{ code: 'unauthorized', message: 'token refused' }] }, data: null });
    }
    tally.answered++;
    return json(res, 200, { meta: ENVELOPE_META, data: [] });
  }

  counts.set(path, (counts.get(path) ?? 0) + 1);
  if (own?.config.refuse) {
    tally.refused401++;
    return json(res, 401, { meta: { ...ENVELOPE_META, errors: [{ code: 'unauthorized', message: 'token refused' }] }, data: null });
  }
  if (own?.window && !own.window.tryTake()) {
    tally.refused429++;
    return json(res, 429, { meta: { ...ENVELOPE_META, errors: [{ code: 'rate_limited', message: 'too many requests' }] }, data: null }, { 'retry-after': String(own.config.retryAfterS ?? 1) });
  }
  const [, , type, id] = path.split('/');
  const answer = () => {
    tally.answered++;
    json(res, 200, { meta: ENVELOPE_META, data: { id, type, version: counts.get(path), status: 'open' } });
  };
  const latency = own?.config.latencyMs ?? 0;
  if (latency > 0) setTimeout(answer, latency);
  else answer();
});
server.keepAliveTimeout = 60_000;
server.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
