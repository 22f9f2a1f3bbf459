/** `skyhook destinations …`: where a company's events are delivered, signed (SPEC §5.2). */
import type { Command } from 'commander';
import { z } from 'zod';
import * as s from '../../services/schemas.js';
import type { DestinationView } from '../../services/views.js';
import { addPageOptions, auditedRun, dataCommand, execute, group, list, numberText, subcommand, UsageError, validate, validateBoth, withNames, withServices, type JsonFlag, type PageFlags } from './command.js';
import { keyValues, labelled, listing, shortTime, truncate, whenText } from './output.js';

/** A destination's one state in a cell: its status, since or until when, why, by whom. */
function stateText(state: DestinationView['state']): string {
  const by = state.by ? ` by ${state.by}` : '';
  return `${state.status}${whenText(state)}${by}${state.reason ? `: ${state.reason}` : ''}`;
}

const percent = (share: number | null) => (share === null ? '-' : `${Math.round(share * 1000) / 10} %`);
const typesText = (types: string[] | null) => (types === null ? 'all' : types.join(', '));

/** One destination as aligned lines, its company by name, its nested parts in words. */
function describeDestination(d: DestinationView, names: Map<string, string>): string {
  const { stats, limits } = d;
  return keyValues({
    id: d.id,
    company: labelled(names, d.companyId),
    url: d.url,
    description: d.description || '-',
    state: stateText(d.state),
    'resource types': typesText(d.filter.resourceTypes),
    'event types': typesText(d.filter.eventTypes),
    limits: `concurrency ${limits.maxConcurrency ?? 'default'}, ${limits.ratePerSecond === null ? 'no rate limit' : `${limits.ratePerSecond}/s`}, timeout ${limits.timeoutMs === null ? 'default' : `${limits.timeoutMs} ms`}`,
    pending: `${stats.pending}${stats.oldestPendingAt ? ` (oldest ${shortTime(stats.oldestPendingAt)})` : ''}`,
    'last 24 h': `${stats.delivered24h} delivered, ${stats.failed24h} failed, attempts answered 2xx ${percent(stats.successRate24h)}, stored -> delivered p50 ${stats.latencyP50Ms24h === null ? '-' : `${stats.latencyP50Ms24h} ms`}`,
    'last attempt': stats.lastAttemptAt ? shortTime(stats.lastAttemptAt) : '-',
    'last success': stats.lastSuccessAt ? shortTime(stats.lastSuccessAt) : '-',
    'previous secret': d.previousSecretExpiresAt ? `signs beside the new one until ${shortTime(d.previousSecretExpiresAt)}` : undefined,
    created: shortTime(d.createdAt),
    updated: shortTime(d.updatedAt),
  });
}

/** Said under a secret each time one is printed: it is shown at creation and rotation only. */
const STORE_IT = 'Store this secret now (a secrets manager, your receiver\'s settings): it verifies every delivery, and is shown again only by `skyhook destinations secret`.';

interface FilterFlags {
  resourceTypes?: string;
  eventTypes?: string;
}
interface LimitFlags {
  maxConcurrency?: string;
  ratePerSecond?: string;
  timeoutMs?: string;
}

/** A comma-separated list of types; `all` lifts the filter (null). */
const typesOf = (value: string | undefined): string[] | null | undefined => (value?.trim() === 'all' ? null : list(value));
/** A limit as a number; `default` for the deployment's (null); anything else for the schema to refuse by name. */
const limitOf = (value: string | undefined) => (value?.trim() === 'default' ? null : numberText(value));

function withFilterAndLimits(cmd: Command): Command {
  return cmd
    .option('--resource-types <a,b,...>', 'deliver only these resource types (rfqs, tripmsgs, leads, ...); "all" for every one')
    .option('--event-types <a,b,...>', 'deliver only changes behind these marketplace event types (TripRequest, ...); "all" for every one')
    .option('--max-concurrency <n>', 'its requests at once across every worker (1-1000); "default" for DESTINATION_CONCURRENCY')
    .option('--rate-per-second <n>', 'its requests per second at most (1-10000); "default" for no limit of its own')
    .option('--timeout-ms <ms>', 'a request unanswered by then failed (100-60000); "default" for DESTINATION_TIMEOUT_MS');
}

