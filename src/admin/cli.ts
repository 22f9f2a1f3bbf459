/**
 * The operators' admin CLI (SPEC §7): the admin API's operations as `skyhook` commands, over the same
 * services and validated with the same schemas, so the CLI and the API accept the same things.
 *
 * Output: results on stdout (short human text, or with --json exactly the JSON the admin API answers),
 * errors on stderr. Exit codes: 0 done; 2 a usage error (a bad flag or argument, or a body file that
 * fails validation), one line per bad field naming it; 1 a failure while running (a Problem from a
 * service: not found, conflict, the marketplace refusing, ...; or the database being unreachable).
 */
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { z } from 'zod';
import { exitOnUsageError, USAGE_EXIT_CODE } from '../lib/cli-usage.js';
import { decodeJsonBody } from '../lib/json-body.js';
import { Problem } from '../lib/problem.js';
import { CLIENT_AUTHENTICATION_TYPES, EVENT_TYPES, type EventType } from '../marketplace/contract.js';
import type { Services } from '../services/index.js';
import * as s from './schemas.js';

/** Failures while running exit with 1; usage errors with USAGE_EXIT_CODE (2). */
const FAILURE_EXIT_CODE = 1;

export function registerAdminCommands(program: Command): void {
  registerCompanies(program);
  registerWebhooks(program);
  registerLeads(program);
  registerQuotes(program);
  registerNotifications(program);
  registerResources(program);
}

// ---------------------------------------------------------------------------------------------------
// Commands

interface JsonFlag {
  json?: boolean;
}
interface PageFlags extends JsonFlag {
  limit?: string;
  cursor?: string;
}

const JSON_HELP = 'print the JSON the admin API answers (one document on stdout)';

function registerCompanies(program: Command): void {
  const companies = group(program, 'companies', 'companies (tenants) and their marketplace API connection');

  companies
    .command('create')
    .description('add a company with its marketplace API base URL and API token (the token is stored encrypted, never shown)')
    .option('--name <name>', 'the company name (required)')
    .option('--api-base-url <url>', 'the marketplace API base URL, e.g. https://sandbox.example.com/api (required)')
    .option('--api-token <token>', 'the company API token (required); "-" reads it from stdin, keeping it out of the shell history')
    .option('--json', JSON_HELP)
    .action((flags: JsonFlag & { name?: string; apiBaseUrl?: string; apiToken?: string }, cmd: Command) =>
      execute(cmd, async () => {
        const apiToken = flags.apiToken === '-' ? (await readStdin()).trim() : flags.apiToken;
        const body = validate(cmd, s.createCompanyBody, { name: flags.name, apiBaseUrl: flags.apiBaseUrl, apiToken });
        const company = await withServices((svc) => svc.companies.create(body));
        emit(flags, s.companySchema, company, () => `created company ${company.id}\n${keyValues(company)}`);
      }),
    );

  addPageOptions(companies.command('list').description('list companies (oldest id first)'))
    .option('--json', JSON_HELP)
    .action((flags: PageFlags, cmd: Command) =>
      execute(cmd, async () => {
        const query = validate(cmd, s.listQuery, { limit: flags.limit, cursor: flags.cursor });
        const page = await withServices((svc) => svc.companies.list(query));
        emit(flags, s.page(s.companySchema), page, () =>
          listing(page, 'companies', ['ID', 'NAME', 'API BASE URL', 'CONNECTION', 'CREATED'], (c) => [c.id, c.name, c.apiBaseUrl, c.connectionStatus, shortTime(c.createdAt)]),
        );
      }),
    );

  companies
    .command('get')
    .description('show one company')
    .argument('<companyId>', 'the company id (a UUID)')
    .option('--json', JSON_HELP)
    .action((companyId: string, flags: JsonFlag, cmd: Command) =>
      execute(cmd, async () => {
        const params = validate(cmd, s.companyIdParams, { companyId });
        const company = await withServices((svc) => svc.companies.get(params.companyId));
        emit(flags, s.companySchema, company, () => keyValues(company));
      }),
    );

  companies
    .command('update')
    .description('rename a company or replace its API token (a new token also lifts an "unauthorized" pause)')
    .argument('<companyId>', 'the company id (a UUID)')
    .option('--name <name>', 'the new name')
    .option('--api-token <token>', 'the new API token; "-" reads it from stdin')
    .option('--json', JSON_HELP)
    .action((companyId: string, flags: JsonFlag & { name?: string; apiToken?: string }, cmd: Command) =>
      execute(cmd, async () => {
        if (flags.name === undefined && flags.apiToken === undefined) throw new UsageError(['give --name or --api-token (or both)']);
        const apiToken = flags.apiToken === '-' ? (await readStdin()).trim() : flags.apiToken;
        const [params, patch] = together(
          () => validate(cmd, s.companyIdParams, { companyId }),
          () => validate(cmd, s.patchCompanyBody, { name: flags.name, apiToken }),
        );
        const company = await withServices((svc) => svc.companies.update(params.companyId, patch));
        emit(flags, s.companySchema, company, () => `updated company ${company.id}\n${keyValues(company)}`);
      }),
    );
}

