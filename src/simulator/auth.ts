/**
 * Every marketplace API call carries a known company's credentials (seed §5.1), checked as the company's
 * profile requires (SPEC §14: state.ts identify).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { envelope } from '../marketplace/contract.js';
import type { Company, MarketplaceState } from './state.js';

const callers = new WeakMap<FastifyRequest, Company>();

/** An onRequest hook: 401 (or the avinode profile's 400) for missing or wrong credentials, else remembers the calling company. */
export function authenticate(state: MarketplaceState) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const who = state.identify(request.headers);
    if (who.refused !== undefined) return reply.code(who.refused).send(envelope(null, [who.error]));
    callers.set(request, who.company);
    return undefined;
  };
}

/** The company whose credentials the request carried; only for routes behind `authenticate`. */
export function callerOf(request: FastifyRequest): Company {
  const company = callers.get(request);
  if (!company) throw new Error(`${request.url} is served without the authenticate hook`);
  return company;
}
