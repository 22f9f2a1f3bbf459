/** What every admin route's schema shares: who may call it, its documentation for /docs, and the problems any route may answer. */
import { GRANTS, ROLES, type Permission } from '../access/roles.js';
import * as s from '../services/schemas.js';

const rolesWith = (permission: Permission) => ROLES.filter((role) => GRANTS[role].includes(permission)).join(', ');

/**
 * A route's access (SPEC §10.1: the guard refuses the others) and its schema, documented (tag, summary,
 * description, and who may call it) for /docs.
 */
export const documented = <S extends object>(access: Permission, tag: string, summary: string, description: string, schema: S) => ({
  config: { access },
  schema: { tags: [tag], summary, description: `${description}\n\nNeeds the \`${access}\` permission (roles: ${rolesWith(access)}).`, security: [{ key: [] }], ...schema },
});

export const errors = { 400: s.problemSchema, 401: s.problemSchema, 403: s.problemSchema, 404: s.problemSchema };
