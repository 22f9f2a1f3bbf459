/**
 * Who may do what (SPEC §10.1): the roles, the permissions a route or a console action declares, and the
 * table between them. Deny by default: a permission not in a role's row is refused, and a route that
 * declares none keeps the process from starting (access/guard.ts).
 */

export const ROLES = ['admin', 'operator', 'viewer', 'company'] as const;
export type Role = (typeof ROLES)[number];

/** What a route or a console action needs. */
export const PERMISSIONS = {
  read: 'list and show companies, webhooks, notifications, resources, events, destinations, deliveries, leads, quotes, declines and the audit log (never a secret)',
  secrets: "read a destination's signing secret",
  companies: 'add, change and delete companies and their webhooks',
  destinations: 'add, change, test and delete destinations (their secrets included)',
  replay: 'replay notifications and deliveries',
  send: 'send leads, quotes and declines to the marketplace',
  queues: 'open the queue dashboard, which can retry and remove jobs',
  keys: 'create, list and revoke keys',
} as const;
export type Permission = keyof typeof PERMISSIONS;

/** The table: each role's permissions. A `company` key has its row's reach over its own company only. */
export const GRANTS: Record<Role, readonly Permission[]> = {
  admin: ['read', 'secrets', 'companies', 'destinations', 'replay', 'send', 'queues', 'keys'],
  operator: ['read', 'secrets', 'companies', 'destinations', 'replay', 'send', 'queues'],
  viewer: ['read'],
  company: ['read', 'secrets', 'destinations', 'replay', 'send'],
};

/** What a route declares: a permission, `public` (anyone: the receiver, the probes, the console's sign-in and assets), or `metrics` (public, or METRICS_TOKEN when set). */
export type Access = Permission | 'public' | 'metrics';

export const may = (role: Role, permission: Permission): boolean => GRANTS[role].includes(permission);

/** Who is asking: a key, the bootstrap ADMIN_TOKEN, or the local CLI (its user). */
export interface Principal {
  kind: 'key' | 'bootstrap' | 'local';
  /** The key's id; null for the bootstrap token and the local CLI. */
  id: string | null;
  /** The key's name, `ADMIN_TOKEN`, or `cli:<user>`. */
  name: string;
  role: Role;
  /** A `company` key's company: its only reach. */
  companyId: string | null;
}

/** Who made a change, and from where (the audit log's who and from which address). */
export interface Actor {
  principal: Principal;
  /** The client's address; null for the local CLI. */
  address: string | null;
}

export const BOOTSTRAP: Principal = { kind: 'bootstrap', id: null, name: 'ADMIN_TOKEN', role: 'admin', companyId: null };
