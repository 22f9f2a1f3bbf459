/** The marketplace simulator: the service side of the marketplace API, in memory, for development and tests. */
export { startSimulator } from './server.js';
export { registerSimulatorCommands } from './command.js';
export { SimulatorInputError } from './errors.js';
/** Its public shapes: options, control inputs, the records of its report. */
export type * from './types.js';
/** The report (GET /_sim/report), as the ledger tells it. */
export type { SimulatorReport } from './ledger.js';
/** A fired event; the running simulator that startSimulator answers: the simulation itself, whose operations the control routes call too. */
export type { EmittedNotification, Simulation as Simulator } from './simulation.js';
