/** The `skyhook` command: operators' entry to every role and tool. Each sub-command has --help. */
import { Command } from 'commander';
import { registerSimulatorCommands } from './simulator/index.js';

const program = new Command('skyhook')
  .description('Skyhook: receives the marketplace webhook notifications of many companies, fetches and stores what changed.')
  .showHelpAfterError();

program
  .command('start')
  .description('run Skyhook (the ROLE environment variable picks api, worker or all); migrates the database first')
  .action(async () => {
    await import('./main.js');
  });

registerSimulatorCommands(program);

await program.parseAsync(process.argv);
