/**
 * The plumbing every admin command shares (SPEC §7): command groups, validation that names each bad flag or
 * field, opening the services, printing. Results go to stdout (short text, or with --json exactly the admin
 * API's JSON), errors to stderr. Exit codes: 0 done; 2 a usage error (a bad flag, argument or body file), one
 * line per bad field; 1 a failure while running (a Problem from a service, or the database unreachable).
 */
import { readFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import type { Command } from 'commander';
import { stoppedBy, type Audit, type AuditLog } from '../../access/audit.js';
import type { Actor } from '../../access/roles.js';
import type { z } from 'zod';
import { describeError } from '../../lib/error-reporter.js';
import { DatabaseStartError } from '../../db/migrate.js';
import { howToStart } from '../../lib/dependencies.js';
import { withoutPassword } from '../../lib/redact.js';
import { exitOnUsageError, USAGE_EXIT_CODE, UsageError } from '../../lib/cli-usage.js';
import { remoteServices, remoteTarget } from './remote.js';
import { decodeJsonBody } from '../../lib/json-body.js';
import { Problem } from '../../lib/problem.js';
import type { Services } from '../../services/index.js';
import type { AdminContext } from './context.js';
import { truncate } from './output.js';

const FAILURE_EXIT_CODE = 1;

export interface JsonFlag {
  json?: boolean;
}
export interface PageFlags extends JsonFlag {
  limit?: string;
  cursor?: string;
}

const JSON_HELP = 'print the JSON the admin API answers (one document on stdout)';

/** A command group (or a command of its own, as `listen`): commander's own usage errors (unknown option, missing argument) read like ours and exit 2. */
export function group(program: Command, name: string, description: string): Command {
  return (
    program
      .command(name)
      .description(description)
      // Set before the subcommands are added, so they inherit them.
      .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, 'skyhook: ')) })
      .showHelpAfterError('(add --help for usage)')
      .exitOverride(exitOnUsageError)
  );
}

/** The arguments of the commands, each described once. */
const ARGUMENTS = {
  companyId: 'the company id (a UUID)',
  webhookId: 'the webhook id (a UUID)',
  id: 'the notification id (a number)',
  destinationId: 'the destination id (a UUID)',
  deliveryId: 'the delivery id: a number, or its webhook-id (msg_<number>)',
  keyId: 'the key id (a UUID)',
};

/** A command of a group, with its description and its arguments (`<companyId>`, ...). */
export function subcommand(parent: Command, name: string, description: string, ...args: (keyof typeof ARGUMENTS)[]): Command {
  const cmd = parent.command(name).description(description);
  for (const arg of args) cmd.argument(`<${arg}>`, ARGUMENTS[arg]);
  return cmd;
}

export function addPageOptions(cmd: Command): Command {
  return cmd.option('--limit <n>', 'at most this many (1-500, default 50)').option('--cursor <cursor>', 'continue after the page that returned this nextCursor');
}

export { UsageError };

/** Runs a command: usage errors exit 2, problems and other failures exit 1; stderr for all of them. */
export async function execute(cmd: Command, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    process.exitCode = error instanceof UsageError ? USAGE_EXIT_CODE : FAILURE_EXIT_CODE;
    if (error instanceof UsageError) {
      for (const line of error.lines) console.error(`skyhook: ${line}`);
    } else if (error instanceof Problem) {
      console.error(`skyhook: ${error.detail ?? error.title} (${error.status} ${error.title})`);
      // A field the command takes as a flag is named as the flag (apiBaseUrl -> --api-base-url).
      const flags = flagNames(cmd);
      for (const e of error.extra.errors ?? []) console.error(`  ${flagOf(flags, e.field.split('.')) ?? e.field}: ${e.message}`);
    } else if (error instanceof DatabaseStartError && error.unavailable) {
      // Said as `npm run demo` says it: which one, where, and the command that starts it.
      const lines = howToStart([{ name: 'PostgreSQL', variable: 'DATABASE_URL', ...unreachableAt(error.url), why: describeError(error.cause) }]);
      for (const line of lines) console.error(line === '' ? '' : `skyhook: ${line}`);
    } else {
      console.error(`skyhook: ${describeError(error)}`);
    }
  }
}

