/**
 * Answering a requested lift or an RFQ (a quote, a decline) as the marketplace serves it: at the assumed path
 * (contract.ts rfqActionPath) for any request id, and at the action hrefs its RFQ resources carry
 * (`actions.<action>.href`, `sellerLift[].actions.<action>.href`), which are other paths, so a test can tell
 * which one Skyhook used.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { actAsAccountHeader } from '../marketplace/connection.js';
import { marketplaceId, rfqActionPath, type RfqAction } from '../marketplace/contract.js';
import { issueErrors, notFound, softError } from './answers.js';
import { callerOf } from './auth.js';
import { lateAnswer } from './faults.js';
import { countCall, type Ledger } from './ledger.js';
import type { Simulation } from './simulation.js';
import { resourcePath, type Company } from './state.js';
import type { AnswerRoute } from './types.js';

/** The user login an answer is sent as, in the header of the company's profile; a blank header counts as not sent, as no login is blank. */
function actAsAccountOf(request: FastifyRequest, company: Company): string | null {
  const value = request.headers[actAsAccountHeader(company.profile).toLowerCase()];
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : null;
}

/** The id Skyhook validates before sending it, checked again here as the marketplace would (a decoded `a%2Fb` is refused). */
const requestParams = z.object({ requestId: marketplaceId });

/** What a handler gets once the request id and the body are valid; otherwise the caller gets a soft error naming each issue. */
type Answer<B> = { requestId: string; body: B; company: Company; actAsAccount: string | null; shownAs: string; via: AnswerRoute };

/**
 * The plugin of one action: every call counted (`count`), its answer held for submitLatencyMs as a lead's is
 * (the marketplace acted, the caller may time out), and served at the assumed path and at the RFQ's and each
 * lift's action href. An action href names an RFQ of the caller's (and one of its lifts): anything else is a
 * 404, as for a resource.
 */
export function rfqActionRoutes<B>(
  action: RfqAction,
  schema: z.ZodType<B>,
  count: (ledger: Ledger) => void,
  handler: (simulation: Simulation) => (answer: Answer<B>) => unknown,
): FastifyPluginAsync<{ simulation: Simulation }> {
  return async (api, { simulation }) => {
    api.addHook('onSend', countCall(() => count(simulation.ledger)));
    api.addHook('onSend', lateAnswer(simulation.state));
    const handle = handler(simulation);
    const answer = async (request: FastifyRequest, params: unknown, via: AnswerRoute) => {
      const id = requestParams.safeParse(params);
      const body = schema.safeParse(request.body);
      if (!id.success || !body.success) return softError(issueErrors([...(id.error?.issues ?? []), ...(body.error?.issues ?? [])]));
      const company = callerOf(request);
      const actAsAccount = actAsAccountOf(request, company);
      // Seed §4.2: the broker sees the acting user when the header is sent, else the company name.
      return handle({ requestId: id.data.requestId, body: body.data, company, actAsAccount, shownAs: actAsAccount ?? company.name, via });
    };
    const viaHref = async (request: FastifyRequest, reply: FastifyReply, rfqId: string, liftId: string | null) => {
      const rfq = simulation.state.resourceAt(resourcePath('rfqs', rfqId));
      const lifts = rfq?.fields.sellerLift;
      const known = rfq?.companyId === callerOf(request).id && (liftId === null || (Array.isArray(lifts) && lifts.some((l: { id?: unknown }) => l.id === liftId)));
      if (!known) return reply.code(404).send(notFound(liftId === null ? 'rfq' : 'requested lift'));
      return answer(request, { requestId: liftId ?? rfqId }, 'action_href');
    };
    api.post(rfqActionPath(action, 'REQUEST_ID').replace('REQUEST_ID', ':requestId'), async (request) => answer(request, request.params, 'assumed_path'));
    api.post<{ Params: { rfqId: string } }>(`/rfqs/:rfqId/${action}`, async (request, reply) => viaHref(request, reply, request.params.rfqId, null));
    api.post<{ Params: { rfqId: string; liftId: string } }>(`/rfqs/:rfqId/lifts/:liftId/${action}`, async (request, reply) =>
      viaHref(request, reply, request.params.rfqId, request.params.liftId),
    );
  };
}
