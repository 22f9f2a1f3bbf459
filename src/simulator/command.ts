/** CLI: `simulator` runs the marketplace simulator; `simulator fire` fires events at a running one. */
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { z } from 'zod';
import { exitOnUsageError, USAGE_EXIT_CODE } from '../lib/cli-usage.js';
import { EVENT_TYPES } from '../marketplace/contract.js';
import { describeIssues, fetchFailureReason } from './errors.js';
import { DEFAULT_HOST, startSimulator } from './server.js';
import { companyAccount, ERROR_SHAPES } from './schemas.js';
import type { EmittedNotification, Simulation as Simulator } from './simulation.js';
import type { CompanyAccount, CompanyFaults, ErrorShape, Faults, ResourceRateLimit } from './types.js';

const DEFAULT_PORT = 4010;
const DEFAULT_URL = `http://127.0.0.1:${DEFAULT_PORT}`;
const CONTROL_CALL_TIMEOUT_MS = 60_000;

interface StartFlags {
  port: number;
  host: string;
  publicUrl?: string;
  config?: CompanyAccount[];
  company: CompanyAccount[];
  avinode: { id: string; authToken?: string }[];
  oauthClient: { id: string; clientId: string; clientSecret: string }[];
  tokenLifetime?: number;
  timeScale?: number;
  replyTimeout?: number;
  concurrency?: number;
  errorShape?: ErrorShape;
  verbose?: boolean;
}

interface FireFlags {
  url: string;
  company: string;
  event: string;
  count: number;
  resources?: number;
  resourceId?: string;
  json?: boolean;
}