const limitsOf = (flags: LimitFlags) => ({ maxConcurrency: limitOf(flags.maxConcurrency), ratePerSecond: limitOf(flags.ratePerSecond), timeoutMs: limitOf(flags.timeoutMs) });
const filterOf = (flags: FilterFlags) =>
  flags.resourceTypes === undefined && flags.eventTypes === undefined ? undefined : { resourceTypes: typesOf(flags.resourceTypes), eventTypes: typesOf(flags.eventTypes) };

const UPDATE_FLAGS = ['--url', '--description', '--resource-types', '--event-types', '--active', '--inactive', '--rotate-secret', '--max-concurrency', '--rate-per-second', '--timeout-ms'];

// Over 80 lines on purpose: a registrar, one command after another, each a few lines; the helpers it shares sit above it.
export function registerDestinations(program: Command): void {
  const destinations = group(program, 'destinations', "where a company's events are delivered: its own application's endpoints, each request signed (Standard Webhooks)");

  dataCommand(
    withFilterAndLimits(
      subcommand(destinations, 'create', 'add a destination; prints its signing secret, once', 'companyId')
        .option('--url <url>', 'where deliveries are POSTed (required): https and a public address outside development')
        .option('--description <text>', 'what it is, for people (e.g. "our CRM")')
        .option('--inactive', 'create it disabled: its deliveries wait until `update --active`'),
    ),
    {
      access: 'write',
      input: (cmd, flags: JsonFlag & FilterFlags & LimitFlags & { url?: string; description?: string; inactive?: boolean }, [companyId]) =>
        validateBoth(cmd, [s.companyIdParams, { companyId }], [s.createDestinationBody, { url: flags.url, description: flags.description, filter: filterOf(flags), active: flags.inactive ? false : undefined, ...limitsOf(flags) }]),
      run: async (svc, [params, body], audit) => withNames(svc, await svc.destinations.create(params.companyId, body, audit), [params.companyId]),
      output: s.destinationWithSecretSchema,
      human: ({ secret, names, ...d }) => `created destination ${d.id} -> ${d.url}\nsecret: ${secret}\n${STORE_IT}\n\n${describeDestination(d, names)}`,
    },
  );

  dataCommand(addPageOptions(subcommand(destinations, 'list', "list a company's destinations with their state and last 24 h (never a secret)", 'companyId')), {
    access: 'read',
    input: (cmd, flags: PageFlags, [companyId]) => validateBoth(cmd, [s.companyIdParams, { companyId }], [s.listQuery, { limit: flags.limit, cursor: flags.cursor }]),
    run: (svc, [params, query]) => svc.destinations.list(params.companyId, query),
    output: s.page(s.destinationViewSchema),
    human: (page) =>
      listing(page, 'destinations', ['ID', 'URL', 'STATE', 'PENDING', 'DELIVERED 24H', 'FAILED 24H', 'ANSWERED 2XX', 'LAST SUCCESS', 'DESCRIPTION'], (d) => [
        d.id,
        d.url,
        truncate(stateText(d.state), 60),
        String(d.stats.pending),
        String(d.stats.delivered24h),
        String(d.stats.failed24h),
        percent(d.stats.successRate24h),
        d.stats.lastSuccessAt ? shortTime(d.stats.lastSuccessAt) : '-',
        truncate(d.description, 40),
      ]),
  });

  dataCommand(subcommand(destinations, 'get', 'show one destination: its state, filter, limits and what its deliveries did', 'companyId', 'destinationId'), {
    access: 'read',
    input: (cmd, _flags, [companyId, destinationId]) => validate(cmd, s.destinationParams, { companyId, destinationId }),
    run: async (svc, params) => withNames(svc, await svc.destinations.get(params.companyId, params.destinationId), [params.companyId]),
    output: s.destinationViewSchema,
    human: ({ names, ...d }) => describeDestination(d, names),
  });

  dataCommand(
    withFilterAndLimits(
      subcommand(destinations, 'update', 'change a destination: its URL (pending deliveries go there too), filter (later events), limits; enable or disable it; rotate its secret', 'companyId', 'destinationId')
        .option('--url <url>', 'the new URL')
        .option('--description <text>', 'the new description')
        .option('--active', 'enable it: what waits is sent, in order (or skipped, with --skip-before)')
        .option('--inactive', 'disable it: its deliveries wait, none sent')
        .option('--skip-before <time>', 'with --active: deliveries created before this ISO 8601 time end skipped instead of sent')
        .option('--rotate-secret', 'make a new signing secret (printed once); the previous one signs beside it for --grace-seconds')
        .option('--grace-seconds <s>', 'with --rotate-secret: how long the previous secret still signs (default 86400; 0 after a leak)'),
    ),
    {
      access: 'write',
      input: (cmd, flags: JsonFlag & FilterFlags & LimitFlags & { url?: string; description?: string; active?: boolean; inactive?: boolean; skipBefore?: string; rotateSecret?: boolean; graceSeconds?: string }, [companyId, destinationId]) => {
        const misuse = [
          flags.active && flags.inactive ? '--active and --inactive cannot go together' : undefined,
          flags.skipBefore !== undefined && !flags.active ? '--skip-before goes with --active' : undefined,
          flags.graceSeconds !== undefined && !flags.rotateSecret ? '--grace-seconds goes with --rotate-secret' : undefined,
        ].filter((line): line is string => line !== undefined);
        if (misuse.length > 0) throw new UsageError(misuse);
        const patch = {
          url: flags.url,
          description: flags.description,
          filter: filterOf(flags),
          active: flags.active ? true : flags.inactive ? false : undefined,
          skipBefore: flags.skipBefore,
          rotateSecret: flags.rotateSecret ? { graceSeconds: numberText(flags.graceSeconds) } : undefined,
          ...limitsOf(flags),
        };
        if (Object.values(patch).every((v) => v === undefined)) throw new UsageError([`give at least one of ${UPDATE_FLAGS.join(', ')}`]);
        const given = Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined));
        return validateBoth(cmd, [s.destinationParams, { companyId, destinationId }], [s.patchDestinationBody, given]);
      },
      run: async (svc, [params, patch], audit) => {
        // The API replaces the whole filter: a flag for one list keeps the other as it is.
        const filter = patch.filter;
        if (filter && (filter.resourceTypes === undefined || filter.eventTypes === undefined)) {
          const current = await svc.destinations.get(params.companyId, params.destinationId);
          patch.filter = { resourceTypes: filter.resourceTypes === undefined ? current.filter.resourceTypes : filter.resourceTypes, eventTypes: filter.eventTypes === undefined ? current.filter.eventTypes : filter.eventTypes };
        }
        return withNames(svc, await svc.destinations.update(params.companyId, params.destinationId, patch, audit), [params.companyId]);
      },
      output: s.destinationViewSchema.extend({ secret: z.string().optional() }),
      human: ({ secret, names, ...d }) => {
        const rotated = secret === undefined ? '' : `\nnew secret: ${secret}\n${STORE_IT}${d.previousSecretExpiresAt ? `\nThe previous secret signs beside it until ${shortTime(d.previousSecretExpiresAt)}.` : ' The previous secret no longer signs.'}`;
        return `updated destination ${d.id}${rotated}\n\n${describeDestination(d, names)}`;
      },
    },
  );

  // The API answers 204 and no body: nothing for --json to print, so the command has none.
  subcommand(destinations, 'delete', 'delete a destination: its pending deliveries end skipped; its deliveries stay listed until retention', 'companyId', 'destinationId').action(
    (companyId: string, destinationId: string, flags: object, cmd: Command) =>
      execute(cmd, async () => {
        const params = validate(cmd, s.destinationParams, { companyId, destinationId });
        await withServices('write', (svc) => auditedRun(svc.audit, cmd, flags, [companyId, destinationId], (audit) => svc.destinations.delete(params.companyId, params.destinationId, audit)), cmd);
        process.stdout.write(`deleted destination ${params.destinationId}; its pending deliveries ended skipped\n`);
      }),
  );

  dataCommand(subcommand(destinations, 'secret', "print a destination's signing secret (and the previous one while a rotation's grace period lasts)", 'companyId', 'destinationId'), {
    // A read, but of a secret: in the audit log, as the admin API's is.
    access: 'write',
    input: (cmd, _flags, [companyId, destinationId]) => validate(cmd, s.destinationParams, { companyId, destinationId }),
    run: (svc, params, audit) => svc.destinations.secret(params.companyId, params.destinationId, audit),
    output: s.destinationSecretSchema,
    human: (secret) =>
      `secret: ${secret.secret}${secret.previousSecret ? `\nprevious secret: ${secret.previousSecret} (signs beside it until ${shortTime(secret.previousSecretExpiresAt!)})` : ''}`,
  });

  dataCommand(subcommand(destinations, 'test', 'send a test event now, signed as deliveries are, and show the answer (exit 1 when it is not a 2xx); nothing is stored', 'companyId', 'destinationId'), {
    // Nothing is stored, but a request goes out: in the audit log, as a call.
    access: 'write',
    input: (cmd, _flags, [companyId, destinationId]) => validate(cmd, s.destinationParams, { companyId, destinationId }),
    run: async (svc, params, audit) => {
      const attempt = await svc.destinations.test(params.companyId, params.destinationId, audit);
      if (!attempt.delivered) process.exitCode = 1;
      return attempt;
    },
    output: s.testAttemptSchema,
    human: (a) => {
      const outcome = a.httpStatus === null ? `no answer: ${a.error}` : `answered ${a.httpStatus}`;
      return `test event ${a.webhookId}: ${outcome} in ${a.durationMs} ms${a.delivered ? '' : ' (not delivered: a delivery needs a 2xx)'}${a.response ? `\nanswer: ${truncate(a.response.trim(), 500)}` : ''}`;
    },
  });

  dataCommand(
    subcommand(destinations, 'replay', "send a destination's deliveries again (the same webhook-ids), outside their resources' order: receivers keep the highest version", 'companyId', 'destinationId')
      .option('--since <time>', "only deliveries created at or after this ISO 8601 time; without --status, also creates those of the events since then that the destination's filter left out")
      .option('--status <status>', `only deliveries with this status: ${s.destinationReplayBody.unwrap().unwrap().shape.status.unwrap().options.join(', ')}`)
      .option('--dry-run', 'only count what would be sent again'),
    {
      access: 'write',
      input: (cmd, flags: JsonFlag & { since?: string; status?: string; dryRun?: boolean }, [companyId, destinationId]) =>
        validateBoth(cmd, [s.destinationParams, { companyId, destinationId }], [s.destinationReplayBody, { since: flags.since, status: flags.status, dryRun: flags.dryRun }]),
      run: (svc, [params, body], audit) => svc.destinations.replay(params.companyId, params.destinationId, body, audit),
      output: s.destinationReplayedSchema,
      human: (result, [, body]) => {
        const created = result.created > 0 ? ` (${result.created} created: events the destination's filter left out when they were stored)` : '';
        return body?.dryRun ? `${result.matched} delivery(ies) match${created}; nothing sent (dry run)` : `replayed ${result.replayed} of ${result.matched} matching delivery(ies)${created}: each is sent again with its webhook-id`;
      },
    },
  );
}
