/** `skyhook notifications …` and `skyhook resources …`: what was received, what became of it, what was fetched. */
import type { Command } from 'commander';
import type { NotificationView, TimelineEntry } from '../../services/views.js';
import type { Services } from '../../services/index.js';
import { describeError } from '../../lib/error-reporter.js';
import * as s from '../../services/schemas.js';
import { addPageOptions, dataCommand, execute, group, numberText, subcommand, validate, withNames, withServices, type JsonFlag, type PageFlags } from './command.js';
import type { AdminContext } from './context.js';
import { keyValues, labelled, listing, shortTime, table, truncate, yesNo } from './output.js';

const STATUSES = s.notificationStatus.options.join(', ');
/** What replay-all selects without flags: the schema's defaults. */
const REPLAY_DEFAULTS = s.replayBody.parse({});
const REPLAY_LIMIT = s.replayBody.shape.limit.unwrap();

type FilterFlags = Partial<Record<(typeof s.NOTIFICATION_FILTER_KEYS)[number], string>>;

/** The filters of SPEC §7 as flags, on list and replay-all alike. */
function addFilterOptions(cmd: Command, statusHelp: string): Command {
  return cmd
    .option('--company-id <id>', 'only this company')
    .option('--webhook-id <id>', 'only this webhook')
    .option('--status <status>', statusHelp)
    .option('--type <type>', 'only this notification type (e.g. rfqs, tripmsgs, leads)')
    .option('--resource-id <id>', "only this resource (the notification's id)")
    .option('--href <href>', 'only notifications of this href')
    .option('--received-after <time>', 'received at or after this ISO 8601 time, e.g. 2026-11-24T10:00:00Z')
    .option('--received-before <time>', 'received before this ISO 8601 time');
}

const filterOf = (flags: FilterFlags) => Object.fromEntries(s.NOTIFICATION_FILTER_KEYS.map((k) => [k, flags[k]]));

/** An error's reason: without the attempt count ahead of it (the row says how many). */
const errorReason = (error: string | null): string => (error ? error.replace(/^gave up after (\d+) attempts: (.*)$/s, '$2 (gave up after $1 attempts)') : '-');