// Over 80 lines on purpose: a registrar, one command after another, each a few lines; the helpers it shares sit above it.
export function registerSimulatorCommands(program: Command): void {
  const simulator = program
    .command('simulator')
    .description('the marketplace simulator: the marketplace API, webhook deliveries and resources, in memory')
    // Set before the subcommands are added, so they inherit it.
    .exitOverride(exitOnUsageError);

  // The default subcommand, so `simulator --port 4010` starts it; a subcommand rather than the group's own
  // action because `start --company <id:token>` and `fire --company <id>` must not share one option.
  const start = simulator
    .command('start', { isDefault: true })
    .description('start the simulator (the default: `simulator` alone starts it too)')
    .option('--port <port>', 'port to listen on (0 = any free port)', parsePort, DEFAULT_PORT)
    .option('--host <host>', 'address to listen on', DEFAULT_HOST)
    .option(
      '--public-url <url>',
      'the origin others reach the simulator at, used in hrefs (e.g. http://simulator:4010)',
      parseHttpUrl,
    )
    .option('--config <file>', 'JSON file {"companies": [{"id", "name", "token"}]}', parseConfigFile)
    .option('--company <id:token>', 'a company and its API token (repeatable); the bearer profile unless --avinode names it', collectCompany, [])
    .option(
      '--avinode <id[:authToken]>',
      "set a company given by --company to the avinode profile: its token becomes the X-Avinode-ApiToken, authToken the Authorization token (leave it out to use OAuth client credentials only) (repeatable)",
      collectAvinode,
      [],
    )
    .option('--oauth-client <id:clientId:clientSecret>', 'OAuth 2.0 client credentials of a company, for the token endpoint <API base URL>/oauth/token; alone, it makes a bearer company (repeatable)', collectOAuthClient, [])
    .option('--token-lifetime <s>', 'seconds an access token from the token endpoint lives (default 60)', parsePositiveInteger)
    .option('--time-scale <n>', 'compress time: 0.001 makes the 48 h give-up 172.8 s (default 1)', parsePositiveNumber)
    .option('--reply-timeout <ms>', 'a slower delivery reply counts as undelivered (default 10000)', parsePositiveInteger)
    .option('--concurrency <n>', 'parallel deliveries (default 64)', parsePositiveInteger)
    .addOption(
      new Option('--error-shape <shape>', "error entries: seed {code, message, field} or titled {title, code, path}, the real marketplace's")
        .choices(ERROR_SHAPES)
        .default('seed'),
    )
    .option('--verbose', 'log every request');
  withFaultOptions(start).action(runSimulator);

  /** A subcommand that calls a running simulator at --url. */
  const remote = (name: string, description: string) =>
    simulator.command(name).description(description).option('--url <url>', 'the simulator URL', parseHttpUrl, DEFAULT_URL);

  withFaultOptions(remote('faults', "show a running simulator's fault knobs, or change those given (the others keep their values)")).action(setFaults);

  remote('company-faults', "show one company's fault knobs on a running simulator, or change those given (the others keep their values)")
    .requiredOption('--company <id>', 'the company whose resource GETs the knobs apply to')
    .option('--resource-latency <ms>', "fault: wait before each of the company's resource answers (0: none)", parseNonNegativeInteger)
    .option(
      '--resource-rate-limit <perSecond:retryAfterS>',
      'fault: at most perSecond of its resource GETs answered in any sliding second, the others 429 with Retry-After: retryAfterS (off: no limit)',
      parseRateLimit,
    )
    .action(setCompanyFaults);

  remote('reset', "forget a company's webhook settings on a running simulator, as the marketplace's weekly sandbox wipe does")
    .requiredOption('--company <id>', 'the company whose settings are forgotten')
    .action((flags: { url: string; company: string }) =>
      companyAction<{ forgotten: number }>('reset', flags, undefined, (a) => a.forgotten !== undefined, (a) => `forgot ${a.forgotten} webhook setting(s) of company ${flags.company}`),
    );

  remote('age-connection', "move a company's last use of its API connection back: past 60 days the simulator refuses its calls (401 connection_deactivated), as the marketplace deactivates an unused connection")
    .requiredOption('--company <id>', 'the company whose connection ages')
    .requiredOption('--days <n>', 'how many days back', parsePositiveInteger)
    .action((flags: { url: string; company: string; days: number }) =>
      companyAction<{ lastUsedAt: string }>('age-connection', flags, { days: flags.days }, (a) => a.lastUsedAt !== undefined, (a) => `company ${flags.company}'s connection was last used ${a.lastUsedAt}`),
    );

  remote('expire-client-secret', "make a company's OAuth client secret expire now: the token endpoint refuses it")
    .requiredOption('--company <id>', 'the company whose client secret expires')
    .action((flags: { url: string; company: string }) =>
      companyAction<{ expiresAt: string }>('expire-client-secret', flags, undefined, (a) => a.expiresAt !== undefined, (a) => `company ${flags.company}'s client secret expired ${a.expiresAt}`),
    );

  remote('fire', 'fire events at a running simulator: each changes a resource and notifies the company webhooks')
    .requiredOption('--company <id>', 'the company the events belong to')
    .addOption(new Option('--event <type>', 'the event type').choices(EVENT_TYPES).makeOptionMandatory())
    .option('--count <n>', 'number of events', parsePositiveInteger, 1)
    .addOption(
      new Option('--resources <n>', 'spread the events round-robin over this many new resources')
        .argParser(parsePositiveInteger)
        .conflicts('resourceId'),
    )
    .option('--resource-id <id>', 'change this resource with every event')
    .option('--json', 'print the emitted notifications as JSON')
    .action(fireEvents);
}

/** The fault knobs, the same for `start` and `faults`. */
function withFaultOptions(command: Command): Command {
  for (const [flag, , help, parse] of FAULT_FLAGS) command.addOption(new Option(flag, help).argParser(parse));
  return command;
}

/**
 * The companies of the start flags: --config's and --company's, then --avinode and --oauth-client applied to
 * them by id (--oauth-client alone makes a bearer company). Each checked as the control surface checks it;
 * a bad one is a usage error naming the flag.
 */
function companiesOf(flags: StartFlags): CompanyAccount[] | string {
  const byId = new Map<string, CompanyAccount & { from: string }>();
  for (const company of [...(flags.config ?? []), ...flags.company]) byId.set(company.id, { ...company, from: '--company' });
  for (const { id, authToken } of flags.avinode) {
    const company = byId.get(id);
    if (!company) return `--avinode ${id}: no --company ${id}:<token> gives its API token`;
    byId.set(id, { ...company, profile: 'avinode', ...(authToken !== undefined ? { authToken } : {}), from: '--avinode' });
  }
  for (const { id, clientId, clientSecret } of flags.oauthClient) {
    byId.set(id, { ...(byId.get(id) ?? { id, from: '--oauth-client' }), clientId, clientSecret });
  }
  const companies: CompanyAccount[] = [];
  for (const { from, ...company } of byId.values()) {
    const checked = companyAccount.safeParse(company);
    if (!checked.success) return `${from} ${company.id}: ${describeIssues(checked.error.issues)}`;
    companies.push(checked.data);
  }
  return companies;
}