/** Where a DATABASE_URL points, as howToStart names it. */
const unreachableAt = (url: string) => ({ address: `${new URL(url).hostname}:${new URL(url).port || 5432}`, url: withoutPassword(url) });

/**
 * What a command does to the database: `read` opens it as it is (a read needs no migration, nor the right
 * to run one); `write` migrates it first, as `skyhook start` does.
 */
export type Access = 'read' | 'write';

/** Where the command runs: a Skyhook's admin API (`skyhook --url <url> …` or SKYHOOK_URL, with SKYHOOK_API_KEY), or null for here, on the database. */
function remoteOf(cmd: Command): ReturnType<typeof remoteTarget> {
  let root = cmd;
  while (root.parent) root = root.parent;
  return remoteTarget((root.opts() as { url?: string }).url, process.env);
}

/** What a command that needs the database's own context (a live tail) meets when it runs against an admin API. */
const REMOTE_CONTEXT = new Proxy({} as AdminContext, {
  get: () => {
    throw new UsageError(["this command runs only where Skyhook's database is: run it without --url and SKYHOOK_URL"]);
  },
});

/**
 * Runs fn on the services: against the admin API when the command is run with --url (or SKYHOOK_URL), else
 * on the admin context (same environment as `skyhook start`), which is always closed after.
 */
export async function withServices<T>(access: Access, fn: (services: Services, context: AdminContext) => Promise<T>, cmd: Command): Promise<T> {
  const remote = remoteOf(cmd);
  if (remote) return fn(remoteServices(remote), REMOTE_CONTEXT);
  // Imported here, so `skyhook --help` and the other commands do not load the database and queue code.
  const { openAdminContext } = await import('./context.js');
  const context = await openAdminContext(process.env, { migrate: access === 'write' });
  try {
    return await fn(context.services, context);
  } finally {
    await context.close();
  }
}

/** A view with the names of its companies beside it, for `human` to print (the `output` schema leaves them out of --json). */
export async function withNames<T extends object>(services: Services, view: T, companyIds: string[]): Promise<T & { names: Map<string, string> }> {
  return { ...view, names: await services.companies.names(companyIds) };
}

/**
 * A data command's --json flag (its last) and its action, the pattern every such command follows: its input
 * validated (a usage error, before anything is opened), run on the services, and printed (the admin API's
 * JSON with --json, else `human`). Commander calls the action with the arguments, then the flags, then the command.
 */
export function dataCommand<Input, Output extends Printed, Printed, Flags extends JsonFlag = JsonFlag>(
  command: Command,
  spec: {
    access: Access;
    input: (cmd: Command, flags: Flags, args: string[]) => Input | Promise<Input>;
    /**
     * What it answers may hold more than --json prints (company names, say): `output` keeps its own fields.
     * A `write` command's change writes `audit`, its entry (against an admin API, the server writes it).
     */
    run: (services: Services, input: Input, audit: Audit) => Promise<Output>;
    output: z.ZodType<Printed>;
    human: (output: Output, input: Input, flags: Flags) => string;
  },
): void {
  command.option('--json', JSON_HELP).action((...received: unknown[]) => {
    const flags = received.at(-2) as Flags;
    const args = received.slice(0, -2) as string[];
    return execute(command, async () => {
      const input = await spec.input(command, flags, args);
      // Against an admin API the server writes the audit entry, as the key's.
      const local = remoteOf(command) === null;
      const output = await withServices(
        spec.access,
        (services) =>
          spec.access === 'write' && local ? auditedRun(services.audit, command, flags, args, (audit) => spec.run(services, input, audit)) : spec.run(services, input, NO_ENTRY_HERE),
        command,
      );
      process.stdout.write(flags.json ? `${JSON.stringify(spec.output.encode(output), null, 2)}\n` : `${spec.human(output, input, flags)}\n`);
    });
  });
}

/** Who runs the CLI locally: the operating system's user (SPEC §10.1: the local CLI is audited as the local user). */
function localActor(): Actor {
  let user = 'unknown';
  try {
    user = userInfo().username;
  } catch (err) {
    // No user name for this uid (a container's): said once, and the entry names `cli:unknown`.
    process.stderr.write(`skyhook: note: the local user name could not be read (${describeError(err)}): the audit log names cli:unknown\n`);
  }
  return { principal: { kind: 'local', id: null, name: `cli:${user}`, role: 'admin', companyId: null }, address: null };
}