function registerWebhooks(program: Command): void {
  const webhooks = group(program, 'webhooks', "a company's webhook settings on the marketplace (Skyhook generates the credentials)");
  const eventTypesHelp = `comma-separated event types: ${EVENT_TYPES.join(', ')}`;

  webhooks
    .command('create')
    .description('register a webhook on the marketplace for a company; it starts active')
    .argument('<companyId>', 'the company id (a UUID)')
    .option('--event-types <a,b,...>', `${eventTypesHelp} (required)`)
    .option('--auth-type <type>', `how the marketplace authenticates to Skyhook: ${CLIENT_AUTHENTICATION_TYPES.join(' or ')} (required)`)
    .option('--display-name <name>', 'the name shown on the marketplace (default: "Skyhook (<company name>)")')
    .option('--shared-target', 'use the shared targetURI <PUBLIC_BASE_URL>/hooks instead of a URL of its own')
    .option('--json', JSON_HELP)
    .action(
      (companyId: string, flags: JsonFlag & { eventTypes?: string; authType?: string; displayName?: string; sharedTarget?: boolean }, cmd: Command) =>
        execute(cmd, async () => {
          const [params, body] = together(
            () => validate(cmd, s.companyIdParams, { companyId }),
            () =>
              validate(cmd, s.createWebhookBody, {
                eventTypes: list(flags.eventTypes),
                authType: flags.authType,
                displayName: flags.displayName,
                sharedTarget: flags.sharedTarget,
              }),
          );
          const webhook = await withServices((svc) => svc.webhooks.create(params.companyId, { ...body, eventTypes: body.eventTypes as EventType[] }));
          emit(flags, s.webhookSchema, webhook, () => `created webhook ${webhook.id} (marketplace id ${webhook.remoteId})\n${keyValues(webhook)}`);
        }),
    );

  webhooks
    .command('list')
    .description("list a company's webhooks")
    .argument('<companyId>', 'the company id (a UUID)')
    .option('--json', JSON_HELP)
    .action((companyId: string, flags: JsonFlag, cmd: Command) =>
      execute(cmd, async () => {
        const params = validate(cmd, s.companyIdParams, { companyId });
        const page = await withServices((svc) => svc.webhooks.list(params.companyId));
        emit(flags, s.page(s.webhookSchema), page, () =>
          listing(page, 'webhooks', ['ID', 'AUTH', 'ACTIVE', 'EVENT TYPES', 'TARGET URI'], (w) => [w.id, w.authType, yesNo(w.active), w.eventTypes.join(','), w.targetURI]),
        );
      }),
    );

  webhooks
    .command('get')
    .description('show one webhook')
    .argument('<companyId>', 'the company id (a UUID)')
    .argument('<webhookId>', 'the webhook id (a UUID)')
    .option('--json', JSON_HELP)
    .action((companyId: string, webhookId: string, flags: JsonFlag, cmd: Command) =>
      execute(cmd, async () => {
        const params = validate(cmd, s.webhookParams, { companyId, webhookId });
        const webhook = await withServices((svc) => svc.webhooks.get(params.companyId, params.webhookId));
        emit(flags, s.webhookSchema, webhook, () => keyValues(webhook));
      }),
    );

  webhooks
    .command('update')
    .description('activate or deactivate a webhook, change its event types or name, or rotate its secret (the previous secret is accepted for a grace period)')
    .argument('<companyId>', 'the company id (a UUID)')
    .argument('<webhookId>', 'the webhook id (a UUID)')
    .option('--active <true|false>', 'activate (true) or deactivate (false)')
    .option('--event-types <a,b,...>', `replace the event types; ${eventTypesHelp}`)
    .option('--display-name <name>', 'the new name shown on the marketplace')
    .option('--rotate-secret', 'set a new secret on the marketplace')
    .option('--json', JSON_HELP)
    .action(
      (
        companyId: string,
        webhookId: string,
        flags: JsonFlag & { active?: string; eventTypes?: string; displayName?: string; rotateSecret?: boolean },
        cmd: Command,
      ) =>
        execute(cmd, async () => {
          const patchInput = {
            active: booleanText(flags.active),
            eventTypes: list(flags.eventTypes),
            displayName: flags.displayName,
            rotateSecret: flags.rotateSecret,
          };
          if (Object.values(patchInput).every((v) => v === undefined)) {
            throw new UsageError(['give at least one of --active, --event-types, --display-name, --rotate-secret']);
          }
          const [params, patch] = together(
            () => validate(cmd, s.webhookParams, { companyId, webhookId }),
            () => validate(cmd, s.patchWebhookBody, patchInput),
          );
          const webhook = await withServices((svc) =>
            svc.webhooks.update(params.companyId, params.webhookId, { ...patch, eventTypes: patch.eventTypes as EventType[] | undefined }),
          );
          emit(flags, s.webhookSchema, webhook, () => {
            const rotated = patch.rotateSecret ? `\nsecret rotated; the previous one is accepted until ${webhook.previousSecretExpiresAt}` : '';
            return `updated webhook ${webhook.id}${rotated}\n${keyValues(webhook)}`;
          });
        }),
    );
}

