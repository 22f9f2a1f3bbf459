/** The marketplace simulator: the service side of the marketplace API, in memory, for development and tests. */
export { startSimulator } from './server.js';
export { registerSimulatorCommands } from './command.js';
export { SimulatorInputError } from './errors.js';
/** Its public shapes: options, control inputs, the report. */
export type * from './types.js';
