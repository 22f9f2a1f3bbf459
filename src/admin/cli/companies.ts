/** `skyhook companies …`: companies (tenants) and their marketplace API connection. */
import type { Command } from 'commander';
import * as s from '../../services/schemas.js';
import { addPageOptions, dataCommand, group, readStdin, subcommand, UsageError, validate, validateBoth, type JsonFlag, type PageFlags } from './command.js';
import { keyValues, listing, shortTime, whenText } from './output.js';

/** --force of the delete commands, and what a forced delete left active on the marketplace. */
export const FORCE_HELP = 'delete here even if the marketplace refuses to deactivate the webhook settings (they stay active there)';
export const remaining = (deleted: { remainingRemoteSettings: { remoteId: string; error: string }[] }) =>
  deleted.remainingRemoteSettings.map((r) => `\nstill active on the marketplace: setting ${r.remoteId} (${r.error}); deactivate it there`).join('');

/** The secret flags: `-` reads one from stdin, keeping it out of the shell history. */
const SECRET_FLAGS = ['apiToken', 'authToken', 'clientSecret'] as const;
type SecretFlags = Partial<Record<(typeof SECRET_FLAGS)[number], string>>;

/** The connection flags, the same for create and update. */
interface ConnectionFlags extends SecretFlags {
  profile?: string;
  product?: string;
  apiVersion?: string;
  tokenUrl?: string;
  clientId?: string;
  clientSecretExpiresAt?: string;
  baseUrl?: string[];
}

/** A repeatable flag's values, in order. */
const collect = (value: string, previous: string[] | undefined): string[] => [...(previous ?? []), value];

/** The secret flags' values, the one given as `-` read from stdin (only one can be). */
async function secrets(flags: SecretFlags): Promise<SecretFlags> {
  const fromStdin = SECRET_FLAGS.filter((k) => flags[k] === '-');
  if (fromStdin.length > 1) throw new UsageError([`only one secret flag can read stdin ("-"); got ${fromStdin.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(' and ')}`]);
  const read = fromStdin.length === 1 ? (await readStdin()).toString('utf8').trim() : undefined;
  return Object.fromEntries(SECRET_FLAGS.map((k) => [k, flags[k] === '-' ? read : flags[k]]));
}

/** The `connection` object when any connection flag is given (the schema then names what is missing): each of its fields from the flag of that name. */
function connectionOf(flags: ConnectionFlags, secret: SecretFlags): Record<string, unknown> | undefined {
  const given: Record<string, unknown> = { ...flags, ...secret, baseUrls: flags.baseUrl };
  const connection = Object.fromEntries(Object.keys(s.connectionBody.shape).map((field) => [field, given[field]]));
  return Object.values(connection).some((v) => v !== undefined) ? connection : undefined;
}

function withConnectionOptions(cmd: Command): Command {
  return cmd
    .option('--profile <profile>', 'how calls are authenticated: bearer (the default: Authorization: Bearer <API token>) or avinode (the real marketplace\'s headers); replaces the whole connection')
    .option('--auth-token <token>', 'avinode: the fixed Authorization token (or give OAuth client credentials); "-" reads it from stdin')
    .option('--product <name>', 'avinode: X-Avinode-Product, your product name and version (default "Skyhook <version>")')
    .option('--api-version <version>', 'avinode: X-Avinode-ApiVersion, sent when set')
    .option('--token-url <url>', 'OAuth 2.0 client credentials: the token endpoint')
    .option('--client-id <id>', 'OAuth 2.0 client credentials: the client id')
    .option('--client-secret <secret>', 'OAuth 2.0 client credentials: the client secret; "-" reads it from stdin')
    .option('--client-secret-expires-at <time>', 'OAuth 2.0: when the client secret expires (ISO 8601, as the marketplace said); Skyhook warns two weeks before')
    .option('--base-url <url>', "a further base URL the token may be sent to besides the API's (the scheduling product's host, say); repeat for more", collect);
}

/** What the credentials check said, for a person. */
const checked = (company: { credentials: { status: string; error: string | null } }) =>
  `credentials ${company.credentials.status}${company.credentials.error ? `: ${company.credentials.error}` : ''}`;