function registerLeads(program: Command): void {
  const leads = group(program, 'leads', 'client leads created on the marketplace for a company');

  leads
    .command('create')
    .description('create a client lead (idempotent: a clientIdentifier already used returns the stored lead and sends nothing)')
    .argument('<companyId>', 'the company id (a UUID)')
    .option('--file <lead.json|->', 'the Client Lead body as JSON (required); "-" reads stdin')
    .option('--json', JSON_HELP)
    .addHelpText('after', '\nExample:\n  echo \'{"clientIdentifier":"c-1","inquiryLift":[{"aircraftType":"Light jet"}]}\' | skyhook leads create <companyId> --file -')
    .action((companyId: string, flags: JsonFlag & { file?: string }, cmd: Command) =>
      execute(cmd, async () => {
        const file = await readJsonFile(flags.file);
        const [params, lead] = together(
          () => validate(cmd, s.companyIdParams, { companyId }),
          () => validateBody(s.createLeadBody, file),
        );
        const { lead: stored, created } = await withServices((svc) => svc.leads.create(params.companyId, lead));
        emit(flags, s.leadSchema, stored, () =>
          created
            ? `created lead ${stored.id} (clientIdentifier ${stored.clientIdentifier}, marketplace id ${stored.remoteId ?? '-'})`
            : `lead ${stored.id} with clientIdentifier ${stored.clientIdentifier} already existed (marketplace id ${stored.remoteId ?? '-'}); nothing was sent`,
        );
      }),
    );

  addPageOptions(leads.command('list').description("list a company's leads (newest first)").argument('<companyId>', 'the company id (a UUID)'))
    .option('--json', JSON_HELP)
    .action((companyId: string, flags: PageFlags, cmd: Command) =>
      execute(cmd, async () => {
        const [params, query] = together(
          () => validate(cmd, s.companyIdParams, { companyId }),
          () => validate(cmd, s.listQuery, { limit: flags.limit, cursor: flags.cursor }),
        );
        const page = await withServices((svc) => svc.leads.list(params.companyId, query));
        emit(flags, s.page(s.leadSchema), page, () =>
          listing(page, 'leads', ['ID', 'CLIENT IDENTIFIER', 'KIND', 'STATUS', 'MARKETPLACE ID', 'CREATED'], (l) => [
            l.id,
            l.clientIdentifier,
            l.kind,
            l.status,
            l.remoteId ?? '-',
            shortTime(l.createdAt),
          ]),
        );
      }),
    );
}

