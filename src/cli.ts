/** The `skyhook` command: operators' entry to every role and tool. Each sub-command has --help. */
import { createRequire } from 'node:module';
import { Command, InvalidArgumentError } from 'commander';
import { registerAdminCommands } from './admin/cli/index.js';
import { registerSimulatorCommands } from './simulator/index.js';

// package.json sits beside src/ in a checkout and beside dist/ in the image.
const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

const program = new Command('skyhook')
  .description('Skyhook: receives the marketplace webhook notifications of many companies, fetches and stores what changed.')
  .version(version, '-V, --version', 'print the version')
  // Before the command (`skyhook --url <url> notifications list`): a command's own --url (a destination's) stays its own.
  .enablePositionalOptions()
  .option('--url <url>', "run the admin commands against a running Skyhook's admin API (or SKYHOOK_URL), with the key in SKYHOOK_API_KEY; without it they run here, on DATABASE_URL");

program
  .command('start')
  .description('run Skyhook (the ROLE environment variable picks api, worker or all); migrates the database first')
  .action(async () => {
    await import('./main.js');
  });

program
  .command('migrate')
  .description('create and migrate the database (DATABASE_URL), then exit: run it as the database owner when Skyhook runs as a role that may not change the schema')
  .action(async () => {
    const { DatabaseStartError, prepareDatabase } = await import('./db/migrate.js');
    const { loadConfig } = await import('./config.js');
    const url = loadConfig(process.env).databaseUrl;
    await prepareDatabase(url).then(
      () => process.stdout.write('the database is migrated\n'),
      (err: unknown) => {
        process.stderr.write(`skyhook: ${err instanceof DatabaseStartError ? err.message : String(err)}\n`);
        process.exitCode = 1;
      },
    );
  });

program
  .command('demo')
  .description("start the simulator and Skyhook together, run two demo companies through a burst of events, deliver them to each company's receiver, print a summary")
  .option('--events <n>', 'events per company', (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > 100_000) throw new InvalidArgumentError('--events must be a whole number from 1 to 100000');
    return n;
  }, 600)
  .option('--keep', 'leave the simulator and Skyhook running after the summary, to explore the operator console (Ctrl-C stops them)')
  .action(async (opts: { events: number; keep?: boolean }) => {
    const { DemoCannotStart, runDemo } = await import('./demo.js');
    const result = await runDemo({ events: opts.events, keep: opts.keep }).catch((err: unknown) => {
      if (!(err instanceof DemoCannotStart)) throw err;
      process.stderr.write(`skyhook demo: cannot start.\n${err.lines.join('\n')}\n`);
      return undefined;
    });
    if (!result) return void (process.exitCode = 1);
    const everyDeliveryVerified = result.delivered === result.events && result.verified === result.delivered;
    process.exitCode = result.processed + result.failed === result.fired && everyDeliveryVerified ? 0 : 1;
  });

registerSimulatorCommands(program);
registerAdminCommands(program);

await program.parseAsync(process.argv);