export function registerNotifications(program: Command): void {
  const notifications = group(program, 'notifications', 'received notifications: list, inspect, replay, follow live');

  dataCommand(
    subcommand(
      program,
      'resync',
      "fetch again every resource Skyhook stored for a company, within its limits (after an outage longer than the marketplace's 48 hours of retries)",
      'companyId',
    ),
    {
      access: 'write',
      input: (cmd, _flags, [companyId]) => validate(cmd, s.companyIdParams, { companyId }),
      run: (svc, params, audit) => svc.notifications.resync(params.companyId, audit),
      output: s.resyncViewSchema,
      human: (r) =>
        `queued ${r.queued} of ${r.resources} resource(s) to be fetched again through the company's gate` +
        (r.outOfScope > 0 ? `; ${r.outOfScope} left out: their href is under none of the company's base URLs` : '') +
        `\nfollow them: skyhook notifications list --company-id ${r.companyId}`,
    },
  );

  dataCommand(addPageOptions(addFilterOptions(subcommand(notifications, 'list', 'list notifications (newest first)'), `only this status: ${STATUSES}`)), {
    access: 'read',
    input: (cmd, flags: PageFlags & FilterFlags) => validate(cmd, s.notificationsQuery, { ...filterOf(flags), limit: flags.limit, cursor: flags.cursor }),
    run: (svc, query) => svc.notifications.list(query).then((page) => withNames(svc, page, page.items.map((n) => n.companyId))),
    output: s.page(s.notificationViewSchema),
    human: (page) =>
      listing(page, 'notifications', ['ID', 'COMPANY', 'TYPE', 'RESOURCE ID', 'STATUS', 'ATTEMPTS', 'RECEIVED', 'LAST ERROR'], (n) => [
        n.id,
        labelled(page.names, n.companyId),
        n.type,
        n.resourceId,
        n.status,
        String(n.attempts),
        shortTime(n.receivedAt),
        truncate(errorReason(n.lastError), 60),
      ]),
  });

  dataCommand(subcommand(notifications, 'get', 'show one notification, with the body the marketplace sent and its timeline', 'id'), {
    access: 'read',
    input: (cmd, _flags, [id]) => validate(cmd, s.notificationParams, { id }),
    run: (svc, params) => svc.notifications.get(params.id).then((notification) => withNames(svc, notification, [notification.companyId])),
    output: s.notificationViewSchema,
    human: ({ names, ...notification }) => describeNotification(notification, names),
  });

  dataCommand(subcommand(notifications, 'replay', 'fetch the resource of one notification again (a discarded one cannot be replayed)', 'id'), {
    access: 'write',
    input: (cmd, _flags, [id]) => validate(cmd, s.notificationParams, { id }),
    run: (svc, params, audit) => svc.notifications.replay(params.id, audit),
    output: s.replayedNotificationSchema,
    human: (notification) => `replayed notification ${notification.id}: now ${notification.status}${notification.note ? `\n${notification.note}` : ''}`,
  });

  dataCommand(
    addFilterOptions(
      subcommand(notifications, 'replay-all', 'replay every notification matching the filters, oldest first (discarded ones never)'),
      `only this status: ${s.replayableStatus.options.join(', ')} (default ${REPLAY_DEFAULTS.status})`,
    )
      .option('--limit <n>', `at most this many (${REPLAY_LIMIT.minValue}-${REPLAY_LIMIT.maxValue}, default ${REPLAY_DEFAULTS.limit})`)
      .option('--dry-run', 'only count what would be replayed'),
    {
      access: 'write',
      // The API takes this filter as a JSON body, so the limit is a number there, not query text.
      input: (cmd, flags: JsonFlag & FilterFlags & { limit?: string; dryRun?: boolean }) =>
        validate(cmd, s.replayBody, { ...filterOf(flags), limit: numberText(flags.limit), dryRun: flags.dryRun }),
      run: (svc, filter, audit) => svc.notifications.replayMatching(filter, audit),
      output: s.replayedSchema,
      human: (result, filter) =>
        filter.dryRun ? `${result.matched} notification(s) match; nothing replayed (dry run)` : `replayed ${result.replayed} of ${result.matched} matching notification(s)`,
    },
  );

  subcommand(notifications, 'tail', 'follow status changes live, as they happen, until interrupted (Ctrl-C)')
    .option('--company-id <id>', 'only this company')
    .option('--json', 'one JSON object per line, as the admin stream sends them')
    .action((flags: JsonFlag & { companyId?: string }, cmd: Command) =>
      execute(cmd, async () => {
        const filter = validate(cmd, s.streamQuery, { companyId: flags.companyId });
        await withServices('read', async (svc, context) => tail(svc, context, filter, Boolean(flags.json)), cmd);
      }),
    );
}

/** Prints each status change until SIGINT or SIGTERM. */
async function tail(svc: Services, context: AdminContext, filter: { companyId?: string }, json: boolean): Promise<void> {
  const { NotificationStream } = await import('../../services/notification-stream.js');
  const { listen } = await import('../../db/listen.js');
  let stop: () => void = () => {};
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const stream = new NotificationStream({
    listen: (channels, listener) => listen(context.config.databaseUrl, channels, listener),
    notifications: context.notifications,
    maxSubscribers: 1,
    onError: (err) => process.stderr.write(`skyhook: the live stream lost PostgreSQL (${describeError(err)}); reconnecting\n`),
  });
  const names = new Map<string, string>();
  stream.subscribe(filter, {
    event: (e) => {
      if (json) return void process.stdout.write(`${JSON.stringify(e)}\n`);
      const print = () => process.stdout.write(`${shortTime(e.at)}  ${labelled(names, e.companyId)}  #${e.id}  ${e.type} ${e.resourceId}  ${e.status}\n`);
      if (names.has(e.companyId)) return void print();
      void svc.companies.names([e.companyId]).then((found) => {
        for (const [id, name] of found) names.set(id, name);
        print();
      }, print);
    },
    resync: (reason) => process.stderr.write(`skyhook: ${reason}\n`),
    end: stop,
  });
  if (!json) process.stderr.write(`following status changes${filter.companyId ? ` of company ${filter.companyId}` : ''}; Ctrl-C to stop\n`);
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  await stopped;
  await stream.close();
}

