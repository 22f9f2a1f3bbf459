/**
 * Keys (SPEC §10.1): create (the key answered once), list (never a secret), show, revoke: only the `keys`
 * permission (the admin role) reaches them. The audit log, read by any role (a company key: its company's).
 * Thin, as every admin route is: validate, call access/, answer.
 */
import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { auditOf } from '../access/audit.js';
import { companyInReach } from '../access/guard.js';
import type { Services } from '../services/index.js';
import * as s from '../services/schemas.js';
import { documented, errors } from './documented.js';

export function accessRoutes(parent: FastifyInstance, deps: Pick<Services, 'keys' | 'audit'>): void {
  const app = parent.withTypeProvider<ZodTypeProvider>();
  app.post(
    '/keys',
    documented(
      'keys',
      'keys',
      'Create a key',
      "A key for the admin API, the console (sign in with it) and the remote CLI, with one role: `admin` (everything), `operator` (every company, no keys), `viewer` (read only, never a secret) or `company` (one company's own: its notifications, events, destinations, deliveries, replays, leads and quotes). Send it as `Authorization: Bearer <key>`. The answer's `key` is shown here once: only its SHA-256 is kept.",
      { body: s.createKeyBody, response: { 201: s.keyWithSecretSchema, ...errors } },
    ),
    async (req, reply) => reply.code(201).send(await deps.keys.create({ ...req.body, expiresAt: req.body.expiresAt ? new Date(req.body.expiresAt) : null }, auditOf(req))),
  );
  app.get(
    '/keys',
    documented('keys', 'keys', 'List keys', 'Newest first, revoked and expired ones included, with when each was last used (to the minute); never a secret.', {
      querystring: s.listQuery,
      response: { 200: s.page(s.keyViewSchema), ...errors },
    }),
    async (req) => deps.keys.list(req.query),
  );
  app.get(
    '/keys/:keyId',
    documented('keys', 'keys', 'Show a key', 'Never its secret.', { params: s.keyParams, response: { 200: s.keyViewSchema, ...errors } }),
    async (req) => deps.keys.get(req.params.keyId),
  );
  app.delete(
    '/keys/:keyId',
    documented('keys', 'keys', 'Revoke a key', 'At once: its next request is refused by every process, and its console sessions end. The key stays listed, `revoked`.', {
      params: s.keyParams,
      response: { 200: s.keyViewSchema, ...errors },
    }),
    async (req) => deps.keys.revoke(req.params.keyId, auditOf(req)),
  );
  app.get(
    '/audit',
    documented(
      'read',
      'audit',
      'List the audit log',
      "Every change made through the admin API, the console or the CLI, newest first: when, who (a key's id and name, `ADMIN_TOKEN`, or the local CLI user), from which address, the action and its target ids, the names of the fields changed (never their values), and the outcome: one entry a change, written with it (a call to the marketplace: before it, with its outcome after). A bulk action is one entry with its filter and count. A company key sees its company's entries, without other actors' addresses.",
      { querystring: s.auditQuery, response: { 200: s.page(s.auditEntrySchema), ...errors } },
    ),
    async (req) => deps.audit.list({ ...req.query, companyId: companyInReach(req, req.query.companyId) }, req.principal!),
  );
}
