/**
 * `npm run demo`: the simulator and Skyhook together on localhost. Two demo companies (one BASIC
 * webhook on its own targetURI, one OAUTH webhook on the shared targetURI), each with a destination: a
 * receiver the demo runs itself, standing for the company's own application, which verifies every delivery
 * with the destination's secret. A lead and a quote, a burst of trip events, live progress, a summary table
 * (processed, then delivered and verified); then the demo's rows and queue keys are removed, so it runs again.
 */
import { createServer } from 'node:net';
import pg from 'pg';
import { pino } from 'pino';
import { deleteCompaniesNow } from './companies/purge.js';
import { loadConfig } from './config.js';
import type { EventType } from './marketplace/contract.js';
import { deleteKeysWithPrefix } from './lib/redis/keys.js';
import { createRuntime, type Runtime } from './runtime.js';
import { findUnreachable, howToStart } from './lib/dependencies.js';
import { describeError } from './lib/error-reporter.js';
import { startWebhookListener, type WebhookListener } from './lib/webhook-listener.js';
import { startSimulator, type Simulator } from './simulator/index.js';

const DEFAULT_DEMO_PREFIX = '{skyhook-demo}';

/** PostgreSQL or Redis does not answer: the demo cannot start, and `lines` say why and what to run. */
export class DemoCannotStart extends Error {
  constructor(readonly lines: string[]) {
    super(lines[0]);
  }
}
const DEMO_NAME = 'Demo ·';
const ADMIN_TOKEN = 'demo-admin-token-not-secret';

