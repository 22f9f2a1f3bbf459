/** `skyhook webhooks …`: a company's webhook settings on the marketplace (Skyhook generates the credentials). */
import type { Command } from 'commander';
import { CLIENT_AUTHENTICATION_TYPES, EVENT_TYPES } from '../../marketplace/contract.js';
import * as s from '../../services/schemas.js';
import { booleanText, dataCommand, group, list, subcommand, UsageError, validate, validateBoth, type JsonFlag } from './command.js';
import { FORCE_HELP, remaining } from './companies.js';
import { keyValues, listing, table, yesNo } from './output.js';

// Over 80 lines on purpose: a registrar, one command after another, each a few lines; the helpers it shares sit above it.
export function registerWebhooks(program: Command): void {
  const webhooks = group(program, 'webhooks', "a company's webhook settings on the marketplace (Skyhook generates the credentials)");
  const eventTypesHelp = `comma-separated event types: ${EVENT_TYPES.join(', ')}`;

  dataCommand(
    subcommand(webhooks, 'create', 'register a webhook on the marketplace for a company; it starts active', 'companyId')
      .option('--event-types <a,b,...>', `${eventTypesHelp} (required)`)
      .option('--auth-type <type>', `how the marketplace authenticates to Skyhook: ${CLIENT_AUTHENTICATION_TYPES.join(' or ')} (required)`)
      .option('--display-name <name>', 'the name shown on the marketplace (default: "Skyhook (<company name>)")')
      .option('--shared-target', 'use the shared targetURI <PUBLIC_BASE_URL>/hooks instead of a URL of its own'),
    {
      access: 'write',
      input: (cmd, flags: JsonFlag & { eventTypes?: string; authType?: string; displayName?: string; sharedTarget?: boolean }, [companyId]) =>
        validateBoth(cmd, [s.companyIdParams, { companyId }], [s.createWebhookBody, { eventTypes: list(flags.eventTypes), authType: flags.authType, displayName: flags.displayName, sharedTarget: flags.sharedTarget }]),
      run: (svc, [params, body], audit) => svc.webhooks.create(params.companyId, body, audit),
      output: s.webhookViewSchema,
      human: (webhook) => `created webhook ${webhook.id} (marketplace id ${webhook.remoteId})\n${keyValues(webhook)}`,
    },
  );

  dataCommand(subcommand(webhooks, 'list', "list a company's webhooks", 'companyId'), {
    access: 'read',
    input: (cmd, _flags, [companyId]) => validate(cmd, s.companyIdParams, { companyId }),
    run: (svc, params) => svc.webhooks.list(params.companyId),
    output: s.page(s.webhookViewSchema),
    human: (page) => listing(page, 'webhooks', ['ID', 'AUTH', 'ACTIVE', 'EVENT TYPES', 'TARGET URI'], (w) => [w.id, w.authType, yesNo(w.active), w.eventTypes.join(','), w.targetURI]),
  });

  dataCommand(subcommand(webhooks, 'get', 'show one webhook', 'companyId', 'webhookId'), {
    access: 'read',
    input: (cmd, _flags, [companyId, webhookId]) => validate(cmd, s.webhookParams, { companyId, webhookId }),
    run: (svc, params) => svc.webhooks.get(params.companyId, params.webhookId),
    output: s.webhookViewSchema,
    human: (webhook) => keyValues(webhook),
  });

  dataCommand(
    subcommand(webhooks, 'update', 'activate or deactivate a webhook, change its event types or name, or rotate its secret (the previous secret is accepted for a grace period)', 'companyId', 'webhookId')
      .option('--active <true|false>', 'activate (true) or deactivate (false)')
      .option('--event-types <a,b,...>', `replace the event types; ${eventTypesHelp}`)
      .option('--display-name <name>', 'the new name shown on the marketplace')
      .option('--rotate-secret', 'set a new secret on the marketplace'),
    {
      access: 'write',
      input: (cmd, flags: JsonFlag & { active?: string; eventTypes?: string; displayName?: string; rotateSecret?: boolean }, [companyId, webhookId]) => {
        const patch = { active: booleanText(flags.active), eventTypes: list(flags.eventTypes), displayName: flags.displayName, rotateSecret: flags.rotateSecret };
        if (Object.values(patch).every((v) => v === undefined)) throw new UsageError(['give at least one of --active, --event-types, --display-name, --rotate-secret']);
        return validateBoth(cmd, [s.webhookParams, { companyId, webhookId }], [s.patchWebhookBody, patch]);
      },
      run: (svc, [params, patch], audit) => svc.webhooks.update(params.companyId, params.webhookId, patch, audit),
      output: s.webhookViewSchema,
      human: (webhook, [, patch]) => {
        const rotated = patch.rotateSecret ? `\nsecret rotated; the previous one is accepted until ${webhook.previousSecretExpiresAt}` : '';
        return `updated webhook ${webhook.id}${rotated}\n${keyValues(webhook)}`;
      },
    },
  );

  dataCommand(
    subcommand(webhooks, 'reconcile', "compare a company's webhooks with its settings on the marketplace and report the drift; --apply re-creates what the marketplace lost (a sandbox reset)", 'companyId')
      .option('--apply', 're-create the settings the marketplace lost and take over moved ids (differences and unknown settings are only reported)'),
    {
      access: 'write',
      input: (cmd, flags: JsonFlag & { apply?: boolean }, [companyId]) => ({ ...validate(cmd, s.companyIdParams, { companyId }), apply: flags.apply ?? false }),
      run: (svc, input, audit) => svc.webhooks.reconcile(input.companyId, { apply: input.apply }, audit),
      output: s.reconciliationViewSchema,
      human: (result) => {
        const summary = `${result.inSync} in sync, ${result.drift.length} drifted, ${result.remoteSettings} settings on the marketplace${result.applied ? '' : ' (report only: --apply re-creates what is missing)'}`;
        if (result.drift.length === 0) return summary;
        const rows = result.drift.map((d) => [
          d.kind,
          d.webhookId ?? '-',
          d.remoteId ?? '-',
          d.differences.map((x) => x.field).join(',') || '-',
          d.action === 'none' ? '-' : `${d.action}${d.newRemoteId ? ` ${d.newRemoteId}` : ''}`,
          d.error ?? '',
        ]);
        return `${summary}\n${table(['DRIFT', 'WEBHOOK', 'REMOTE ID', 'FIELDS', 'DONE', 'ERROR'], rows)}`;
      },
    },
  );

  dataCommand(
    subcommand(webhooks, 'delete', 'delete a webhook with its notifications, after deactivating its setting on the marketplace', 'companyId', 'webhookId').option('--force', FORCE_HELP),
    {
      access: 'write',
      input: (cmd, flags: JsonFlag & { force?: boolean }, [companyId, webhookId]) => ({ ...validate(cmd, s.webhookParams, { companyId, webhookId }), force: flags.force }),
      run: (svc, input, audit) => svc.deletions.deleteWebhook(input.companyId, input.webhookId, { force: input.force }, audit),
      output: s.deletedSchema,
      human: (deleted, input) => `deleted webhook ${input.webhookId}${remaining(deleted)}`,
    },
  );
}