function registerQuotes(program: Command): void {
  const quotes = group(program, 'quotes', 'quotes submitted to buyers for a company');

  quotes
    .command('submit')
    .description('submit a quote (idempotent by submission.quote.sellerUniqueQuoteIdentifier: a repeat returns the stored quote)')
    .argument('<companyId>', 'the company id (a UUID)')
    .option('--file <request.json|->', 'the request as JSON (required): {requestId, actAsAccount?, allowPriceMismatch?, resendUnknown?, submission}; "-" reads stdin')
    .option('--resend-unknown', 'send again a quote left with status unknown (as resendUnknown: true); check on the marketplace first')
    .option('--json', JSON_HELP)
    .action((companyId: string, flags: JsonFlag & { file?: string; resendUnknown?: boolean }, cmd: Command) =>
      execute(cmd, async () => {
        const file = await readJsonFile(flags.file);
        const [params, request] = together(
          () => validate(cmd, s.companyIdParams, { companyId }),
          () => validateBody(s.createQuoteBody, flags.resendUnknown && typeof file === 'object' && file !== null ? { ...file, resendUnknown: true } : file),
        );
        const { quote, created } = await withServices((svc) => svc.quotes.submit(params.companyId, request));
        emit(flags, s.quoteViewSchema, quote, () => {
          const ids = `tripmsgs ${quote.tripMessageId ?? '-'}, sellerQuote ${quote.sellerQuoteId ?? '-'}, lift ${quote.liftId ?? '-'}`;
          return created
            ? `submitted quote ${quote.id} (${quote.sellerUniqueQuoteIdentifier}): ${ids}`
            : `quote ${quote.id} (${quote.sellerUniqueQuoteIdentifier}) was already submitted; nothing was sent: ${ids}`;
        });
      }),
    );

  addPageOptions(quotes.command('list').description("list a company's quotes (newest first)").argument('<companyId>', 'the company id (a UUID)'))
    .option('--lift-id <id>', 'only the quote with this marketplace lift id')
    .option('--status <status>', 'only quotes with this status: sending, created or unknown')
    .option('--json', JSON_HELP)
    .action((companyId: string, flags: PageFlags & { liftId?: string; status?: string }, cmd: Command) =>
      execute(cmd, async () => {
        const [params, query] = together(
          () => validate(cmd, s.companyIdParams, { companyId }),
          () => validate(cmd, s.quotesQuery, { liftId: flags.liftId, status: flags.status, limit: flags.limit, cursor: flags.cursor }),
        );
        const page = await withServices((svc) => svc.quotes.list(params.companyId, query));
        emit(flags, s.page(s.quoteViewSchema), page, () =>
          listing(page, 'quotes', ['ID', 'SELLER QUOTE IDENTIFIER', 'REQUEST ID', 'STATUS', 'LIFT ID', 'CREATED'], (q) => [
            q.id,
            q.sellerUniqueQuoteIdentifier,
            q.requestId,
            q.status,
            q.liftId ?? '-',
            shortTime(q.createdAt),
          ]),
        );
      }),
    );
}

const STATUSES = s.notificationStatus.options.join(', ');
/** What replay-all selects without flags: the schema's defaults. */
const REPLAY_DEFAULTS = s.replayBody.parse({});
const REPLAY_LIMIT = s.replayBody.shape.limit.unwrap();

