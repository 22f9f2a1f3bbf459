/**
 * Resources at the hrefs the simulator sends (seed §6.5). Only the owning company's token sees one; any
 * other company gets the same 404 as for a missing resource. First come the global latency, the calling
 * company's rate limit and latency, a scripted answer, then the global 503 and 429 faults.
 */
import { STATUS_CODES } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { envelope } from '../marketplace/contract.js';
import { notFound } from './answers.js';
import { callerOf } from './auth.js';
import { happens } from './faults.js';
import type { Simulation } from './simulation.js';
import type { Company, Resource } from './state.js';
import type { ScriptedResponse } from './types.js';

const resourceView = (resource: Resource) => ({
  id: resource.id,
  type: resource.type,
  version: resource.version,
  updatedAt: resource.updatedAt.toISOString(),
  ...resource.fields,
});

const tooManyRequests = (reply: FastifyReply, retryAfterS: number, message: string) =>
  reply.code(429).header('retry-after', String(retryAfterS)).send(envelope(null, [{ code: 'rate_limited', message }]));

const pathOf = (url: string): string => url.split('?', 1)[0]!;

/** A scripted answer; without a body, the envelope a real answer of that status would carry. */
function sendScripted(reply: FastifyReply, scripted: ScriptedResponse, ownResource: Resource | undefined) {
  if (scripted.body !== undefined && typeof scripted.body !== 'string') {
    // Serialised here, so the error-shape rewrite (api-routes.ts) leaves a scripted body exactly as given.
    return reply.code(scripted.status).type('application/json').headers(scripted.headers ?? {}).send(JSON.stringify(scripted.body));
  }
  const body =
    scripted.body ??
    (scripted.status >= 400
      ? envelope(null, [{ code: `http_${scripted.status}`, message: STATUS_CODES[scripted.status] ?? 'error' }])
      : envelope(ownResource ? resourceView(ownResource) : null));
  return reply.code(scripted.status).headers(scripted.headers ?? {}).send(body);
}

export const resourceRoutes: FastifyPluginAsync<{ simulation: Simulation }> = async (api, { simulation }) => {
  const { state } = simulation;
  const ownedBy = (path: string, company: Company): Resource | undefined => {
    const resource = state.resourceAt(path);
    return resource?.companyId === company.id ? resource : undefined;
  };

  // After the answer, so refused, faulted and scripted fetches are recorded with the status really sent.
  // Its start is the answer's time less the whole milliseconds it took: less the fractional elapsed time,
  // the whole-millisecond clock put a start up to 1 ms early, before the previous fetch's answer when the
  // two were under a millisecond apart (a limit of 1 read as broken).
  api.addHook('onResponse', async (request, reply) => {
    const now = Date.now();
    const path = pathOf(request.url);
    simulation.ledger.fetchServed({
      href: simulation.hrefOf(path),
      ownerCompanyId: state.resourceAt(path)?.companyId ?? null,
      tokenCompanyId: state.companyByAuthorization(request.headers.authorization)?.id ?? null,
      status: reply.statusCode,
      startedAt: new Date(now - Math.floor(reply.elapsedTime)).toISOString(),
      at: new Date(now).toISOString(),
    });
  });

  api.get('/:type/:id', async (request, reply) => {
    const path = pathOf(request.url);
    const caller = callerOf(request);
    const { faults } = state;
    if (faults.resourceLatencyMs > 0) await sleep(faults.resourceLatencyMs);
    // The company's own knobs: its rate limit first (a refusal is answered at once), then its latency.
    const admission = state.admitResourceGet(caller.id);
    if (!admission.admitted) return tooManyRequests(reply, admission.retryAfterS, 'too many requests for this company');
    const own = state.faultsOf(caller.id);
    if (own.resourceLatencyMs > 0) await sleep(own.resourceLatencyMs);
    const scripted = state.nextScriptedResponse(path);
    if (scripted) return sendScripted(reply, scripted, ownedBy(path, caller));
    if (happens(faults.resource5xxRate)) {
      return reply.code(503).send(envelope(null, [{ code: 'unavailable', message: 'temporarily unavailable' }]));
    }
    if (happens(faults.resource429Rate)) return tooManyRequests(reply, 1, 'too many requests');
    const resource = ownedBy(path, caller);
    if (!resource) return reply.code(404).send(notFound('resource'));
    return envelope(resourceView(resource));
  });
};
