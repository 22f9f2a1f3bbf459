/** The marketplace simulator: the service side of the marketplace API, in memory, for development and tests. */
export { startSimulator } from './server.js';
export { registerSimulatorCommands } from './command.js';
export { SimulatorInputError } from './errors.js';
export type {
  CompanyAccount,
  CompanyFaults,
  CompanyFaultsPatch,
  DeliveryStatus,
  EmittedNotification,
  ErrorShape,
  Faults,
  FetchRecord,
  FireRequest,
  LeadRecord,
  NotificationRecord,
  QuoteRecord,
  DeclineRecord,
  AnswerRoute,
  ResourceRateLimit,
  ResourceRecord,
  ScriptedResponse,
  Simulator,
  SimulatorOptions,
  SimulatorReport,
} from './types.js';
