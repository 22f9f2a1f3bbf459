/** `skyhook deliveries …`: each event sent to each destination, with every attempt (SPEC §5.2). */
import type { Command } from 'commander';
import * as s from '../../services/schemas.js';
import type { DeliveryView } from '../../services/views.js';
import { addPageOptions, dataCommand, group, subcommand, validate, validateBoth, type PageFlags } from './command.js';
import { keyValues, labelled, listing, shortTime, table, truncate, yesNo } from './output.js';

/** A delivery id as given: its number, or its webhook-id (`msg_42`), which is what a receiver logs. */
const deliveryIdOf = (given: string) => given.replace(/^msg_(?=\d+$)/, '');

const resourceText = (d: DeliveryView) => `${d.resource.type} ${d.resource.id} v${d.resource.version}`;

/** One delivery as aligned lines, then its attempts as a small table. */
function describeDelivery(d: DeliveryView, names: Map<string, string>, urls: Map<string, string>): string {
  const head = keyValues({
    id: d.id,
    'webhook-id': d.webhookId,
    company: labelled(names, d.companyId),
    destination: labelled(urls, d.destinationId),
    event: d.eventId,
    resource: `${resourceText(d)} (${d.resource.href})`,
    status: `${d.status}${d.replay ? ' (a replay: outside its resource\'s order)' : ''}`,
    attempts: d.attempts,
    'next attempt': d.nextAttemptAt ? shortTime(d.nextAttemptAt) : undefined,
    'last error': d.lastError ?? undefined,
    'last status': d.lastStatus ?? undefined,
    created: shortTime(d.createdAt),
    delivered: d.deliveredAt ? shortTime(d.deliveredAt) : '-',
    finished: d.finishedAt ? shortTime(d.finishedAt) : '-',
  });
  const attempts = d.attemptsList ?? [];
  if (attempts.length === 0) return `${head}\n\nno attempt yet`;
  const rows = attempts.map((a) => [shortTime(a.at), a.httpStatus === null ? `no answer: ${truncate(a.error ?? '', 60)}` : `HTTP ${a.httpStatus}`, `${a.durationMs} ms`, yesNo(a.probe), a.url, truncate((a.response ?? '').replace(/\s+/g, ' ').trim(), 60) || '-']);
  return `${head}\n\nattempts:\n${table(['AT', 'ANSWER', 'TOOK', 'PROBE', 'URL', 'RESPONSE'], rows)}`;
}

export function registerDeliveries(program: Command): void {
  const deliveries = group(program, 'deliveries', "a company's deliveries: each event sent to each destination, with every attempt; replay one");

  dataCommand(
    addPageOptions(subcommand(deliveries, 'list', "list a company's deliveries, newest first", 'companyId'))
      .option('--destination-id <id>', 'only this destination')
      .option('--status <status>', `only this status: ${s.deliveriesQuery.shape.status.unwrap().options.join(', ')}`)
      .option('--resource-id <id>', 'only this resource')
      .option('--after <time>', 'created after this ISO 8601 time')
      .option('--before <time>', 'created before this ISO 8601 time'),
    {
      access: 'read',
      input: (cmd, flags: PageFlags & { destinationId?: string; status?: string; resourceId?: string; after?: string; before?: string }, [companyId]) =>
        validateBoth(cmd, [s.companyIdParams, { companyId }], [
          s.deliveriesQuery,
          { destinationId: flags.destinationId, status: flags.status, resourceId: flags.resourceId, after: flags.after, before: flags.before, limit: flags.limit, cursor: flags.cursor },
        ]),
      run: async (svc, [params, query]) => {
        const page = await svc.destinations.deliveries(params.companyId, query);
        return { ...page, urls: await svc.destinations.urls(params.companyId, [...new Set(page.items.map((d) => d.destinationId))]) };
      },
      output: s.page(s.deliveryViewSchema),
      human: (page) =>
        listing(page, 'deliveries', ['WEBHOOK-ID', 'DESTINATION', 'RESOURCE', 'STATUS', 'ATTEMPTS', 'CREATED', 'LAST ERROR'], (d) => [
          d.webhookId,
          page.urls.get(d.destinationId) ?? d.destinationId,
          resourceText(d),
          `${d.status}${d.replay ? ' (replay)' : ''}`,
          String(d.attempts),
          shortTime(d.createdAt),
          truncate(d.lastError ?? '-', 60),
        ]),
    },
  );

  dataCommand(subcommand(deliveries, 'get', 'show one delivery with every attempt: when, where, how long, the answer or the error', 'companyId', 'deliveryId'), {
    access: 'read',
    input: (cmd, _flags, [companyId, deliveryId]) => validate(cmd, s.deliveryParams, { companyId, deliveryId: deliveryIdOf(deliveryId!) }),
    run: async (svc, params) => {
      const delivery = await svc.destinations.delivery(params.companyId, params.deliveryId);
      const [names, urls] = await Promise.all([svc.companies.names([params.companyId]), svc.destinations.urls(params.companyId, [delivery.destinationId])]);
      return { ...delivery, names, urls };
    },
    output: s.deliveryViewSchema,
    human: ({ names, urls, ...d }) => describeDelivery(d, names, urls),
  });

  dataCommand(subcommand(deliveries, 'replay', 'send one delivery again, with the same webhook-id, outside its resource\'s order (a pending one cannot be: exit 1)', 'companyId', 'deliveryId'), {
    access: 'write',
    input: (cmd, _flags, [companyId, deliveryId]) => validate(cmd, s.deliveryParams, { companyId, deliveryId: deliveryIdOf(deliveryId!) }),
    run: (svc, params, audit) => svc.destinations.replayDelivery(params.companyId, params.deliveryId, audit),
    output: s.deliveryViewSchema,
    human: (d) => `replayed delivery ${d.id} (${d.webhookId}): now ${d.status}; it is sent again with the same webhook-id`,
  });
}
