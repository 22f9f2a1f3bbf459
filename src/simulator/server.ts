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

/**
 * What startSimulator reads of its options (types.ts SimulatorOptions): checked before it listens, so a bad
 * value leaves no server behind.
 */
export const simulationSettings = z.object({
  /**
   * The origin other processes reach the simulator at (e.g. `http://simulator:4010` in docker compose); hrefs
   * and the API base URL use it. Default: the listening address. Kept as its origin.
   */
  publicUrl: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .transform((url) => new URL(url).origin)
    .optional(),
  /** 1 = real time; 0.001 compresses the 48 h give-up to 172.8 s and the backoffs likewise. */
  timeScale: z.number().positive().finite().default(1),
  /** A reply slower than this counts as undelivered. */
  replyTimeoutMs: z.number().int().positive().default(10_000),
  deliveryConcurrency: z.number().int().positive().default(64),
  /** How many of each record the report lists (the newest): every resource stays in the state and answers GETs. */
  historyLimit: z.number().int().positive().default(100_000),
  faults: faultsPatch.default({}).transform((faults) => applyFaults(NO_FAULTS, faults)),
  /**
   * The error entries of its envelopes: `seed` `{code, message, field}`, the seed's assumption, or `titled`
   * `{title, code, path}`, the real marketplace's (SPEC §14). Scripted bodies are sent as given.
   */
  errorShape: z.enum(ERROR_SHAPES).default('seed'),
  /** Seconds an access token from the token endpoint lives: short, so refreshes happen. */
  tokenLifetimeS: z.number().int().positive().max(86_400).default(60),
});

export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const settings = parseInput(simulationSettings, options);
  // The largest quote the shared schema accepts: Fastify's default body limit (1 MiB) refuses quotes with attachments.
  const app = Fastify({ logger: options.logger ?? false, bodyLimit: MAX_QUOTE_BODY_BYTES });
  const simulation = new Simulation(settings, app);
  for (const company of options.companies ?? []) simulation.addCompany(company);
  await app.register(apiRoutes, { prefix: API_PREFIX, simulation });
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