/**
 * What a command is given when it writes no entry here: a read command (a change through it is a defect: give
 * the command access write), or any command against an admin API (the server writes the entry; the remote
 * services never use this one).
 */
const writesNoEntry = () => Promise.reject(new Error('this command writes no audit entry here: a read command makes no change'));
const NO_ENTRY_HERE: Audit = { by: 'cli', change: writesNoEntry, call: writesNoEntry };

/**
 * A change made by a command, in the audit log: its entry opened here (the command, its arguments, as the
 * local user), written by the change (`run`'s services), or here once it ends when the change was refused
 * or failed before it wrote. A refusal names the flags given (their names only).
 */
export async function auditedRun<T>(log: Pick<AuditLog, 'open'>, cmd: Command, flags: JsonFlag, args: string[], run: (audit: Audit) => Promise<T>): Promise<T> {
  const names = cmd.registeredArguments.map((a) => a.name());
  const { companyId, ...targets } = Object.fromEntries(names.map((name, i) => [name, args[i] ?? '']));
  const sent = Object.entries(flags as Record<string, unknown>).filter(([k, v]) => k !== 'json' && v !== undefined).map(([k]) => k);
  const flagCompany = (flags as { companyId?: unknown }).companyId;
  const subject = {
    action: `skyhook ${[cmd.parent?.name(), cmd.name()].filter(Boolean).join(' ')}`,
    companyId: companyId ?? (typeof flagCompany === 'string' ? flagCompany : null),
    targets,
  };
  const note = (err: unknown) => process.stderr.write(`skyhook: note: ${describeError(err)}\n`);
  const audit = log.open(localActor(), subject, note);
  let output: T;
  try {
    output = await run(audit);
  } catch (error) {
    const { outcome, details } = stoppedBy(error);
    await audit.settle(outcome, { status: details.status, sent });
    throw error;
  }
  await audit.settle('ok', { sent });
  return output;
}

/** The comma-separated flag as a list (undefined when the flag is absent). */
export const list = (value: string | undefined): string[] | undefined => value?.split(',').map((v) => v.trim()).filter(Boolean);

/** "true"/"false" as booleans; anything else is passed on for the schema to refuse by name. */
export const booleanText = (value: string | undefined): boolean | string | undefined => (value === 'true' ? true : value === 'false' ? false : value);

/** Numeric text as a number; anything else is passed on for the schema to refuse by name. */
export const numberText = (value: string | undefined): number | string | undefined => (value !== undefined && value.trim() !== '' && Number.isFinite(Number(value)) ? Number(value) : value);

/** The command's options by the field they fill: apiBaseUrl -> --api-base-url. */
const flagNames = (cmd: Command): Map<string, string> => new Map(cmd.options.map((o) => [o.attributeName(), o.long ?? o.flags]));

/**
 * The flag that fills a field: the deepest key of its path that is a flag (`apiToken` -> --api-token,
 * `connection.authToken` -> --auth-token, `filter.resourceTypes.0` -> --resource-types, `rotateSecret.graceSeconds` -> --grace-seconds).
 */
const flagOf = (flags: Map<string, string>, path: PropertyKey[]): string | undefined =>
  path.map(String).reverse().map((key) => flags.get(key)).find((flag) => flag !== undefined);

/** Runs two validations and reports the bad fields of both at once. */
export function together<A, B>(first: () => A, second: () => B): [A, B] {
  const lines: string[] = [];
  const attempt = <T>(fn: () => T): T | undefined => {
    try {
      return fn();
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      lines.push(...error.lines);
      return undefined;
    }
  };
  const a = attempt(first);
  const b = attempt(second);
  if (lines.length > 0) throw new UsageError(lines);
  return [a as A, b as B];
}

/** Validates a command's arguments and its flags, each as validate does, reporting the bad ones of both at once. */
export function validateBoth<P extends z.ZodType, F extends z.ZodType>(cmd: Command, args: [P, Record<string, unknown>], flags: [F, Record<string, unknown>]): [z.output<P>, z.output<F>] {
  return together(() => validate(cmd, ...args), () => validate(cmd, ...flags));
}

