/** Every marketplace API call carries a known company's token (seed §5.1). */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { envelope } from '../marketplace/contract.js';
import type { Company, MarketplaceState } from './state.js';

const callers = new WeakMap<FastifyRequest, Company>();

/** An onRequest hook: 401 for a missing or unknown token, else remembers the calling company. */
export function authenticate(state: MarketplaceState) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const company = state.companyByAuthorization(request.headers.authorization);
    if (!company) {
      return reply.code(401).send(envelope(null, [{ code: 'unauthorized', message: 'missing or unknown API token' }]));
    }
    callers.set(request, company);
    return undefined;
  };
}

/** The company whose token the request carried; only for routes behind `authenticate`. */
export function callerOf(request: FastifyRequest): Company {
  const company = callers.get(request);
  if (!company) throw new Error(`${request.url} is served without the authenticate hook`);
  return company;
}