function registerNotifications(program: Command): void {
  const notifications = group(program, 'notifications', 'received notifications: list, inspect, replay');

  addPageOptions(notifications.command('list').description('list notifications (newest first)'))
    .option('--company-id <id>', 'only this company')
    .option('--status <status>', `only this status: ${STATUSES}`)
    .option('--type <type>', 'only this notification type (e.g. rfqs, tripmsgs, leads)')
    .option('--json', JSON_HELP)
    .action((flags: PageFlags & { companyId?: string; status?: string; type?: string }, cmd: Command) =>
      execute(cmd, async () => {
        const query = validate(cmd, s.notificationsQuery, { companyId: flags.companyId, status: flags.status, type: flags.type, limit: flags.limit, cursor: flags.cursor });
        const page = await withServices((svc) => svc.notifications.list(query));
        emit(flags, s.page(s.notificationSchema), page, () =>
          listing(page, 'notifications', ['ID', 'COMPANY', 'TYPE', 'RESOURCE ID', 'STATUS', 'ATTEMPTS', 'RECEIVED', 'LAST ERROR'], (n) => [
            n.id,
            n.companyId,
            n.type,
            n.resourceId,
            n.status,
            String(n.attempts),
            shortTime(n.receivedAt),
            truncate(n.lastError ?? '-', 60),
          ]),
        );
      }),
    );

  notifications
    .command('get')
    .description('show one notification, with the body the marketplace sent')
    .argument('<id>', 'the notification id (a number)')
    .option('--json', JSON_HELP)
    .action((id: string, flags: JsonFlag, cmd: Command) =>
      execute(cmd, async () => {
        const params = validate(cmd, s.notificationParams, { id });
        const notification = await withServices((svc) => svc.notifications.get(params.id));
        emit(flags, s.notificationSchema, notification, () => keyValues(notification));
      }),
    );

  notifications
    .command('replay')
    .description('fetch the resource of one notification again (a discarded one cannot be replayed)')
    .argument('<id>', 'the notification id (a number)')
    .option('--json', JSON_HELP)
    .action((id: string, flags: JsonFlag, cmd: Command) =>
      execute(cmd, async () => {
        const params = validate(cmd, s.notificationParams, { id });
        const notification = await withServices((svc) => svc.notifications.replay(params.id));
        emit(flags, s.notificationSchema, notification, () => `replayed notification ${notification.id}: now ${notification.status}`);
      }),
    );

  notifications
    .command('replay-all')
    .description('replay every notification matching the filters, oldest first (discarded ones never)')
    .option('--company-id <id>', 'only this company')
    .option('--status <status>', `only this status: ${s.replayableStatus.options.join(', ')} (default ${REPLAY_DEFAULTS.status})`)
    .option('--type <type>', 'only this notification type')
    .option('--limit <n>', `at most this many (${REPLAY_LIMIT.minValue}-${REPLAY_LIMIT.maxValue}, default ${REPLAY_DEFAULTS.limit})`)
    .option('--json', JSON_HELP)
    .action((flags: JsonFlag & { companyId?: string; status?: string; type?: string; limit?: string }, cmd: Command) =>
      execute(cmd, async () => {
        // The API takes this filter as a JSON body, so the limit is a number there, not query text.
        const filter = validate(cmd, s.replayBody, { companyId: flags.companyId, status: flags.status, type: flags.type, limit: numberText(flags.limit) });
        const result = await withServices((svc) => svc.notifications.replayMatching(filter));
        emit(flags, s.replayedSchema, result, () => `replayed ${result.replayed} notification(s)`);
      }),
    );
}

function registerResources(program: Command): void {
  const resources = group(program, 'resources', 'the fetched resources (the latest snapshot of each href)');

  addPageOptions(resources.command('list').description('list stored resources (by company, then href)'))
    .option('--company-id <id>', 'only this company')
    .option('--type <type>', 'only this resource type (e.g. rfqs, tripmsgs, leads)')
    .option('--json', JSON_HELP)
    .action((flags: PageFlags & { companyId?: string; type?: string }, cmd: Command) =>
      execute(cmd, async () => {
        const query = validate(cmd, s.resourcesQuery, { companyId: flags.companyId, type: flags.type, limit: flags.limit, cursor: flags.cursor });
        const page = await withServices((svc) => svc.notifications.listResources(query));
        emit(flags, s.page(s.resourceSchema), page, () =>
          listing(page, 'resources', ['COMPANY', 'TYPE', 'RESOURCE ID', 'VERSION', 'GONE', 'FETCHED', 'HREF'], (r) => [
            r.companyId,
            r.type,
            r.resourceId,
            String(r.version),
            yesNo(r.gone),
            shortTime(r.fetchedAt),
            r.href,
          ]),
        );
      }),
    );
}

// ---------------------------------------------------------------------------------------------------
// Command plumbing

/** A command group: commander's own usage errors (unknown option, missing argument) read like ours and exit 2. */
function group(program: Command, name: string, description: string): Command {
  return (
    program
      .command(name)
      .description(description)
      // Set before the subcommands are added, so they inherit them.
      .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, 'skyhook: ')) })
      .showHelpAfterError('(add --help for usage)')
      .exitOverride(exitOnUsageError)
  );
}

function addPageOptions(cmd: Command): Command {
  return cmd.option('--limit <n>', 'at most this many (1-500, default 50)').option('--cursor <cursor>', 'continue after the page that returned this nextCursor');
}