interface DemoCompany {
  simId: string;
  name: string;
  authType: 'BASIC' | 'OAUTH';
  sharedTarget: boolean;
  companyId?: string;
  /** The webhook-ids its receiver verified (a retried delivery counts once). */
  verified: Set<string>;
  /** Requests its receiver refused: a signature that did not verify. */
  refused: number;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

/** `keep`: once the summary is printed the stack keeps running (the console to explore) until Ctrl-C; the clean-up follows then. */
// Over 80 lines on purpose: the demo's steps in the order they run, read top to bottom.
export async function runDemo(opts: { events: number; keep?: boolean }): Promise<{ fired: number; processed: number; failed: number; events: number; delivered: number; verified: number }> {
  const { events } = opts;
  const out = process.stdout;
  const say = (line = '') => out.write(`${line}\n`);
  const port = await freePort();
  // Its own key prefix, so the demo never touches a running Skyhook's queue (tests give their own).
  const prefix = process.env.DEMO_QUEUE_PREFIX ?? DEFAULT_DEMO_PREFIX;
  const config = loadConfig({
    ...process.env,
    NODE_ENV: 'development',
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    ADMIN_TOKEN,
    QUEUE_PREFIX: prefix,
    ROLE: 'all',
    LOG_LEVEL: 'warn',
    FETCH_MIN_INTERVAL_MS: process.env.FETCH_MIN_INTERVAL_MS ?? '300',
  });
  // Before anything else is printed or started: a newcomer without PostgreSQL or Redis is told what to run.
  const missing = await findUnreachable({ databaseUrl: config.databaseUrl, redisUrl: config.redisClusterNodes ? undefined : config.redisUrl });
  if (missing.length > 0) throw new DemoCannotStart(howToStart(missing));
  const companies: DemoCompany[] = [
    { simId: 'demo-charter', name: `${DEMO_NAME} Charter Operator (BASIC, own targetURI)`, authType: 'BASIC', sharedTarget: false, verified: new Set(), refused: 0 },
    { simId: 'demo-broker', name: `${DEMO_NAME} Broker (OAUTH, shared targetURI)`, authType: 'OAUTH', sharedTarget: true, verified: new Set(), refused: 0 },
  ];

  say(`Skyhook demo: database ${new URL(config.databaseUrl).pathname.slice(1)}, Redis ${config.redisClusterNodes ? `cluster ${config.redisClusterNodes.map((n) => `${n.host}:${n.port}`).join(',')}` : config.redisUrl}`);
  const sim: Simulator = await startSimulator({ companies: companies.map((c) => ({ id: c.simId, name: c.name, token: `demo-token-${c.simId}` })) });
  say(`  marketplace simulator  ${sim.url}  (API base ${sim.apiBaseUrl})`);
  let runtime: Runtime | undefined;
  const receivers: WebhookListener[] = [];
  const sql = new pg.Pool({ connectionString: config.databaseUrl, max: 2 });
  try {
    await deleteKeysWithPrefix(config, prefix); // leftovers of an interrupted run, before any worker uses them
    runtime = await createRuntime(config, pino({ level: 'warn' }));
    await runtime.app!.listen({ port, host: '127.0.0.1' });
    await runtime.start();
    say(`  Skyhook (role all)     ${config.publicBaseUrl}`);
    await deleteDemoCompanies(sql);

    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${config.publicBaseUrl}/admin${path}`, {
        method,
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const json = (await res.json()) as Record<string, unknown>;
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
      return json;
    };

    say('\nSetting up through the admin API:');
    for (const c of companies) {
      const company = await admin('POST', '/companies', { name: c.name, apiBaseUrl: sim.apiBaseUrl, apiToken: `demo-token-${c.simId}` });
      c.companyId = company.id as string;
      const webhook = await admin('POST', `/companies/${c.companyId}/webhooks`, {
        eventTypes: ['TripRequest', 'TripChatFromBuyer', 'ClientLeads', 'TripRequestSellerResponse'] satisfies EventType[],
        authType: c.authType,
        sharedTarget: c.sharedTarget,
      });
      // The company's own application: a receiver on a port of its own, verifying with the destination's secret.
      const receiverPort = await freePort();
      const url = `http://127.0.0.1:${receiverPort}/skyhook`;
      const destination = await admin('POST', `/companies/${c.companyId}/destinations`, { url, description: `${c.simId}'s application (the demo's receiver)` });
      receivers.push(
        await startWebhookListener({
          port: receiverPort,
          path: '/skyhook',
          secret: destination.secret as string,
          onRequest: (heard) => {
            if (heard.verification === 'verified' && heard.webhookId) c.verified.add(heard.webhookId);
            else c.refused++;
          },
        }),
      );
      say(`  ${c.name}\n      webhook ${webhook.remoteId} -> ${webhook.targetURI}\n      destination ${destination.id as string} -> ${url} (verifies each delivery with the destination's secret)`);
    }

    const [operator, broker] = companies as [DemoCompany, DemoCompany];
    say('\nCalling the marketplace for the companies:');
    const lead = await admin('POST', `/companies/${broker.companyId}/leads`, demoLead());
    say(`  lead ${lead.clientIdentifier} created for ${broker.simId}: marketplace id ${lead.remoteId}`);
    const quote = await admin('POST', `/companies/${operator.companyId}/quotes`, { requestId: 'demo-lift-1', actAsAccount: 'demo.dispatcher', submission: demoQuote() });
    say(`  quote ${DEMO_QUOTE_ID} submitted for ${operator.simId}: tripmsgs ${quote.tripMessageId}, sellerQuote ${quote.sellerQuoteId}, lift ${quote.liftId}`);

    say(`\nFiring ${events} events per company (trip requests over 40 resources, chats over 20) ...`);
    const started = Date.now();
    const fired = new Map<string, number>();
    for (const c of companies) {
      const trips = await sim.fire({ companyId: c.simId, eventType: 'TripRequest', count: Math.round(events * 0.7), resources: 40 });
      const chats = await sim.fire({ companyId: c.simId, eventType: 'TripChatFromBuyer', count: events - Math.round(events * 0.7), resources: 20 });
      // + 1: the lead (the broker's) and the quote (the operator's) each made the marketplace notify its company once more.
      fired.set(c.companyId!, trips.length + chats.length + 1);
    }
    const total = [...fired.values()].reduce((a, b) => a + b, 0);

    const tty = out.isTTY === true;
    let rows: Row[] = [];
    for (let tick = 0; ; tick++) {
      rows = await progress(sql);
      const done = rows.reduce((a, r) => a + r.processed + r.failed + r.discarded, 0);
      // Every event has its delivery from the transaction that stored it; the demo waits for them to end too.
      const sending = rows.reduce((a, r) => a + r.deliveriesPending, 0);
      const line = companies
        .map((c) => {
          const r = rows.find((x) => x.companyId === c.companyId);
          return `${c.simId}: received ${r?.received ?? 0}/${fired.get(c.companyId!)} processed ${r?.processed ?? 0} failed ${r?.failed ?? 0} delivered ${r?.delivered ?? 0}/${r?.events ?? 0}`;
        })
        .join('   ');
      if (tty) out.write(`\r  ${line}   `);
      else if (tick % 4 === 0 || (done >= total && sending === 0)) say(`  ${line}`);
      if (done >= total && sending === 0) break;
      if (Date.now() - started > 120_000) throw new Error('the demo did not finish within 2 minutes');
      await new Promise((r) => setTimeout(r, 250));
    }
    if (tty) say();
    const seconds = (Date.now() - started) / 1000;

    const report = sim.report();
    say('\nSummary');
    const table = companies.map((c) => {
      const r = rows.find((x) => x.companyId === c.companyId)!;
      const fetches = report.fetches.filter((f) => f.ownerCompanyId === c.simId).length;
      return {
        company: c.simId,
        auth: `${c.authType}${c.sharedTarget ? ' shared' : ' own'}`,
        fired: fired.get(c.companyId!)!,
        stored: r.received,
        processed: r.processed,
        failed: r.failed,
        'resource GETs': fetches,
        snapshots: r.snapshots,
        'p50 ms': r.p50Ms,
        events: r.events,
        delivered: r.delivered,
        verified: c.verified.size,
      };
    });
    printTable(say, table);
    const processed = table.reduce((a, r) => a + r.processed, 0);
    const failed = table.reduce((a, r) => a + r.failed, 0);
    say(`\n${processed} of ${total} notifications processed in ${seconds.toFixed(1)} s; ${report.fetches.length} resource GETs (coalesced);`);
    say(`the marketplace's notifications: delivered ${report.delivered}, retried ${report.retried}, given up ${report.gaveUp}; every GET used its owner's token: ${report.fetches.every((f) => f.tokenCompanyId === f.ownerCompanyId)}`);
    const stored = table.reduce((a, r) => a + r.events, 0);
    const delivered = table.reduce((a, r) => a + r.delivered, 0);
    const verified = table.reduce((a, r) => a + r.verified, 0);
    const refused = companies.reduce((a, c) => a + c.refused, 0);
    say(`${delivered} of ${stored} events delivered to the companies' own applications, ${verified} verified with their destination's secret${refused > 0 ? `, ${refused} request(s) NOT verified` : ''}`);
    say(`\nOperator console: ${config.publicBaseUrl}/console  (sign in with the admin token ${ADMIN_TOKEN})`);
    if (opts.keep) {
      say('The stack keeps running. Fire more events and watch them arrive in the console:');
      say(`  node bin/skyhook.js simulator fire --url ${sim.url} --company ${companies[0]!.simId} --event TripRequest --count 20`);
      say("Press Ctrl-C to stop it and remove the demo's companies.");
      await new Promise((resolve) => process.once('SIGINT', resolve));
      say('\nStopping the demo ...');
    } else {
      say('It stopped with the demo: run `npm run demo -- --keep` to leave the stack running and explore it.');
    }
    return { fired: total, processed, failed, events: stored, delivered, verified };
  } finally {
    await runtime?.close();
    for (const receiver of receivers) await receiver.close();
    await sim.stop();
    // The next run starts by cleaning up too: a failure here is said, not fatal.
    await deleteDemoCompanies(sql).catch((err: unknown) => say(`could not remove the demo companies: ${describeError(err)}`));
    await deleteKeysWithPrefix(config, prefix).catch((err: unknown) => say(`could not remove the demo's Redis keys: ${describeError(err)}`));
    await sql.end();
  }
}