/** Validates flags and arguments: each issue named by its flag (`--event-types`) or argument (`<companyId>`). */
export function validate<S extends z.ZodType>(cmd: Command, schema: S, input: Record<string, unknown>): z.output<S> {
  const flags = flagNames(cmd);
  const args = new Set(cmd.registeredArguments.map((a) => a.name()));
  const name = (path: PropertyKey[]): string => {
    const head = String(path[0] ?? '');
    return args.has(head) ? `<${head}>` : (flagOf(flags, path) ?? path.map(String).join('.'));
  };
  return parseOrThrow(schema, input, name);
}

/** Validates a JSON body file: each issue named by its field path, e.g. `inquiryLift.0.emptyLegId`. */
export function validateBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  return parseOrThrow(schema, body, (path) => (path.length > 0 ? path.map(String).join('.') : 'the body'));
}

function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, name: (path: PropertyKey[]) => string): z.output<S> {
  const result = schema.safeParse(input, { error: issueMessage });
  if (result.success) return result.data;
  const lines = result.error.issues.flatMap((issue) =>
    issue.code === 'unrecognized_keys' ? issue.keys.map((key) => `${name([...issue.path, key])} is not a known field`) : [`${name(issue.path)} ${issue.message}`],
  );
  throw new UsageError([...new Set(lines)]);
}

const EXPECTED: Record<string, string> = {
  string: 'text',
  number: 'a number',
  int: 'a whole number',
  boolean: 'true or false',
  array: 'an array',
  object: 'an object',
};
const FORMATS: Record<string, string> = { uuid: 'a UUID', email: 'an e-mail address', url: 'a URL', datetime: 'an ISO date-time' };

/**
 * Messages worded to follow a field name ("--name is required"), for issues whose schema gives no
 * message of its own (schema messages, such as "is required for an empty leg lead", take precedence).
 */
function issueMessage(issue: z.core.$ZodRawIssue): string | undefined {
  switch (issue.code) {
    case 'invalid_type':
      return issue.input === undefined ? 'is required' : `must be ${EXPECTED[issue.expected] ?? issue.expected}${got(issue.input)}`;
    case 'invalid_value':
      return `must be ${issue.values.length === 1 ? String(issue.values[0]) : `one of ${issue.values.map(String).join(', ')}`}${got(issue.input)}`;
    case 'invalid_format':
      return `must be ${FORMATS[issue.format] ?? `a valid ${issue.format}`}${got(issue.input)}`;
    case 'too_small': {
      const min = Number(issue.minimum);
      if (issue.origin === 'string') return min <= 1 ? 'must not be empty' : `must have at least ${min} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return min <= 1 ? 'must have at least one item' : `must have at least ${min} items`;
      return `must be ${issue.inclusive === false ? `more than ${min}` : `${min} or more`}${got(issue.input)}`;
    }
    case 'too_big': {
      const max = Number(issue.maximum);
      if (issue.origin === 'string') return `must have at most ${max} characters`;
      if (issue.origin === 'array' || issue.origin === 'set') return `must have at most ${max} items`;
      return `must be ${issue.inclusive === false ? `less than ${max}` : `${max} or less`}${got(issue.input)}`;
    }
    case 'unrecognized_keys':
      return 'is not a known field';
    default:
      return undefined;
  }
}

/** ` (got "x")` for a short scalar input, so the operator sees what was refused. */
function got(input: unknown): string {
  if (typeof input === 'string') return ` (got ${JSON.stringify(truncate(input, 60))})`;
  if ((typeof input === 'number' && Number.isFinite(input)) || typeof input === 'boolean') return ` (got ${String(input)})`;
  return '';
}

/** A file, or stdin for "-", as JSON the admin API would accept (decodeJsonBody). Failures are usage errors naming --file. */
export async function readJsonFile(path: string | undefined): Promise<unknown> {
  if (path === undefined) throw new UsageError(['--file is required (a JSON file, or - for stdin)']);
  const source = path === '-' ? 'stdin' : path;
  let raw: Buffer;
  try {
    raw = path === '-' ? await readStdin() : await readFile(path);
  } catch (error) {
    throw new UsageError([`--file: cannot read ${source}: ${describeError(error)}`]);
  }
  try {
    return decodeJsonBody(raw);
  } catch (error) {
    if (error instanceof Problem) throw new UsageError([`--file: ${source}: ${error.detail ?? error.title}`]);
    throw error;
  }
}

export async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks);
}
