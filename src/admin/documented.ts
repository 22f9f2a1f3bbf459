/** What every admin route's schema shares: its documentation for /docs, and the problems any route may answer. */
import * as s from '../services/schemas.js';

/** A route's schema, documented (tag, summary, description) for /docs, and behind the admin token there. */
export const documented = <S extends object>(tag: string, summary: string, description: string, schema: S) => ({
  schema: { tags: [tag], summary, description, security: [{ adminToken: [] }], ...schema },
});

export const errors = { 400: s.problemSchema, 401: s.problemSchema, 404: s.problemSchema };