class UsageError extends Error {
  constructor(readonly lines: string[]) {
    super(lines.join('; '));
  }
}

/** Runs a command: usage errors exit 2, problems and other failures exit 1; stderr for all of them. */
async function execute(cmd: Command, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    if (error instanceof UsageError) {
      for (const line of error.lines) console.error(`skyhook: ${line}`);
      process.exitCode = USAGE_EXIT_CODE;
    } else if (error instanceof Problem) {
      console.error(`skyhook: ${error.detail ?? error.title} (${error.status} ${error.title})`);
      // A field the command takes as a flag is named as the flag (apiBaseUrl -> --api-base-url).
      const flags = flagNames(cmd);
      for (const e of error.extra.errors ?? []) console.error(`  ${flags.get(e.field) ?? e.field}: ${e.message}`);
      process.exitCode = FAILURE_EXIT_CODE;
    } else {
      console.error(`skyhook: ${describeError(error)}`);
      process.exitCode = FAILURE_EXIT_CODE;
    }
  }
}

/** Opens the admin context (same environment as `skyhook start`), runs fn, and always closes it. */
async function withServices<T>(fn: (services: Services) => Promise<T>): Promise<T> {
  // Imported here, so `skyhook --help` and the other commands do not load the database and queue code.
  const { openAdminContext } = await import('./cli-context.js');
  const context = await openAdminContext();
  try {
    return await fn(context.services);
  } finally {
    await context.close();
  }
}

function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // Connection failures to several addresses come as an AggregateError with an empty message.
  if (!error.message && error instanceof AggregateError) {
    const first: unknown = error.errors[0];
    const code = (error as { code?: string }).code;
    return `${code ?? 'connection failed'}${first instanceof Error ? `: ${first.message}` : ''}`;
  }
  const code = (error as { code?: string }).code;
  return error.message || code || error.name;
}

function emit<S extends z.ZodType>(flags: JsonFlag, schema: S, data: z.output<S>, human: () => string): void {
  process.stdout.write(flags.json ? `${JSON.stringify(schema.encode(data), null, 2)}\n` : `${human()}\n`);
}

// ---------------------------------------------------------------------------------------------------
// Input

/** The comma-separated flag as a list (undefined when the flag is absent). */
const list = (value: string | undefined): string[] | undefined =>
  value === undefined
    ? undefined
    : value
        .split(',')
        .map((v) => v.trim())
        .filter(Boolean);

/** "true"/"false" as booleans; anything else is passed on for the schema to refuse by name. */
const booleanText = (value: string | undefined): boolean | string | undefined => (value === 'true' ? true : value === 'false' ? false : value);

/** Numeric text as a number; anything else is passed on for the schema to refuse by name. */
const numberText = (value: string | undefined): number | string | undefined => (value !== undefined && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value);

/** The command's options by the field they fill: apiBaseUrl -> --api-base-url. */
const flagNames = (cmd: Command): Map<string, string> => new Map(cmd.options.map((o) => [o.attributeName(), o.long ?? o.flags]));

/** Runs two validations and reports the bad fields of both at once. */
function together<A, B>(first: () => A, second: () => B): [A, B] {
  const lines: string[] = [];
  const attempt = <T>(fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      lines.push(...error.lines);
      return undefined;
    }
  };
  const a = attempt(first);
  const b = attempt(second);
  if (lines.length > 0) throw new UsageError(lines);
  return [a as A, b as B];
}

/** Validates flags and arguments: each issue named by its flag (`--event-types`) or argument (`<companyId>`). */
function validate<S extends z.ZodType>(cmd: Command, schema: S, input: Record<string, unknown>): z.output<S> {
  const flags = flagNames(cmd);
  const args = new Set(cmd.registeredArguments.map((a) => a.name()));
  const name = (path: PropertyKey[]): string => {
    const head = String(path[0] ?? '');
    return args.has(head) ? `<${head}>` : (flags.get(head) ?? head);
  };
  return parseOrThrow(schema, input, name);
}

/** Validates a JSON body file: each issue named by its field path, e.g. `inquiryLift.0.emptyLegId`. */
function validateBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  return parseOrThrow(schema, body, (path) => (path.length > 0 ? path.map(String).join('.') : 'the body'));
}