const DEMO_QUOTE_ID = 'demo-quote-1';

const demoLead = () => ({
  clientIdentifier: `demo-lead-${Date.now()}`,
  searchId: 'demo-search-1',
  inquiryLift: [{ aircraftType: 'Citation XLS', priceExpectation: 18500, availabilityId: null }],
  leadContactInfo: { name: 'Ada Client', emailAddresses: [{ type: 'Work', emailAddress: 'ada@client.example.com' }], phoneNumbers: [{ type: 'Work', phoneNumber: '+41791234567' }] },
  leadCurrency: 'EUR',
  leadLocale: 'en',
  leadMessage: 'Geneva to London, 4 passengers',
});

const demoQuote = () => ({
  message: 'Floating fleet offer',
  quote: {
    segments: [
      {
        startAirport: { icao: 'LSGG' },
        endAirport: { icao: 'EGLF' },
        dateTime: { date: '2027-03-14', time: '09:30', departure: true, local: true },
        paxCount: '4',
        paxTBD: false,
        timeTBD: false,
        distanceNM: 410,
        blockTimeMinutes: 95,
        flightMinutes: 80,
      },
    ],
    lift: { aircraftTail: '', aircraftType: '', aircraftCategory: 'Midsize Jet' },
    currencyCode: 'EUR',
    sellerUniqueQuoteIdentifier: DEMO_QUOTE_ID,
    totalPrice: 21250,
    lineItems: [
      { visibleToBuyer: true, displayName: 'Flight', type: 'FLT', price: 20000, formattedUnitPrice: '20000', formattedQuantity: '1' },
      { visibleToBuyer: true, displayName: 'Catering', type: '', price: 1250, formattedUnitPrice: '312.5', formattedQuantity: '4' },
    ],
  },
});

