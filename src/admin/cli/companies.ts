/** `skyhook companies …`: companies (tenants) and their marketplace API connection. */
import type { Command } from 'commander';
import * as s from '../schemas.js';
import { addPageOptions, dataAction, group, JSON_HELP, readStdin, together, UsageError, validate, type JsonFlag, type PageFlags } from './command.js';
import { keyValues, listing, shortTime } from './output.js';

/** --force of the delete commands, and what a forced delete left active on the marketplace. */
export const FORCE_HELP = 'delete here even if the marketplace refuses to deactivate the webhook settings (they stay active there)';
export const remaining = (deleted: { remainingRemoteSettings: { remoteId: string; error: string }[] }) =>
  deleted.remainingRemoteSettings.map((r) => `\nstill active on the marketplace: setting ${r.remoteId} (${r.error}); deactivate it there`).join('');

/** The token flag: `-` reads it from stdin, keeping it out of the shell history. */
const token = async (value: string | undefined) => (value === '-' ? (await readStdin()).trim() : value);

export function registerCompanies(program: Command): void {
  const companies = group(program, 'companies', 'companies (tenants) and their marketplace API connection');

  companies
    .command('create')
    .description('add a company with its marketplace API base URL and API token (the token is stored encrypted, never shown)')
    .option('--name <name>', 'the company name (required)')
    .option('--api-base-url <url>', 'the marketplace API base URL, e.g. https://sandbox.example.com/api (required)')
    .option('--api-token <token>', 'the company API token (required); "-" reads it from stdin, keeping it out of the shell history')
    .option('--json', JSON_HELP)
    .action(
      dataAction({
        access: 'write',
        input: async (cmd, flags: JsonFlag & { name?: string; apiBaseUrl?: string; apiToken?: string }) =>
          validate(cmd, s.createCompanyBody, { name: flags.name, apiBaseUrl: flags.apiBaseUrl, apiToken: await token(flags.apiToken) }),
        run: (svc, body) => svc.companies.create(body),
        output: s.companySchema,
        human: (company) => `created company ${company.id}\n${keyValues(company)}`,
      }),
    );

  addPageOptions(companies.command('list').description('list companies (oldest id first)'))
    .option('--json', JSON_HELP)
    .action(
      dataAction({
        access: 'read',
        input: (cmd, flags: PageFlags) => validate(cmd, s.listQuery, { limit: flags.limit, cursor: flags.cursor }),
        run: (svc, query) => svc.companies.list(query),
        output: s.page(s.companySchema),
        human: (page) => listing(page, 'companies', ['ID', 'NAME', 'API BASE URL', 'CONNECTION', 'CREATED'], (c) => [c.id, c.name, c.apiBaseUrl, c.connectionStatus, shortTime(c.createdAt)]),
      }),
    );

  companies
    .command('get')
    .description('show one company')
    .argument('<companyId>', 'the company id (a UUID)')
    .option('--json', JSON_HELP)
    .action(
      dataAction({
        access: 'read',
        input: (cmd, _flags, [companyId]) => validate(cmd, s.companyIdParams, { companyId }),
        run: (svc, params) => svc.companies.get(params.companyId),
        output: s.companySchema,
        human: (company) => keyValues(company),
      }),
    );

  companies
    .command('update')
    .description('rename a company or replace its API token (a new token also lifts an "unauthorized" pause)')
    .argument('<companyId>', 'the company id (a UUID)')
    .option('--name <name>', 'the new name')
    .option('--api-token <token>', 'the new API token; "-" reads it from stdin')
    .option('--json', JSON_HELP)
    .action(
      dataAction({
        access: 'write',
        input: async (cmd, flags: JsonFlag & { name?: string; apiToken?: string }, [companyId]) => {
          if (flags.name === undefined && flags.apiToken === undefined) throw new UsageError(['give --name or --api-token (or both)']);
          const apiToken = await token(flags.apiToken);
          return together(
            () => validate(cmd, s.companyIdParams, { companyId }),
            () => validate(cmd, s.patchCompanyBody, { name: flags.name, apiToken }),
          );
        },
        run: (svc, [params, patch]) => svc.companies.update(params.companyId, patch),
        output: s.companySchema,
        human: (company) => `updated company ${company.id}\n${keyValues(company)}`,
      }),
    );

  companies
    .command('delete')
    .description('delete a company with everything of it, after deactivating its webhook settings on the marketplace')
    .argument('<companyId>', 'the company id (a UUID)')
    .option('--force', FORCE_HELP)
    .option('--json', JSON_HELP)
    .action(
      dataAction({
        access: 'write',
        input: (cmd, flags: JsonFlag & { force?: boolean }, [companyId]) => ({ ...validate(cmd, s.companyIdParams, { companyId }), force: flags.force }),
        run: (svc, input) => svc.deletions.deleteCompany(input.companyId, { force: input.force }),
        output: s.deletedSchema,
        human: (deleted, input) => `deleted company ${input.companyId}${remaining(deleted)}`,
      }),
    );
}
