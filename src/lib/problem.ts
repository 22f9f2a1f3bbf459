/**
 * RFC 9457 problem details: the one error shape of every HTTP answer Skyhook gives.
 * Throw a Problem anywhere in a route; the app's error handler writes it with sendProblem.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
export interface FieldError {
  field: string;
  message: string;
  /** The marketplace's own code for this error, when it gave one. */
  code?: string;
}

export class Problem extends Error {
  constructor(
    readonly status: number,
    readonly title: string,
    readonly detail?: string,
    readonly extra: { errors?: FieldError[]; headers?: Record<string, string>; code?: string } = {},
  ) {
    super(detail ?? title);
  }

  /** Fastify and its plugins read `statusCode` (e.g. @fastify/basic-auth keeps a status that is set). */
  get statusCode(): number {
    return this.status;
  }

  body(instance?: string): Record<string, unknown> {
    return {
      type: 'about:blank',
      title: this.title,
      status: this.status,
      ...(this.detail ? { detail: this.detail } : {}),
      ...(this.extra.code ? { code: this.extra.code } : {}),
      ...(instance ? { instance } : {}),
      ...(this.extra.errors ? { errors: this.extra.errors } : {}),
    };
  }
}

/**
 * Writes a Problem as the answer, its headers included. Hooks that also guard the queue dashboard answer
 * with it rather than throw: bull-board's routes have their own error handler, which would answer a thrown
 * Problem as its own JSON (with a stack trace in development) and drop its headers.
 */
export function sendProblem(req: FastifyRequest, reply: FastifyReply, problem: Problem): FastifyReply {
  for (const [name, value] of Object.entries(problem.extra.headers ?? {})) reply.header(name, value);
  return reply.code(problem.status).type('application/problem+json').send(problem.body(req.url.split('?')[0]));
}

export const badRequest = (detail: string, errors?: FieldError[], code = 'invalid_input') => new Problem(400, 'Bad Request', detail, { errors, code });
export const notFound = (what: string) => new Problem(404, 'Not Found', `${what} was not found`, { code: 'not_found' });

/** A dependency is down: the caller (the marketplace, for notifications) should retry. */
export const serviceUnavailable = (detail: string, code: string) =>
  new Problem(503, 'Service Unavailable', detail, { code, headers: { 'retry-after': '5' } });

export const databaseUnavailable = () => serviceUnavailable('The database is unavailable; nothing was stored. Retry later.', 'database_unavailable');
