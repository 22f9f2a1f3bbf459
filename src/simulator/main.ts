/** Standalone entry point: `tsx src/simulator/main.ts simulator [--port 4010] ...` or `... simulator fire ...`. */
import { Command } from 'commander';
import { registerSimulatorCommands } from './command.js';

const program = new Command('skyhook').description('Skyhook marketplace simulator');
registerSimulatorCommands(program);
await program.parseAsync();