interface Row {
  companyId: string;
  received: number;
  processed: number;
  failed: number;
  discarded: number;
  snapshots: number;
  p50Ms: number | null;
  events: number;
  delivered: number;
  deliveriesPending: number;
}

async function progress(sql: pg.Pool): Promise<Row[]> {
  const { rows } = await sql.query(`
    SELECT c.id AS "companyId",
           count(n.id)::int AS received,
           count(n.id) FILTER (WHERE n.status = 'processed')::int AS processed,
           count(n.id) FILTER (WHERE n.status = 'failed')::int AS failed,
           count(n.id) FILTER (WHERE n.status = 'discarded')::int AS discarded,
           (SELECT count(*)::int FROM resources r WHERE r.company_id = c.id) AS snapshots,
           round(percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM n.processed_at - n.received_at) * 1000)
                 FILTER (WHERE n.status = 'processed'))::int AS "p50Ms",
           (SELECT count(*)::int FROM events e WHERE e.company_id = c.id) AS events,
           (SELECT count(*)::int FROM deliveries d WHERE d.company_id = c.id AND d.status = 'delivered') AS delivered,
           (SELECT count(*)::int FROM deliveries d WHERE d.company_id = c.id AND d.status = 'pending') AS "deliveriesPending"
    FROM companies c LEFT JOIN notifications n ON n.company_id = c.id
    WHERE c.name LIKE '${DEMO_NAME}%'
    GROUP BY c.id`);
  return rows as Row[];
}

/** The demo's companies go, and with them their webhooks, notifications, snapshots, events and deliveries. */
const deleteDemoCompanies = (sql: pg.Pool): Promise<void> => deleteCompaniesNow(sql, `${DEMO_NAME}%`);

function printTable(say: (line: string) => void, rows: Record<string, string | number | null>[]): void {
  const headers = Object.keys(rows[0] ?? {});
  const width = (h: string) => Math.max(h.length, ...rows.map((r) => String(r[h] ?? '-').length));
  const line = (cells: string[]) => `  ${cells.map((c, i) => c.padEnd(width(headers[i]!))).join('  ')}`;
  say(line(headers));
  say(line(headers.map((h) => '-'.repeat(width(h)))));
  for (const r of rows) say(line(headers.map((h) => String(r[h] ?? '-'))));
}
