/**
 * `skyhook events …`: a company's pull feed (SPEC §5.2), its events in commit order, for an application
 * that cannot take requests: a page at a time after a cursor, or followed live, each line with the cursor
 * to resume after it.
 */
import type { Command } from 'commander';
import { describeError } from '../../lib/error-reporter.js';
import * as s from '../../services/schemas.js';
import type { Services } from '../../services/index.js';
import type { EventView } from '../../services/views.js';
import { dataCommand, execute, group, subcommand, validateBoth, withServices, type JsonFlag } from './command.js';
import { shortTime, table } from './output.js';

const AFTER_HELP = 'read after this cursor (an event\'s `cursor`, or a page\'s nextCursor); without, from the oldest event kept';

const versionText = (e: EventView) => `${e.resource.version}${e.resource.previousVersion === null ? '' : ` (after ${e.resource.previousVersion})`}`;
const row = (e: EventView) => [String(e.id), shortTime(e.occurredAt), e.type, `${e.resource.type} ${e.resource.id}`, versionText(e), e.eventTypes.join(',') || '-', e.cursor];
const HEADERS = ['ID', 'OCCURRED', 'TYPE', 'RESOURCE', 'VERSION', 'EVENT TYPES', 'CURSOR'];

export function registerEvents(program: Command): void {
  const events = group(program, 'events', "a company's events in order (the pull feed): each stored version of a resource, as deliveries carry it");

  dataCommand(
    subcommand(events, 'list', "list a company's events in order, oldest first, after a cursor", 'companyId')
      .option('--after <cursor>', AFTER_HELP)
      .option('--limit <n>', 'at most this many (1-500, default 100)'),
    {
      access: 'read',
      input: (cmd, flags: JsonFlag & { after?: string; limit?: string }, [companyId]) => validateBoth(cmd, [s.companyIdParams, { companyId }], [s.eventsQuery, { after: flags.after, limit: flags.limit }]),
      run: (svc, [params, query]) => svc.events.page(params.companyId, query.after, query.limit),
      output: s.eventsPageSchema,
      human: (page, [params]) => {
        const next = page.nextCursor ? `\nnext: skyhook events list ${params.companyId} --after ${page.nextCursor}` : '';
        return page.items.length === 0 ? `no events${page.nextCursor ? ' after this cursor yet' : ''}${next}` : `${table(HEADERS, page.items.map(row))}${next}`;
      },
    },
  );

  subcommand(events, 'tail', "follow a company's events live, in order, until interrupted (Ctrl-C); each line ends with its cursor, to resume after it", 'companyId')
    .option('--after <cursor>', `${AFTER_HELP}; what is already stored after it is printed first`)
    .option('--json', 'one JSON object per line, as the events stream sends them (with `cursor`)')
    .action((companyId: string, flags: JsonFlag & { after?: string }, cmd: Command) =>
      execute(cmd, async () => {
        const [params, query] = validateBoth(cmd, [s.companyIdParams, { companyId }], [s.eventsQuery.pick({ after: true }), { after: flags.after }]);
        await withServices('read', (svc) => tail(svc, params.companyId, query.after, Boolean(flags.json)), cmd);
      }),
    );
}

/** Prints every event after `after`, then each new one as it commits, until SIGINT or SIGTERM; then the cursor to resume from. */
async function tail(svc: Services, companyId: string, after: string | undefined, json: boolean): Promise<void> {
  // One page first: an unknown company or a bad cursor is refused before anything is printed.
  await svc.events.page(companyId, after, 1);
  const stopped = new AbortController();
  const stop = () => stopped.abort();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  let cursor = after;
  if (!json) process.stderr.write(`following the events of company ${companyId}${after ? ` after ${after}` : ''}; Ctrl-C to stop\n`);
  try {
    await svc.events.follow(
      companyId,
      after,
      (e) => {
        cursor = e.cursor;
        process.stdout.write(json ? `${JSON.stringify(s.eventViewSchema.encode(e))}\n` : `${row(e).join('  ')}\n`);
      },
      stopped.signal,
    );
  } catch (err) {
    // PostgreSQL gone mid-follow, say: what was printed stands, and the cursor says where to resume.
    process.stderr.write(`skyhook: the events feed ended: ${describeError(err)}\n`);
    process.exitCode = 1;
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
    await svc.events.close();
  }
  process.stderr.write(cursor ? `resume with: skyhook events tail ${companyId} --after ${cursor}\n` : `no event yet; resume with: skyhook events tail ${companyId}\n`);
}