async function runSimulator(flags: StartFlags): Promise<void> {
  const companies = companiesOf(flags);
  if (typeof companies === 'string') return fail(`simulator: ${companies}`, USAGE_EXIT_CODE);
  let simulator: Simulator;
  try {
    simulator = await startSimulator({
      port: flags.port,
      host: flags.host,
      publicUrl: flags.publicUrl,
      companies,
      timeScale: flags.timeScale,
      replyTimeoutMs: flags.replyTimeout,
      deliveryConcurrency: flags.concurrency,
      faults: faultsFromFlags(flags),
      errorShape: flags.errorShape,
      logger: flags.verbose ?? false,
      tokenLifetimeS: flags.tokenLifetime,
    });
  } catch (error) {
    return fail(`simulator: cannot start: ${error instanceof Error ? error.message : String(error)}`, 1);
  }
  console.log(`marketplace simulator listening at ${simulator.url}`);
  console.log(`API base URL: ${simulator.apiBaseUrl}`);
  console.log(`Scheduling base URL: ${simulator.schedulingBaseUrl}  (allow it for a company with companies update <id> --profile <profile> --base-url <it>)`);
  console.log(
    companies.length > 0
      ? `companies: ${companies.map((company) => `${company.id} (${company.profile ?? 'bearer'}${company.clientId !== undefined ? ', OAuth' : ''})`).join(', ')}`
      : 'no companies yet: add them with --company <id:token>, --config <file> or POST /_sim/companies',
  );
  if (companies.some((company) => company.clientId !== undefined)) console.log(`OAuth token URL: ${simulator.apiBaseUrl}/oauth/token`);
  stopOnSignals(simulator);
}

async function setFaults(flags: { url: string }): Promise<void> {
  const answer = await callSimulator<Partial<Faults>>('faults', flags.url, '/_sim/faults', 'PUT', faultsFromFlags(flags), () => true);
  if (answer) for (const [knob, value] of Object.entries(answer)) console.log(`${knob.padEnd(20)} ${String(value)}`);
}

async function setCompanyFaults(flags: { url: string; company: string; resourceLatency?: number; resourceRateLimit?: ResourceRateLimit | 'off' }): Promise<void> {
  // A knob left undefined (its flag absent) is dropped by JSON.stringify, so it keeps its value.
  const patch = { resourceLatencyMs: flags.resourceLatency, resourceRateLimit: flags.resourceRateLimit === 'off' ? null : flags.resourceRateLimit };
  const path = `/_sim/companies/${encodeURIComponent(flags.company)}/faults`;
  const answer = await callSimulator<CompanyFaults>('company-faults', flags.url, path, 'PUT', patch, (a) => a.resourceLatencyMs !== undefined);
  if (!answer) return;
  const limit = answer.resourceRateLimit;
  console.log(`${'resourceLatencyMs'.padEnd(20)} ${answer.resourceLatencyMs}`);
  console.log(`${'resourceRateLimit'.padEnd(20)} ${limit ? `${limit.perSecond} per second, then 429 with Retry-After: ${limit.retryAfterS}` : 'off'}`);
}

/**
 * One call to the simulator's control API for a CLI command: its answer, or undefined once the failure is
 * printed and the exit code set (1 unreachable or failing, 2 for a refusal naming a bad value, like a bad flag).
 */
