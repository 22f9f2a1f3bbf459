/** Starts the simulator: its own Fastify server, with the marketplace API and the control routes. */
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { z } from 'zod';
import { MAX_QUOTE_BODY_BYTES } from '../marketplace/quotes.js';
import { apiRoutes } from './api-routes.js';
import { CONTROL_PREFIX, controlRoutes } from './control-routes.js';
import { parseInput } from './errors.js';
import { applyFaults, faultsPatch, NO_FAULTS } from './faults.js';
import { Simulation } from './simulation.js';
import { API_PREFIX } from './state.js';
import { ERROR_SHAPES, type Simulator, type SimulatorOptions } from './types.js';

export const DEFAULT_HOST = '127.0.0.1';

const simulationSettings = z.object({
  // Checked before listening, so a bad value leaves no server behind; kept as its origin.
  publicUrl: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .transform((url) => new URL(url).origin)
    .optional(),
  timeScale: z.number().positive().finite().default(1),
  replyTimeoutMs: z.number().int().positive().default(10_000),
  deliveryConcurrency: z.number().int().positive().default(64),
  historyLimit: z.number().int().positive().default(100_000),
  faults: faultsPatch.default({}).transform((faults) => applyFaults(NO_FAULTS, faults)),
  errorShape: z.enum(ERROR_SHAPES).default('seed'),
  tokenLifetimeS: z.number().int().positive().max(86_400).default(60),
});

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const settings = parseInput(simulationSettings, options);
  const simulation = new Simulation(settings);
  for (const company of options.companies ?? []) simulation.addCompany(company);
  // The largest quote the shared schema accepts: Fastify's default body limit (1 MiB) refuses quotes with attachments.
  const app = Fastify({ logger: options.logger ?? false, bodyLimit: MAX_QUOTE_BODY_BYTES });
  await app.register(apiRoutes, { prefix: API_PREFIX, simulation });
  await app.register(controlRoutes, { prefix: CONTROL_PREFIX, simulation });
  try {
    await app.listen({ port: options.port ?? 0, host: options.host ?? DEFAULT_HOST });
  } catch (error) {
    await app.close(); // e.g. the port is taken: leave nothing half-open behind
    throw error;
  }
  simulation.origin = settings.publicUrl ?? listeningOrigin(app.server.address());
  return {
    url: simulation.origin,
    apiBaseUrl: simulation.apiBaseUrl,
    addCompany: (company) => void simulation.addCompany(company),
    fire: async (request) => simulation.fire(request),
    setFaults: (faults) => void simulation.setFaults(faults),
    setCompanyFaults: (companyId, faults) => simulation.setCompanyFaults(companyId, faults),
    programResource: (href, responses) => simulation.programResource({ href, responses }),
    report: () => simulation.report(),
    resetCompany: (companyId) => simulation.resetCompany(companyId),
    revokeTokens: (companyId) => simulation.revokeTokens(companyId),
    idle: () => simulation.deliveries.idle(),
    stop: async () => {
      simulation.deliveries.stop();
      await app.close();
    },
  };
}

/** An origin a local client can reach: a wildcard listening address is reached through loopback. */
function listeningOrigin(address: AddressInfo | string | null): string {
  if (address === null || typeof address === 'string') throw new Error('the simulator must listen on a TCP port');
  const wildcards: Record<string, string> = { '0.0.0.0': '127.0.0.1', '::': '::1' };
  const host = wildcards[address.address] ?? address.address;
  return `http://${address.family === 'IPv6' ? `[${host}]` : host}:${address.port}`;
}
