/**
 * `skyhook keys …`: keys for the admin API, the console and the remote CLI (SPEC §10.1), the secret printed
 * once; `skyhook audit list`: who changed what.
 */
import type { Command } from 'commander';
import { ROLES } from '../../access/roles.js';
import * as s from '../../services/schemas.js';
import { addPageOptions, dataCommand, group, numberText, subcommand, validate, type JsonFlag, type PageFlags } from './command.js';
import { keyValues, listing } from './output.js';

export function registerKeys(program: Command): void {
  const keys = group(program, 'keys', 'keys to the admin API, the console and the remote CLI, each with one role');

  dataCommand(
    subcommand(keys, 'create', 'make a key; it is printed once, and only its digest is kept')
      .option('--name <name>', 'who or what holds it (required)')
      .option('--role <role>', `${ROLES.join(', ')} (required)`)
      .option('--company-id <companyId>', 'the company a company key is bound to')
      .option('--expires-at <time>', 'when it stops working, ISO 8601 with its offset (default: never)'),
    {
      access: 'write',
      input: (cmd, flags: JsonFlag & { name?: string; role?: string; companyId?: string; expiresAt?: string }) =>
        validate(cmd, s.createKeyBody, { name: flags.name, role: flags.role, companyId: flags.companyId, expiresAt: flags.expiresAt }),
      run: (svc, body, audit) => svc.keys.create({ ...body, expiresAt: body.expiresAt ? new Date(body.expiresAt) : null }, audit),
      output: s.keyWithSecretSchema,
      human: (made) => `created key ${made.id} (${made.role}${made.companyId ? ` of company ${made.companyId}` : ''})\n\n  ${made.key}\n\nKeep it now: it is not shown again. Send it as Authorization: Bearer <key>, or sign in to the console with it.`,
    },
  );

  dataCommand(addPageOptions(subcommand(keys, 'list', 'list keys, newest first, with their state and last use (never a secret)')), {
    access: 'read',
    input: (cmd, flags: PageFlags) => validate(cmd, s.listQuery, { limit: flags.limit, cursor: flags.cursor }),
    run: (svc, query) => svc.keys.list(query),
    output: s.page(s.keyViewSchema),
    human: (page) => listing(page, 'keys', ['ID', 'NAME', 'ROLE', 'COMPANY', 'STATE', 'LAST USED', 'HINT'], (k) => [k.id, k.name, k.role, k.companyId ?? '-', k.state, k.lastUsedAt ?? '-', `${k.hint}…`]),
  });

  dataCommand(subcommand(keys, 'revoke', 'revoke a key at once (its console sessions end too); it stays listed', 'keyId'), {
    access: 'write',
    input: (cmd, _flags, [keyId]) => validate(cmd, s.keyParams, { keyId }),
    run: (svc, params, audit) => svc.keys.revoke(params.keyId, audit),
    output: s.keyViewSchema,
    human: (key) => `revoked key ${key.id}\n${keyValues(key)}`,
  });
}

export function registerAudit(program: Command): void {
  const audit = group(program, 'audit', 'the audit log: every change made through the admin API, the console or the CLI');
  dataCommand(
    addPageOptions(
      subcommand(audit, 'list', 'list changes, newest first, with who made them, from where, and the outcome')
        .option('--actor <idOrName>', "a key's id or name, ADMIN_TOKEN, or cli:<user>")
        .option('--company-id <companyId>', "one company's changes")
        .option('--action <text>', 'actions containing this text (a route such as DELETE /admin/companies, or a command such as skyhook keys)')
        .option('--after <time>', 'made at or after this time (ISO 8601 with its offset)')
        .option('--before <time>', 'made before this time'),
    ),
    {
      access: 'read',
      input: (cmd, flags: JsonFlag & PageFlags & { actor?: string; companyId?: string; action?: string; after?: string; before?: string }) =>
        validate(cmd, s.auditQuery, { actor: flags.actor, companyId: flags.companyId, action: flags.action, after: flags.after, before: flags.before, limit: numberText(flags.limit), cursor: flags.cursor }),
      run: (svc, query) => svc.audit.list(query, LOCAL_READER),
      output: s.page(s.auditEntrySchema),
      human: (page) =>
        listing(page, 'audit entries', ['AT', 'WHO', 'FROM', 'ACTION', 'TARGETS', 'FIELDS', 'OUTCOME'], (e) => [
          e.at,
          e.actor.name,
          e.address ?? '-',
          e.action,
          Object.values(e.targets).join(',') || e.companyId || '-',
          e.fields.join(',') || '-',
          e.details && typeof e.details.replayed === 'number' ? `${e.outcome} (${e.details.replayed} of ${String(e.details.matched)})` : e.outcome,
        ]),
    },
  );
}

/** The local CLI reads every company's entries. */
const LOCAL_READER = { kind: 'local', id: null, name: 'cli', role: 'admin', companyId: null } as const;