/** One notification as aligned key-value lines, then its timeline as a small table. */
function describeNotification(n: NotificationView, names: Map<string, string>): string {
  const { timeline = [], ...fields } = n;
  const head = keyValues({ ...fields, companyId: labelled(names, n.companyId) });
  if (timeline.length === 0) return head;
  const rows = timeline.map((e) => [shortTime(e.at), e.kind, timelineDetail(e)]);
  return `${head}\n\ntimeline:\n${table(['AT', 'WHAT', 'DETAIL'], rows)}`;
}

function timelineDetail(e: TimelineEntry): string {
  switch (e.kind) {
    case 'fetch': {
      const status = e.httpStatus === null ? 'no answer' : `HTTP ${e.httpStatus}`;
      const stored = e.snapshotVersion !== null ? `, stored version ${e.snapshotVersion}` : '';
      return `${status}, ${e.outcome}, ${e.durationMs} ms${stored}${e.error ? `: ${errorReason(e.error)}` : ''}`;
    }
    case 'failed':
      return errorReason(e.error);
    default:
      return '';
  }
}

export function registerResources(program: Command): void {
  const resources = group(program, 'resources', 'the fetched resources (the latest snapshot of each href) and their versions');

  dataCommand(
    addPageOptions(subcommand(resources, 'list', 'list stored resources (by company, then href)'))
      .option('--company-id <id>', 'only this company')
      .option('--type <type>', 'only this resource type (e.g. rfqs, tripmsgs, leads)'),
    {
      access: 'read',
      input: (cmd, flags: PageFlags & { companyId?: string; type?: string }) =>
        validate(cmd, s.resourcesQuery, { companyId: flags.companyId, type: flags.type, limit: flags.limit, cursor: flags.cursor }),
      run: (svc, query) => svc.notifications.listResources(query).then((page) => withNames(svc, page, page.items.map((r) => r.companyId))),
      output: s.page(s.resourceViewSchema),
      human: (page) =>
        listing(page, 'resources', ['COMPANY', 'TYPE', 'RESOURCE ID', 'VERSION', 'GONE', 'FETCHED', 'HREF'], (r) => [
          labelled(page.names, r.companyId),
          r.type,
          r.resourceId,
          String(r.version),
          yesNo(r.gone),
          shortTime(r.fetchedAt),
          r.href,
        ]),
    },
  );

  dataCommand(
    addPageOptions(subcommand(resources, 'history', "list a resource's stored versions, newest first, with what changed from the one before"))
      .requiredOption('--company-id <id>', 'the company (required)')
      .requiredOption('--href <href>', "the resource's href (required)"),
    {
      access: 'read',
      input: (cmd, flags: PageFlags & { companyId: string; href: string }) =>
        validate(cmd, s.resourceHistoryQuery, { companyId: flags.companyId, href: flags.href, limit: flags.limit, cursor: flags.cursor }),
      run: (svc, query) => svc.notifications.resourceHistory(query),
      output: s.page(s.resourceVersionViewSchema),
      human: (page) => listing(page, 'versions', ['VERSION', 'FETCHED', 'EVENT', 'CHANGES'], (v) => [String(v.version), shortTime(v.fetchedAt), v.eventId, describeChanges(v.changes)]),
    },
  );
}

/** A patch in a few words: its operations' kinds and paths. */
function describeChanges(changes: unknown): string {
  if (!Array.isArray(changes)) return 'first version';
  if (changes.length === 0) return 'nothing changed';
  const ops = (changes as { op: string; path: string }[]).map((c) => `${c.op} ${c.path || '/'}`);
  return truncate(`${changes.length} change(s): ${ops.join(', ')}`, 100);
}
