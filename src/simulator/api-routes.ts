/** The marketplace API (under /api): every call needs a company's token; every answer is an envelope. */
import type { FastifyError, FastifyPluginAsync } from 'fastify';
import { envelope } from '../marketplace/contract.js';
import { inErrorShape, notFound } from './answers.js';
import { authenticate } from './auth.js';
import { leadRoutes } from './lead-routes.js';
import { quoteRoutes } from './quote-routes.js';
import { resourceRoutes } from './resource-routes.js';
import type { Simulation } from './simulation.js';
import { webhookSettingsRoutes } from './webhook-routes.js';

export const apiRoutes: FastifyPluginAsync<{ simulation: Simulation }> = async (api, { simulation }) => {
  // First, so the routes below and the 401, 404 and error answers pass through it; only when asked, as it costs every answer a hook.
  if (simulation.errorShape !== 'seed') api.addHook('preSerialization', async (_request, _reply, payload) => inErrorShape(simulation.errorShape, payload));
  api.addHook('onRequest', authenticate(simulation.state));
  api.setNotFoundHandler((_request, reply) => reply.code(404).send(notFound('route')));
  // Fastify's own refusals (malformed JSON, wrong content type, body too large) in the envelope too.
  api.setErrorHandler((error: FastifyError, _request, reply) => {
    const status = error.statusCode ?? 500;
    const message = status < 500 ? error.message : 'internal error';
    return reply.code(status).send(envelope(null, [{ code: error.code ?? 'internal', message }]));
  });
  await api.register(webhookSettingsRoutes, { simulation });
  await api.register(leadRoutes, { simulation });
  await api.register(quoteRoutes, { simulation });
  await api.register(resourceRoutes, { simulation });
};
