/**
 * The simulator's control surface (under /_sim), a local tool without authentication: fire events, add
 * companies, wipe a company's settings or revoke its access tokens, set faults (global, or one company's),
 * script resource answers, read the report.
 */
import type { FastifyError, FastifyPluginAsync } from 'fastify';
import { SimulatorInputError } from './errors.js';
import type { Simulation } from './simulation.js';
import type { CompanyAccount, CompanyFaultsPatch, Faults, FireRequest, ResourceProgram } from './types.js';

export const CONTROL_PREFIX = '/_sim';

export const controlRoutes: FastifyPluginAsync<{ simulation: Simulation }> = async (control, { simulation }) => {
  control.setErrorHandler((error: FastifyError, _request, reply) => {
    const status = error instanceof SimulatorInputError ? 400 : (error.statusCode ?? 500);
    return reply.code(status).send({ error: error.message });
  });

  // The Body types say what a caller should send, not what was checked: each operation validates its input.

  control.post<{ Body: FireRequest }>('/events', async (request) => ({ notifications: await simulation.fire(request.body) }));

  control.post<{ Body: CompanyAccount }>('/companies', async (request, reply) => {
    const { id, name } = simulation.addCompany(request.body);
    return reply.code(201).send({ id, name });
  });

  control.post<{ Params: { id: string } }>('/companies/:id/reset', async (request) => simulation.resetCompany(request.params.id));

  control.post<{ Params: { id: string } }>('/companies/:id/revoke-tokens', async (request) => simulation.revokeTokens(request.params.id));

  control.post<{ Params: { id: string }; Body: { days?: unknown } }>('/companies/:id/age-connection', async (request, reply) => {
    const days = request.body?.days;
    if (typeof days !== 'number' || !Number.isFinite(days) || days < 0) return reply.code(400).send({ error: 'days: must be a number of days, 0 or more' });
    return simulation.ageConnection(request.params.id, days);
  });

  control.post<{ Params: { id: string } }>('/companies/:id/expire-client-secret', async (request) => simulation.expireClientSecret(request.params.id));

  control.put<{ Body: Partial<Faults> }>('/faults', async (request) => simulation.setFaults(request.body));

  control.put<{ Params: { id: string }; Body: CompanyFaultsPatch }>('/companies/:id/faults', async (request) =>
    simulation.setCompanyFaults(request.params.id, request.body),
  );

  control.post<{ Body: ResourceProgram }>('/resources/program', async (request, reply) => {
    simulation.programResource(request.body);
    return reply.code(204).send();
  });

  control.get('/report', async () => simulation.report());
};
