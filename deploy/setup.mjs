#!/usr/bin/env node
/* global process, console, fetch, AbortSignal, setTimeout */
/**
 * One-shot setup of the local compose stack (docker-compose.yml, service `setup`): for every company of
 * the simulator's config file, a Skyhook company (same name, the simulator's API, the company's token)
 * and an active webhook registered on the simulator, all through Skyhook's admin API.
 *
 * Idempotent: it only creates what is missing, so it runs on every `docker compose up`. A call answered 502
 * or 503 (the marketplace or a store not reachable for a moment: nothing was done) is tried again for a
 * minute, as is a GET that got no answer. The simulator
 * keeps its state in memory, so after it restarts the webhook setting Skyhook registered is gone: then a
 * new webhook is registered (the old local row stays, unused).
 *
 * Plain Node (no dependencies): it runs in the Skyhook image, `node /deploy/setup.mjs`.
 *   SKYHOOK_URL        default http://api:3000
 *   ADMIN_TOKEN        required: Skyhook's admin token
 *   SIMULATOR_API_URL  default http://simulator:4010/api (the companies' API base URL)
 *   COMPANIES_FILE     default /deploy/simulator-companies.json ({"companies": [{"id", "name", "token"}]})
 *   EVENT_TYPES        default TripRequest,TripRequestSellerResponse,TripChatFromBuyer,ClientLeads,EmptyLegs
 *   AUTH_TYPE          default BASIC (or OAUTH)
 */
import { readFile } from 'node:fs/promises';

const env = process.env;
const skyhookUrl = (env.SKYHOOK_URL ?? 'http://api:3000').replace(/\/+$/, '');
const simulatorApiUrl = (env.SIMULATOR_API_URL ?? 'http://simulator:4010/api').replace(/\/+$/, '');
const companiesFile = env.COMPANIES_FILE ?? '/deploy/simulator-companies.json';
const eventTypes = (env.EVENT_TYPES ?? 'TripRequest,TripRequestSellerResponse,TripChatFromBuyer,ClientLeads,EmptyLegs').split(',').map((s) => s.trim()).filter(Boolean);
const authType = env.AUTH_TYPE ?? 'BASIC';
const adminToken = env.ADMIN_TOKEN;
const READY_TIMEOUT_MS = 120_000;

function fail(message) {
  console.error(`setup: ${message}`);
  process.exit(1);
}

/** How long a call that meets a passing failure is tried again: 502 or 503 (nothing was done), or, for a GET, no answer. */
const RETRY_FOR_MS = 60_000;

async function request(url, options = {}) {
  const deadline = Date.now() + RETRY_FOR_MS;
  for (let wait = 1000; ; wait = Math.min(wait * 2, 8000)) {
    const answer = await requestOnce(url, options).catch((err) => {
      if ((options.method ?? 'GET') !== 'GET' || Date.now() + wait > deadline) throw err;
      return { status: 0, body: err instanceof Error ? err.message : String(err) };
    });
    if ((answer.status !== 0 && answer.status !== 502 && answer.status !== 503) || Date.now() + wait > deadline) return answer;
    console.log(`setup: ${options.method ?? 'GET'} ${url} answered ${answer.status || 'nothing'}; trying again in ${wait / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, wait));
  }
}

async function requestOnce(url, { method = 'GET', token, body } = {}) {
  const res = await fetch(url, {
    method,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  let json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = text;
  }
  return { status: res.status, body: json };
}

const admin = (method, path, body) => request(`${skyhookUrl}/admin${path}`, { method, token: adminToken, body });

function expectStatus(what, answer, ...statuses) {
  if (!statuses.includes(answer.status)) fail(`${what}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/** Every item of an admin list, following nextCursor. */
async function listAll(path) {
  const items = [];
  let cursor = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const page = expectStatus(`GET ${path}`, await admin('GET', `${path}${sep}limit=500${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`), 200);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

/** Waits for Skyhook's /readyz (compose already waits for /healthz; this also covers a manual run). */
async function waitReady() {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const ok = await requestOnce(`${skyhookUrl}/readyz`).then((r) => r.status === 200, () => false);
    if (ok) return;
    if (Date.now() > deadline) fail(`${skyhookUrl}/readyz did not answer 200 within ${READY_TIMEOUT_MS / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** The ids of the webhook settings the simulator holds, active ones only. */
async function simulatorSettingIds(token) {
  const answer = await request(`${simulatorApiUrl}/webhooks/settings`, { token });
  if (answer.status !== 200) fail(`the simulator at ${simulatorApiUrl} answered ${answer.status} to GET /webhooks/settings`);
  return new Set((answer.body?.data ?? []).filter((s) => s.active).map((s) => String(s.id)));
}

async function main() {
  if (!adminToken) fail('ADMIN_TOKEN is not set');
  let config;
  try {
    config = JSON.parse(await readFile(companiesFile, 'utf8'));
  } catch (err) {
    fail(`cannot read ${companiesFile}: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!Array.isArray(config?.companies) || config.companies.length === 0) fail(`${companiesFile} has no companies`);

  await waitReady();
  const existing = await listAll('/companies');
  for (const account of config.companies) {
    const name = account.name ?? account.id;
    let company = existing.find((c) => c.name === name);
    if (company) console.log(`company "${name}" exists (${company.id})`);
    else {
      company = expectStatus(
        `create company "${name}"`,
        await admin('POST', '/companies', { name, apiBaseUrl: simulatorApiUrl, apiToken: account.token }),
        201,
      );
      console.log(`company "${name}" created (${company.id})`);
    }

    const remote = await simulatorSettingIds(account.token);
    const webhooks = await listAll(`/companies/${company.id}/webhooks`);
    const live = webhooks.find((w) => w.active && remote.has(String(w.remoteId)));
    if (live) {
      console.log(`  webhook ${live.id} is active -> ${live.targetURI}`);
      continue;
    }
    const webhook = expectStatus(
      `create the webhook of "${name}"`,
      await admin('POST', `/companies/${company.id}/webhooks`, { eventTypes, authType, displayName: `${name} (compose)` }),
      201,
    );
    console.log(`  webhook ${webhook.id} created (${webhook.authType}) -> ${webhook.targetURI}`);
  }
  console.log('setup done. Fire events with:');
  console.log(`  docker compose exec simulator node bin/skyhook.js simulator fire --company ${config.companies[0].id} --event TripRequest --count 100 --resources 10`);
}

main().catch((err) => fail(err instanceof Error ? err.message : String(err)));
