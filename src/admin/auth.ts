/**
 * The admin token check, shared by the admin API and the queue dashboard. Scripts send
 * `Authorization: Bearer <ADMIN_TOKEN>`; a browser opening the dashboard is asked for Basic
 * credentials, and the password is the admin token (any user name).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuthFailureLimiter } from '../lib/auth-failure-limiter.js';
import { constantTimeEqual, sha256 } from '../lib/crypto.js';
import { Problem, sendProblem } from '../lib/problem.js';

/** A refusal is counted by the failed-authentication limiter, and is a 429 once the address is over its limit. */
export function adminTokenCheck(adminToken: string, opts: { allowBasic: boolean; limiter: AuthFailureLimiter }) {
  const expected = sha256(adminToken);
  const challenge = opts.allowBasic ? 'Basic realm="skyhook-admin"' : 'Bearer realm="skyhook-admin"';
  return async (req: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const header = req.headers.authorization ?? '';
    let given = /^Bearer\s+(.+)$/i.exec(header)?.[1]?.trim();
    if (given === undefined && opts.allowBasic) {
      const basic = /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(header)?.[1];
      if (basic) given = Buffer.from(basic, 'base64').toString('utf8').split(':').slice(1).join(':');
    }
    if (!constantTimeEqual(sha256(given ?? ''), expected)) {
      // Answered, not thrown: this also guards the queue dashboard (see sendProblem).
      const refused = new Problem(401, 'Unauthorized', 'This needs the admin token: Authorization: Bearer <ADMIN_TOKEN>.', { code: 'unauthorized', headers: { 'www-authenticate': challenge } });
      return sendProblem(req, reply, opts.limiter.refusal(req.ip, refused));
    }
  };
}
