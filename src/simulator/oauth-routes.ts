/**
 * The OAuth 2.0 token endpoint (RFC 6749 §4.4, SPEC §14), at `<API base URL>/oauth/token` as on the real
 * marketplace: a client-credentials grant, the client authenticated by `client_id` and `client_secret` in
 * the form or by HTTP Basic, answering short-lived bearer access tokens. An avinode company's token request
 * must carry its profile's headers too. Errors are OAuth's `{error, error_description}`, not envelopes.
 */
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import type { Simulation } from './simulation.js';

const OAUTH_TOKEN_PATH = '/oauth/token';

/** The client credentials of a token request: from HTTP Basic (RFC 6749 §2.3.1: form-encoded, then base64) or the form. */
function clientCredentials(authorization: string | undefined, form: Record<string, string>): { id?: string; secret?: string } {
  const basic = authorization === undefined ? null : /^Basic ([A-Za-z0-9+/=]+)$/.exec(authorization);
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return { id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')) };
  }
  return { id: form.client_id, secret: form.client_secret };
}

const oauthError = (reply: FastifyReply, status: number, error: string, description: string) =>
  reply.code(status).header('cache-control', 'no-store').send({ error, error_description: description });

export const oauthRoutes: FastifyPluginAsync<{ simulation: Simulation }> = async (api, { simulation }) => {
  const { state, ledger } = simulation;
  const companyOf = new WeakMap<object, string>();

  api.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_request, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  api.addHook('onResponse', async (request, reply) => {
    ledger.logs.tokens.push({ companyId: companyOf.get(request) ?? null, status: reply.statusCode, at: new Date().toISOString() });
  });

  api.post(OAUTH_TOKEN_PATH, async (request, reply) => {
    ledger.calls.tokens++;
    if (state.faults.tokenEndpointDown) return oauthError(reply.header('retry-after', '1'), 503, 'temporarily_unavailable', 'the token endpoint is down (fault knob)');
    const form = typeof request.body === 'object' && request.body !== null ? (request.body as Record<string, string>) : {};
    if (form.grant_type !== 'client_credentials') return oauthError(reply, 400, 'unsupported_grant_type', 'only client_credentials is granted');
    const presented = clientCredentials(request.headers.authorization, form);
    const company = presented.id !== undefined && presented.secret !== undefined ? state.companyByClientCredentials(presented.id, presented.secret) : undefined;
    if (!company) return oauthError(reply, 401, 'invalid_client', 'unknown client or wrong client secret');
    companyOf.set(request, company.id);
    const problem = state.profileHeadersProblem(company, request.headers);
    if (problem) return oauthError(reply, problem.refused, 'invalid_request', problem.error.message);
    const token = state.issueAccessToken(company.id);
    return reply.header('cache-control', 'no-store').send({ access_token: token.value, token_type: 'Bearer', expires_in: token.lifetimeS });
  });
};
