/** `skyhook keys …`: keys for the admin API, the console and the remote CLI (SPEC §10.1); the secret is printed once. */
import type { Command } from 'commander';
import { ROLES } from '../../access/roles.js';
import * as s from '../../services/schemas.js';
import { dataCommand, group, subcommand, validate, type JsonFlag } from './command.js';
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
      run: (svc, body) => svc.keys.create({ ...body, expiresAt: body.expiresAt ? new Date(body.expiresAt) : null }),
      output: s.keyWithSecretSchema,
      human: (made) => `created key ${made.id} (${made.role}${made.companyId ? ` of company ${made.companyId}` : ''})\n\n  ${made.key}\n\nKeep it now: it is not shown again. Send it as Authorization: Bearer <key>, or sign in to the console with it.`,
    },
  );

  dataCommand(subcommand(keys, 'list', 'list keys, newest first, with their state and last use (never a secret)'), {
    access: 'read',
    input: () => ({ limit: 1000 }),
    run: (svc, query) => svc.keys.list(query),
    output: s.page(s.keyViewSchema),
    human: (page) => listing(page, 'keys', ['ID', 'NAME', 'ROLE', 'COMPANY', 'STATE', 'LAST USED', 'HINT'], (k) => [k.id, k.name, k.role, k.companyId ?? '-', k.state, k.lastUsedAt ?? '-', `${k.hint}…`]),
  });

  dataCommand(subcommand(keys, 'revoke', 'revoke a key at once (its console sessions end too); it stays listed', 'keyId'), {
    access: 'write',
    input: (cmd, _flags, [keyId]) => validate(cmd, s.keyParams, { keyId }),
    run: (svc, params) => svc.keys.revoke(params.keyId),
    output: s.keyViewSchema,
    human: (key) => `revoked key ${key.id}\n${keyValues(key)}`,
  });
}