// Over 80 lines on purpose: a registrar, one command after another, each a few lines; the helpers it shares sit above it.
export function registerCompanies(program: Command): void {
  const companies = group(program, 'companies', 'companies (tenants) and their marketplace API connection');

  dataCommand(
    withConnectionOptions(
      subcommand(companies, 'create', 'add a company with its marketplace API base URL and credentials (stored encrypted, never shown), then check them with one harmless call')
        .option('--name <name>', 'the company name (required)')
        .option('--api-base-url <url>', 'the marketplace API base URL, e.g. https://sandbox.example.com/api (required)')
        .option('--api-token <token>', 'the company API token (required unless a bearer connection has OAuth client credentials); "-" reads it from stdin, keeping it out of the shell history'),
    ),
    {
      access: 'write',
      input: async (cmd, flags: JsonFlag & ConnectionFlags & { name?: string; apiBaseUrl?: string }) => {
        const secret = await secrets(flags);
        return validate(cmd, s.createCompanyBody, { name: flags.name, apiBaseUrl: flags.apiBaseUrl, apiToken: secret.apiToken, connection: connectionOf(flags, secret) });
      },
      run: (svc, body, audit) => svc.companies.create(body, audit),
      output: s.companyViewSchema,
      human: (company) => `created company ${company.id}; ${checked(company)}\n${keyValues(company)}`,
    },
  );

  dataCommand(addPageOptions(subcommand(companies, 'list', 'list companies (oldest id first)')), {
    access: 'read',
    input: (cmd, flags: PageFlags) => validate(cmd, s.listQuery, { limit: flags.limit, cursor: flags.cursor }),
    run: (svc, query) => svc.companies.list(query),
    output: s.page(s.companyViewSchema),
    human: (page) =>
      listing(page, 'companies', ['ID', 'NAME', 'STATE', 'FETCHES', 'PARKED', 'API BASE URL', 'PROFILE', 'CREATED', 'WARNINGS'], (c) => [
        c.id,
        c.name,
        `${c.state.status}${whenText(c.state)}`,
        `${c.fetches.running}/${c.fetches.limit}`,
        String(c.fetches.parked),
        c.apiBaseUrl,
        c.connection.profile,
        shortTime(c.createdAt),
        c.connectionWarnings.map((w) => w.kind).join(',') || '-',
      ]),
  });

  dataCommand(subcommand(companies, 'get', 'show one company', 'companyId'), {
    access: 'read',
    input: (cmd, _flags, [companyId]) => validate(cmd, s.companyIdParams, { companyId }),
    run: (svc, params) => svc.companies.get(params.companyId),
    output: s.companyViewSchema,
    human: (company) => [...company.connectionWarnings.map((w) => `warning: ${w.message}`), keyValues(company)].join('\n'),
  });

  dataCommand(
    withConnectionOptions(
      subcommand(companies, 'update', 'rename a company, set its fetch limit, or replace its credentials: new ones lift a pause (its waiting notifications resume) and are checked with one harmless call', 'companyId')
        .option('--name <name>', 'the new name')
        .option('--fetch-concurrency <n>', 'at most this many of its fetches at once across every worker; "default" for COMPANY_FETCH_CONCURRENCY')
        .option('--api-token <token>', 'the new API token; "-" reads it from stdin'),
    ),
    {
      access: 'write',
      input: async (cmd, flags: JsonFlag & ConnectionFlags & { name?: string; fetchConcurrency?: string }, [companyId]) => {
        const secret = await secrets(flags);
        const connection = connectionOf(flags, secret);
        if (flags.name === undefined && secret.apiToken === undefined && connection === undefined && flags.fetchConcurrency === undefined) {
          throw new UsageError(['give --name, --fetch-concurrency, --api-token or a connection (--profile and its flags)']);
        }
        const limit = flags.fetchConcurrency;
        const fetchConcurrency = limit === undefined ? undefined : limit === 'default' ? null : /^\d+$/.test(limit) ? Number(limit) : limit;
        return validateBoth(cmd, [s.companyIdParams, { companyId }], [s.patchCompanyBody, { name: flags.name, apiToken: secret.apiToken, connection, fetchConcurrency }]);
      },
      run: (svc, [params, patch], audit) => svc.companies.update(params.companyId, patch, audit),
      output: s.companyViewSchema,
      human: (company, [, patch]) => `updated company ${company.id}${patch.apiToken !== undefined || patch.connection !== undefined ? `; ${checked(company)}` : ''}\n${keyValues(company)}`,
    },
  );

  dataCommand(
    subcommand(companies, 'delete', 'delete a company with everything of it, after deactivating its webhook settings on the marketplace', 'companyId').option('--force', FORCE_HELP),
    {
      access: 'write',
      input: (cmd, flags: JsonFlag & { force?: boolean }, [companyId]) => ({ ...validate(cmd, s.companyIdParams, { companyId }), force: flags.force }),
      run: (svc, input, audit) => svc.deletions.deleteCompany(input.companyId, { force: input.force }, audit),
      output: s.deletedSchema,
      human: (deleted, input) => `deleted company ${input.companyId}${remaining(deleted)}`,
    },
  );
}
