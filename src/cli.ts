/** The `skyhook` command: operators' entry to every role and tool. Each sub-command has --help. */
import { Command, InvalidArgumentError } from 'commander';
import { registerAdminCommands } from './admin/cli.js';
import { registerSimulatorCommands } from './simulator/index.js';

const program = new Command('skyhook')
  .description('Skyhook: receives the marketplace webhook notifications of many companies, fetches and stores what changed.');

program
  .command('start')
  .description('run Skyhook (the ROLE environment variable picks api, worker or all); migrates the database first')
  .action(async () => {
    await import('./main.js');
  });

program
  .command('demo')
  .description('start the simulator and Skyhook together, run two demo companies through a burst of events, print a summary')
  .option('--events <n>', 'events per company', (v) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < 1 || n > 100_000) throw new InvalidArgumentError('--events must be a whole number from 1 to 100000');
    return n;
  }, 600)
  .action(async (opts: { events: number }) => {
    const { runDemo } = await import('./demo.js');
    const result = await runDemo({ events: opts.events });
    process.exitCode = result.processed + result.failed === result.fired ? 0 : 1;
  });

registerSimulatorCommands(program);
registerAdminCommands(program);

await program.parseAsync(process.argv);