async function callSimulator<T extends object>(
  command: string,
  url: string,
  path: string,
  method: 'POST' | 'PUT',
  body: unknown,
  complete: (answer: Partial<T>) => boolean,
): Promise<T | undefined> {
  let response: Response;
  try {
    response = await fetch(`${url}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(CONTROL_CALL_TIMEOUT_MS),
    });
  } catch (error) {
    return fail(`simulator ${command}: cannot reach the simulator at ${url}: ${fetchFailureReason(error)}`, 1);
  }
  // Anything but the simulator's JSON (another server at that URL, say) reads as an empty answer.
  const answer = (await response.json().catch(() => ({}))) as Partial<T> & { error?: string };
  if (!response.ok || !complete(answer)) {
    return fail(`simulator ${command}: the simulator refused: ${answer.error ?? `HTTP ${response.status}`}`, response.status < 500 ? USAGE_EXIT_CODE : 1);
  }
  return answer as T;
}

/** Says why a command failed, on stderr, and sets the exit code the process ends with. */
function fail(message: string, exitCode: number): undefined {
  console.error(message);
  process.exitCode = exitCode;
  return undefined;
}

/** The knobs given as fault flags (FAULT_FLAGS), read under the flags' names (--delivery-latency: deliveryLatency). */
function faultsFromFlags(flags: object): Partial<Faults> {
  const given = flags as Record<string, number | boolean | undefined>;
  return Object.fromEntries(FAULT_FLAGS.map(([flag, knob]) => [knob, given[new Option(flag).attributeName()]]));
}

function stopOnSignals(simulator: Simulator): void {
  const stop = async (signal: NodeJS.Signals): Promise<void> => {
    console.log(`${signal}: stopping the simulator`);
    await simulator.stop();
    // Deliveries already on the wire would otherwise hold the process open until their reply timeout.
    process.exit(0);
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

/** A POST to one company's control route, `/_sim/companies/<company>/<command>`; prints what `said` makes of the answer. */
async function companyAction<T extends object>(command: string, flags: { url: string; company: string }, body: unknown, complete: (a: Partial<T>) => boolean, said: (a: T) => string): Promise<void> {
  const answer = await callSimulator<T>(command, flags.url, `/_sim/companies/${encodeURIComponent(flags.company)}/${command}`, 'POST', body, complete);
  if (answer) console.log(said(answer));
}

async function fireEvents(flags: FireFlags): Promise<void> {
  const request = {
    companyId: flags.company,
    eventType: flags.event,
    count: flags.count,
    resources: flags.resources,
    resourceId: flags.resourceId,
  };
  const answer = await callSimulator<{ notifications: EmittedNotification[] }>('fire', flags.url, '/_sim/events', 'POST', request, (a) => a.notifications !== undefined);
  if (answer) console.log(flags.json ? JSON.stringify(answer.notifications, null, 2) : fireSummary(flags, answer.notifications));
}

function fireSummary(flags: FireFlags, notifications: EmittedNotification[]): string {
  const resources = new Set(notifications.map(({ notification }) => notification.href)).size;
  const webhooks = new Set(notifications.flatMap(({ webhookIds }) => webhookIds)).size;
  const deliveries = notifications.reduce((sum, { webhookIds }) => sum + webhookIds.length, 0);
  const fired =
    `fired ${notifications.length} ${flags.event} event(s) for company ${flags.company} over ${resources} resource(s)`;
  return webhooks > 0
    ? `${fired}; ${deliveries} deliveries queued to ${webhooks} webhook(s)`
    : `${fired}; no active webhook of ${flags.company} subscribes to ${flags.event}, so nothing was delivered`;
}

/** A flag's parser: `value` as a number (NaN for blank text, which Number() would read as 0) when `ok` holds, else `why`. */
const numberFlag =
  (ok: (n: number) => boolean, why: string) =>
  (value: string): number => {
    const n = value.trim() === '' ? Number.NaN : Number(value);
    if (!ok(n)) throw new InvalidArgumentError(why);
    return n;
  };

const parsePort = numberFlag((n) => Number.isInteger(n) && n >= 0 && n <= 65_535, 'must be a port number (0-65535)');
const parsePositiveInteger = numberFlag((n) => Number.isInteger(n) && n >= 1, 'must be a positive integer');
const parseNonNegativeInteger = numberFlag((n) => Number.isInteger(n) && n >= 0, 'must be a whole number of milliseconds');
const parsePositiveNumber = numberFlag((n) => Number.isFinite(n) && n > 0, 'must be a positive number');
const parseShare = numberFlag((n) => n >= 0 && n <= 1, 'must be a share between 0 and 1');

/** A switch given alone means on; `--flag false` turns it off. */
function parseSwitch(value: string): boolean {
  if (value === 'true') return true;
  if (value === 'false') return false;
  throw new InvalidArgumentError('must be true or false (or nothing, for true)');
}

/** The fault flags: the flag, the knob it sets (faults.ts Faults), its help, its parser. */
const FAULT_FLAGS: [string, keyof Faults, string, (value: string) => number | boolean][] = [
  ['--duplicate-rate <share>', 'duplicateRate', 'fault: share of deliveries sent twice', parseShare],
  ['--lost-ack-rate <share>', 'lostAckRate', 'fault: share of 200 answers treated as lost', parseShare],
  ['--delivery-latency <ms>', 'deliveryLatencyMs', 'fault: wait before each delivery', parseNonNegativeInteger],
  ['--resource-latency <ms>', 'resourceLatencyMs', 'fault: wait before each resource answer', parseNonNegativeInteger],
  ['--submit-latency <ms>', 'submitLatencyMs', 'fault: wait after handling a lead, quote or decline, before its answer', parseNonNegativeInteger],
  ['--resource-5xx-rate <share>', 'resource5xxRate', 'fault: share of resource GETs answering 503', parseShare],
  ['--resource-429-rate <share>', 'resource429Rate', 'fault: share of resource GETs answering 429', parseShare],
  ['--plural-put-missing [on]', 'pluralPutMissing', 'fault: PUT /webhooks/settings/{id} answers 404, the singular path works (true or false)', parseSwitch],
  ['--token-endpoint-down [on]', 'tokenEndpointDown', 'fault: the OAuth token endpoint answers 503 (true or false)', parseSwitch],
];

/** `<perSecond>:<retryAfterS>`, e.g. `10:2`, or `off`. */
function parseRateLimit(value: string): ResourceRateLimit | 'off' {
  if (value === 'off') return 'off';
  const match = /^(\d+):(\d+)$/.exec(value.trim());
  const perSecond = Number(match?.[1]);
  const retryAfterS = Number(match?.[2]);
  if (!match || perSecond < 1) throw new InvalidArgumentError('must be <perSecond>:<retryAfterS> (e.g. 10:2, perSecond at least 1) or off');
  return { perSecond, retryAfterS };
}

function parseHttpUrl(value: string): string {
  const url = URL.canParse(value) ? new URL(value) : undefined;
  if (!url || !['http:', 'https:'].includes(url.protocol)) throw new InvalidArgumentError('must be an http(s) URL');
  return url.origin;
}

function collectCompany(value: string, previous: CompanyAccount[]): CompanyAccount[] {
  const [id = '', ...rest] = value.split(':');
  const token = rest.join(':');
  if (id === '' || token === '') throw new InvalidArgumentError('must be <id>:<token>');
  return [...previous, { id, token }];
}

/** `<id>` or `<id>:<authToken>`. */
function collectAvinode(value: string, previous: { id: string; authToken?: string }[]): { id: string; authToken?: string }[] {
  const [id = '', ...rest] = value.split(':');
  const authToken = rest.length === 0 ? undefined : rest.join(':');
  if (id === '' || authToken === '') throw new InvalidArgumentError('must be <id> or <id>:<authToken>');
  return [...previous, { id, ...(authToken !== undefined ? { authToken } : {}) }];
}

/** `<id>:<clientId>:<clientSecret>` (the secret may hold colons). */
function collectOAuthClient(value: string, previous: { id: string; clientId: string; clientSecret: string }[]): { id: string; clientId: string; clientSecret: string }[] {
  const [id = '', clientId = '', ...rest] = value.split(':');
  const clientSecret = rest.join(':');
  if (id === '' || clientId === '' || clientSecret === '') throw new InvalidArgumentError('must be <id>:<clientId>:<clientSecret>');
  return [...previous, { id, clientId, clientSecret }];
}

const configFile = z.object({ companies: z.array(companyAccount) });

function parseConfigFile(path: string): CompanyAccount[] {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    // JSON.parse throws a SyntaxError, readFileSync never does.
    if (error instanceof SyntaxError) throw new InvalidArgumentError('it is not JSON');
    throw new InvalidArgumentError(`cannot read it: ${error instanceof Error ? error.message : String(error)}`);
  }
  const config = configFile.safeParse(json);
  if (!config.success) throw new InvalidArgumentError(describeIssues(config.error.issues));
  return config.data.companies;
}
