/** `skyhook leads …`, `skyhook quotes …` and `skyhook declines …`: what Skyhook sends to the marketplace for a company. */
import type { Command } from 'commander';
import type { z } from 'zod';
import { DECLINE_REASONS } from '../../marketplace/declines.js';
import * as s from '../../services/schemas.js';
import { addPageOptions, dataCommand, group, readJsonFile, subcommand, together, validate, validateBody, validateBoth, type JsonFlag, type PageFlags } from './command.js';
import { listing, shortTime } from './output.js';

type RequestFlags = JsonFlag & { file?: string; resendUnknown?: boolean };

/** The --file request (or stdin) of a lead, a quote or a decline, `--resend-unknown` folded in as resendUnknown: true. */
async function fileRequest<S extends z.ZodType>(cmd: Command, flags: RequestFlags, companyId: string | undefined, body: S) {
  const file = await readJsonFile(flags.file);
  return together(
    () => validate(cmd, s.companyIdParams, { companyId }),
    () => validateBody(body, flags.resendUnknown && typeof file === 'object' && file !== null ? { ...file, resendUnknown: true } : file),
  );
}

/** Where a quote or a decline went: the stored RFQ's action href, or the assumed path. */
const sentTo = (answer: { target: string | null; targetUrl: string | null }): string =>
  answer.target === 'snapshot_href' ? `the RFQ's action href ${answer.targetUrl}` : `the assumed path ${answer.targetUrl ?? '-'}`;

export function registerLeads(program: Command): void {
  const leads = group(program, 'leads', 'client leads created on the marketplace for a company');

  dataCommand(
    subcommand(leads, 'create', 'create a client lead (idempotent: a clientIdentifier already used returns the stored lead and sends nothing)', 'companyId')
      .option('--file <lead.json|->', 'the Client Lead body as JSON (required); "-" reads stdin; see examples/lead.json')
      .addHelpText('after', '\nExample:\n  echo \'{"clientIdentifier":"c-1","inquiryLift":[{"aircraftType":"Light jet"}]}\' | skyhook leads create <companyId> --file -'),
    {
      access: 'write',
      input: (cmd, flags: RequestFlags, [companyId]) => fileRequest(cmd, flags, companyId, s.createLeadBody),
      // `created` says which text to print; --json prints the lead alone, as the admin API does.
      run: (svc, [params, lead], audit) => svc.leads.create(params.companyId, lead, audit).then(({ lead: stored, created }) => ({ ...stored, created })),
      output: s.leadViewSchema,
      human: (stored) =>
        stored.created
          ? `created lead ${stored.id} (clientIdentifier ${stored.clientIdentifier}, marketplace id ${stored.remoteId ?? '-'})`
          : `lead ${stored.id} with clientIdentifier ${stored.clientIdentifier} already existed (marketplace id ${stored.remoteId ?? '-'}); nothing was sent`,
    },
  );

  dataCommand(addPageOptions(subcommand(leads, 'list', "list a company's leads (newest first)", 'companyId')), {
    access: 'read',
    input: (cmd, flags: PageFlags, [companyId]) =>
      validateBoth(cmd, [s.companyIdParams, { companyId }], [s.listQuery, { limit: flags.limit, cursor: flags.cursor }]),
    run: (svc, [params, query]) => svc.leads.list(params.companyId, query),
    output: s.page(s.leadViewSchema),
    human: (page) =>
      listing(page, 'leads', ['ID', 'CLIENT IDENTIFIER', 'KIND', 'STATUS', 'MARKETPLACE ID', 'CREATED'], (l) => [l.id, l.clientIdentifier, l.kind, l.status, l.remoteId ?? '-', shortTime(l.createdAt)]),
  });
}