function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, name: (path: PropertyKey[]) => string): z.output<S> {
  const result = schema.safeParse(input, { error: issueMessage });
  if (result.success) return result.data;
  const lines = result.error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys' ? issue.keys.map((key) => `${name([...issue.path, key])} is not a known field`) : [`${name(issue.path)} ${issue.message}`],
  );
  throw new UsageError([...new Set(lines)]);
}

const EXPECTED: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'an array',
  object: 'an object',
};
const FORMATS: Record<string, string> = { uuid: 'a UUID', email: 'an e-mail address', url: 'a URL', datetime: 'an ISO date-time' };

/**
 * Messages worded to follow a field name ("--name is required"), for issues whose schema gives no
 * message of its own (schema messages, such as "is required for an empty leg lead", take precedence).
 */
function issueMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined ? 'is required' : `must be ${EXPECTED[issue.expected] ?? issue.expected}${got(issue.input)}`;
    case 'invalid_value':
      return `must be ${issue.values.length === 1 ? String(issue.values[0]) : `one of ${issue.values.map(String).join(', ')}`}${got(issue.input)}`;
    case 'invalid_format':
      return `must be ${FORMATS[issue.format] ?? `a valid ${issue.format}`}${got(issue.input)}`;
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'string') return min <= 1 ? 'must not be empty' : `must have at least ${min} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return min <= 1 ? 'must have at least one item' : `must have at least ${min} items`;
      return `must be ${issue.inclusive === false ? `more than ${min}` : `${min} or more`}${got(issue.input)}`;
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'string') return `must have at most ${max} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at most ${max} items`;
      return `must be ${issue.inclusive === false ? `less than ${max}` : `${max} or less`}${got(issue.input)}`;
    }
    case 'unrecognized_keys':
      return 'is not a known field';
    default:
      return undefined;
  }
}

/** ` (got "x")` for a short scalar input, so the operator sees what was refused. */
function got(input: unknown): string {
  if (typeof input === 'string') return ` (got ${JSON.stringify(truncate(input, 60))})`;
  if ((typeof input === 'number' && Number.isFinite(input)) || typeof input === 'boolean') return ` (got ${String(input)})`;
  return '';
}

/** A file, or stdin for "-", as JSON the admin API would accept (decodeJsonBody). Failures are usage errors naming --file. */
async function readJsonFile(path: string | undefined): Promise<unknown> {
  if (path === undefined) throw new UsageError(['--file is required (a JSON file, or - for stdin)']);
  const source = path === '-' ? 'stdin' : path;
  let raw: Buffer;
  try {
    raw = path === '-' ? await readStdinBytes() : await readFile(path);
  } catch (error) {
    throw new UsageError([`--file: cannot read ${source}: ${describeError(error)}`]);
  }
  try {
    return decodeJsonBody(raw);
  } catch (error) {
    if (error instanceof Problem) throw new UsageError([`--file: ${source}: ${error.detail ?? error.title}`]);
    throw error;
  }
}

async function readStdinBytes(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}

async function readStdin(): Promise<string> {
  return (await readStdinBytes()).toString('utf8');
}

// ---------------------------------------------------------------------------------------------------
// Human output

const yesNo = (value: boolean): string => (value ? 'yes' : 'no');
const truncate = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
/** 2024-05-01T12:00:03.123Z -> 2024-05-01 12:00:03Z */
const shortTime = (iso: string): string => iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');

function display(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join(', ');
  return JSON.stringify(value);
}

/** One object as aligned `key: value` lines. */
function keyValues(object: object): string {
  const entries = Object.entries(object).filter(([, v]) => v !== undefined);
  const width = Math.max(...entries.map(([k]) => k.length)) + 1;
  return entries.map(([k, v]) => `${`${k}:`.padEnd(width)} ${display(v)}`).join('\n');
}

/** A page as a small aligned table, and how to get the next page. */
function listing<T>(page: { items: T[]; nextCursor: string | null }, noun: string, headers: string[], row: (item: T) => string[]): string {
  if (page.items.length === 0) return `no ${noun}`;
  const rows = [headers, ...page.items.map(row)];
  const widths = headers.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const lines = rows.map((r) =>
    r
      .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd(),
  );
  if (page.nextCursor) lines.push(`more: add --cursor ${page.nextCursor}`);
  return lines.join('\n');
}
