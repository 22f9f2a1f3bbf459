/** Starts the simulator: its own Fastify server, with the marketplace API and the control routes. */
import type { AddressInfo } from 'node:net';
import Fastify from 'fastify';
import { MAX_QUOTE_BODY_BYTES } from '../marketplace/quotes.js';
import { apiRoutes, schedulingRoutes } from './api-routes.js';
import { CONTROL_PREFIX, controlRoutes } from './control-routes.js';
import { parseInput } from './errors.js';
import { simulationSettings } from './schemas.js';
import { Simulation } from './simulation.js';
import { API_PREFIX, SCHEDULING_PREFIX } from './state.js';
import type { SimulatorOptions } from './types.js';

export const DEFAULT_HOST = '127.0.0.1';

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulation> {
  const settings = parseInput(simulationSettings, options);
  // The largest quote the shared schema accepts: Fastify's default body limit (1 MiB) refuses quotes with attachments.
  const app = Fastify({ logger: options.logger ?? false, bodyLimit: MAX_QUOTE_BODY_BYTES });
  const simulation = new Simulation(settings, app);
  for (const company of options.companies ?? []) simulation.addCompany(company);
  await app.register(apiRoutes, { prefix: API_PREFIX, simulation });
  await app.register(schedulingRoutes, { prefix: SCHEDULING_PREFIX, simulation });
  await app.register(controlRoutes, { prefix: CONTROL_PREFIX, simulation });
  try {
    await app.listen({ port: options.port ?? 0, host: options.host ?? DEFAULT_HOST });
  } catch (error) {
    await app.close(); // e.g. the port is taken: leave nothing half-open behind
    throw error;
  }
  simulation.url = settings.publicUrl ?? listeningOrigin(app.server.address());
  return simulation;
}

/** An origin a local client can reach: a wildcard listening address is reached through loopback. */
function listeningOrigin(address: AddressInfo | string | null): string {
  if (address === null || typeof address === 'string') throw new Error('the simulator must listen on a TCP port');
  const wildcards: Record<string, string> = { '0.0.0.0': '127.0.0.1', '::': '::1' };
  const host = wildcards[address.address] ?? address.address;
  return `http://${address.family === 'IPv6' ? `[${host}]` : host}:${address.port}`;
}