export function registerQuotes(program: Command): void {
  const quotes = group(program, 'quotes', 'quotes submitted to buyers for a company');

  dataCommand(
    subcommand(quotes, 'submit', 'submit a quote (idempotent by submission.quote.sellerUniqueQuoteIdentifier: a repeat returns the stored quote)', 'companyId')
      .option('--file <request.json|->', 'the request as JSON (required): {requestId, actAsAccount?, allowPriceMismatch?, resendUnknown?, submission}; "-" reads stdin; see examples/quote.json')
      .option('--resend-unknown', 'send again a quote left with status unknown (as resendUnknown: true); check on the marketplace first'),
    {
      access: 'write',
      input: (cmd, flags: RequestFlags, [companyId]) => fileRequest(cmd, flags, companyId, s.createQuoteBody),
      run: (svc, [params, request], audit) => svc.quotes.submit(params.companyId, request, audit).then(({ quote, created }) => ({ ...quote, created })),
      output: s.quoteViewSchema,
      human: (quote) => {
        const ids = `tripmsgs ${quote.tripMessageId ?? '-'}, sellerQuote ${quote.sellerQuoteId ?? '-'}, lift ${quote.liftId ?? '-'}`;
        return quote.created
          ? `submitted quote ${quote.id} (${quote.sellerUniqueQuoteIdentifier}) to ${sentTo(quote)}: ${ids}`
          : `quote ${quote.id} (${quote.sellerUniqueQuoteIdentifier}) was already submitted; nothing was sent: ${ids}`;
      },
    },
  );

  dataCommand(
    addPageOptions(subcommand(quotes, 'list', "list a company's quotes (newest first)", 'companyId'))
      .option('--lift-id <id>', 'only the quote with this marketplace lift id')
      .option('--status <status>', 'only quotes with this status: sending, created or unknown'),
    {
      access: 'read',
      input: (cmd, flags: PageFlags & { liftId?: string; status?: string }, [companyId]) =>
        validateBoth(cmd, [s.companyIdParams, { companyId }], [s.quotesQuery, { liftId: flags.liftId, status: flags.status, limit: flags.limit, cursor: flags.cursor }]),
      run: (svc, [params, query]) => svc.quotes.list(params.companyId, query),
      output: s.page(s.quoteViewSchema),
      human: (page) =>
        listing(page, 'quotes', ['ID', 'SELLER QUOTE IDENTIFIER', 'REQUEST ID', 'STATUS', 'LIFT ID', 'CREATED'], (q) => [
          q.id,
          q.sellerUniqueQuoteIdentifier,
          q.requestId,
          q.status,
          q.liftId ?? '-',
          shortTime(q.createdAt),
        ]),
    },
  );
}

export function registerDeclines(program: Command): void {
  const declines = group(program, 'declines', 'requested lifts and RFQs declined for a company');

  dataCommand(
    subcommand(declines, 'create', 'decline a requested lift or an RFQ (idempotent by requestId: a lift or RFQ already declined returns the stored decline)', 'companyId')
      .option('--file <request.json|->', 'the request as JSON (required): {requestId, actAsAccount?, resendUnknown?, decline: {message?, declineReason, suppressNotification?}}; "-" reads stdin; see examples/decline.json')
      .option('--resend-unknown', 'send again a decline left with status unknown (as resendUnknown: true); check on the marketplace first')
      .addHelpText('after', `\nReasons: ${DECLINE_REASONS.join(', ')}\nExample:\n  skyhook declines create <companyId> --file examples/decline.json`),
    {
      access: 'write',
      input: (cmd, flags: RequestFlags, [companyId]) => fileRequest(cmd, flags, companyId, s.createDeclineBody),
      run: (svc, [params, request], audit) => svc.declines.decline(params.companyId, request, audit).then(({ decline, created }) => ({ ...decline, created })),
      output: s.declineViewSchema,
      human: (d) =>
        d.created
          ? `declined ${d.requestId} (${d.decline.declineReason}) as ${d.id}, sent to ${sentTo(d)}`
          : `${d.requestId} was already declined (${d.decline.declineReason}) as ${d.id}; nothing was sent`,
    },
  );

  dataCommand(
    addPageOptions(subcommand(declines, 'list', "list a company's declines (newest first)", 'companyId'))
      .option('--request-id <id>', 'only the decline of this lift or RFQ id')
      .option('--status <status>', 'only declines with this status: sending, created or unknown'),
    {
      access: 'read',
      input: (cmd, flags: PageFlags & { requestId?: string; status?: string }, [companyId]) =>
        validateBoth(cmd, [s.companyIdParams, { companyId }], [s.declinesQuery, { requestId: flags.requestId, status: flags.status, limit: flags.limit, cursor: flags.cursor }]),
      run: (svc, [params, query]) => svc.declines.list(params.companyId, query),
      output: s.page(s.declineViewSchema),
      human: (page) =>
        listing(page, 'declines', ['ID', 'REQUEST ID', 'REASON', 'STATUS', 'SENT TO', 'CREATED'], (d) => [
          d.id,
          d.requestId,
          d.decline.declineReason,
          d.status,
          d.target === 'snapshot_href' ? 'RFQ href' : 'assumed path',
          shortTime(d.createdAt),
        ]),
    },
  );
}
