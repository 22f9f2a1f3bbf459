/**
 * The compose stack's one-shot `setup` (deploy/setup.mjs), run as compose runs it, against a stand-in for
 * Skyhook's admin API and the simulator: a call answered 502 or 503 (nothing was done) is tried again, and
 * a lasting refusal still fails the setup, naming the call.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const SETUP = fileURLToPath(new URL('../../deploy/setup.mjs', import.meta.url));

let server: Server | undefined;
afterEach(() => server?.close());

/** Serves the calls setup makes; `webhookAnswers` are the statuses of successive webhook creations. */
async function standIn(webhookAnswers: number[]): Promise<{ url: string; calls: string[] }> {
  const calls: string[] = [];
  const json = (res: ServerResponse, status: number, body: unknown) => res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    calls.push(`${req.method} ${req.url}`);
    if (req.url === '/readyz') return json(res, 200, { status: 'ok' });
    if (req.method === 'GET' && req.url?.startsWith('/admin/companies?')) return json(res, 200, { items: [], nextCursor: null });
    if (req.method === 'POST' && req.url === '/admin/companies') return json(res, 201, { id: 'c1', name: 'Demo' });
    if (req.method === 'GET' && req.url === '/api/webhooks/settings') return json(res, 200, { meta: { errors: [] }, data: [] });
    if (req.method === 'GET' && req.url?.startsWith('/admin/companies/c1/webhooks')) return json(res, 200, { items: [], nextCursor: null });
    if (req.method === 'POST' && req.url === '/admin/companies/c1/webhooks') {
      const status = webhookAnswers.shift() ?? 201;
      return status === 201
        ? json(res, 201, { id: 'w1', authType: 'BASIC', targetURI: 'http://api:3000/hooks/k' })
        : json(res, status, { title: 'Bad Gateway', code: 'marketplace_network', detail: 'UND_ERR_CONNECT_TIMEOUT' });
    }
    json(res, 404, {});
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, calls };
}

function runSetup(url: string): Promise<{ code: number | null; output: string }> {
  const companies = join(tmpdir(), `setup-companies-${process.pid}.json`);
  writeFileSync(companies, JSON.stringify({ companies: [{ id: 'demo', name: 'Demo', token: 'demo-token' }] }));
  const child = spawn(process.execPath, [SETUP], {
    env: { PATH: process.env.PATH, SKYHOOK_URL: url, ADMIN_TOKEN: 'admin', SIMULATOR_API_URL: `${url}/api`, COMPANIES_FILE: companies },
  });
  let output = '';
  child.stdout.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, output })));
}

describe('deploy/setup.mjs', () => {
  it('tries a webhook creation answered 502 again, and succeeds', async () => {
    const { url, calls } = await standIn([502, 503]);
    const { code, output } = await runSetup(url);
    expect(code, output).toBe(0);
    expect(calls.filter((c) => c === 'POST /admin/companies/c1/webhooks')).toHaveLength(3);
    expect(calls.filter((c) => c === 'POST /admin/companies')).toHaveLength(1);
    expect(output).toMatch(/answered 502; trying again in 1 s/);
    expect(output).toContain('webhook w1 created');
  });

  it('fails naming the call when the refusal lasts', async () => {
    const { url } = await standIn([400]);
    const { code, output } = await runSetup(url);
    expect(code).toBe(1);
    expect(output).toContain('setup: create the webhook of "Demo": HTTP 400');
  });
});
