/**
 * The marketplace API (under /api): every call needs a company's credentials, checked as its profile
 * requires (auth.ts); every answer is an envelope. The OAuth token endpoint sits beside it, outside that check.
 */
import type { FastifyError, FastifyPluginAsync } from 'fastify';
import { actAsAccountHeader, HEADERS } from '../marketplace/connection.js';
import { envelope } from '../marketplace/contract.js';
import { inErrorShape, notFound } from './answers.js';
import { authenticate } from './auth.js';
import { declineRoutes } from './decline-routes.js';
import { leadRoutes } from './lead-routes.js';
import { oauthRoutes } from './oauth-routes.js';
import { quoteRoutes } from './quote-routes.js';
import { resourceRoutes } from './resource-routes.js';
import type { Simulation } from './simulation.js';
import { headerOf } from './state.js';
import { webhookSettingsRoutes } from './webhook-routes.js';

/** The envelope for every answer of a base URL of the marketplace: its 404 and Fastify's own refusals. */
async function inEnvelopes(api: Parameters<FastifyPluginAsync>[0], simulation: Simulation): Promise<void> {
  // First, so the routes below and the 401, 404 and error answers pass through it; only when asked, as it costs every answer a hook.
  const { errorShape } = simulation.settings;
  if (errorShape !== 'seed') api.addHook('preSerialization', async (_request, _reply, payload) => inErrorShape(errorShape, payload));
  api.setNotFoundHandler((_request, reply) => reply.code(404).send(notFound('route')));
  // Fastify's own refusals (malformed JSON, wrong content type, body too large) in the envelope too.
  api.setErrorHandler((error: FastifyError, _request, reply) => {
    const status = error.statusCode ?? 500;
    const message = status < 500 ? error.message : 'internal error';
    return reply.code(status).send(envelope(null, [{ code: error.code ?? 'internal', message }]));
  });
}

/** The routes that need a company's credentials, checked and logged as every call of the API is. */
function authenticated(simulation: Simulation, plugins: FastifyPluginAsync<{ simulation: Simulation }>[]): FastifyPluginAsync {
  return async (scope) => {
    scope.addHook('onRequest', authenticate(simulation.state));
    // After the answer, so refused calls are recorded with the status really sent, and the profile headers they carried.
    scope.addHook('onResponse', async (request, reply) => {
      const company = simulation.state.companyByAuthorization(request.headers.authorization);
      const header = (name: string) => headerOf(request.headers, name) ?? null;
      simulation.ledger.logs.apiCalls.push({
        method: request.method,
        path: request.url,
        companyId: company?.id ?? null,
        status: reply.statusCode,
        product: header(HEADERS.avinodeProduct),
        apiVersion: header(HEADERS.avinodeApiVersion),
        actAsAccount: header(actAsAccountHeader(company?.profile ?? 'bearer')),
        at: new Date().toISOString(),
      });
    });
    for (const plugin of plugins) await scope.register(plugin, { simulation });
  };
}

export const apiRoutes: FastifyPluginAsync<{ simulation: Simulation }> = async (api, { simulation }) => {
  await inEnvelopes(api, simulation);
  await api.register(oauthRoutes, { simulation });
  await api.register(authenticated(simulation, [webhookSettingsRoutes, leadRoutes, quoteRoutes, declineRoutes, resourceRoutes]));
};

/**
 * The scheduling product's host (SPEC §14), as a second base URL of the simulator: its resources only, for the
 * same credentials. A company's Skyhook connection must list it (`connection.baseUrls`) for them to be fetched.
 */
export const schedulingRoutes: FastifyPluginAsync<{ simulation: Simulation }> = async (api, { simulation }) => {
  await inEnvelopes(api, simulation);
  await api.register(authenticated(simulation, [resourceRoutes]));
};
