/**
 * What the delivery tests share (SPEC §5.2): a destination created through the admin API for a test
 * receiver (which learns its secret), a stored version of a resource made by the simulator, and the
 * destination's and deliveries' views.
 */
import { expect } from 'vitest';
import type { EventType } from '../../src/marketplace/contract.js';
import type { FaultCompany } from '../faults/support.js';
import type { TestReceiver } from './receiver.js';
import type { Scenario } from './scenario.js';
import { eventually, type AdminCall } from './skyhook.js';

/** A destination of `company` at the receiver's URL (201), the receiver verifying with its secret. */
export async function destinationFor(admin: AdminCall, company: Pick<FaultCompany, 'companyId'>, r: TestReceiver, body: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
  const created = await admin('POST', `/companies/${company.companyId}/destinations`, { url: r.url, description: 'our CRM', ...body });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  r.secrets = [created.body.secret];
  return created.body;
}

/** Fires one event on `resourceId` and waits until version `n` is stored (so each firing makes a version). */
export async function storedVersion(
  s: Scenario,
  company: FaultCompany,
  resourceId: string,
  n: number,
  opts: { eventType?: EventType; fields?: Record<string, unknown> } = {},
): Promise<void> {
  s.sim.emit(company.simId, opts.eventType ?? 'TripRequest', resourceId, { fields: opts.fields });
  await eventually(async () => {
    const { rows } = await s.sql.query('SELECT version FROM resources WHERE company_id = $1 AND resource_id = $2', [company.companyId, resourceId]);
    return rows[0]?.version >= n;
  }, `version ${n} of ${resourceId}`);
}

/** The destination's view (its state, stats). */
export const destinationView = async (admin: AdminCall, companyId: string, destinationId: string) => (await admin('GET', `/companies/${companyId}/destinations/${destinationId}`)).body;

/** The destination's deliveries, oldest first. */
export async function deliveriesOf(admin: AdminCall, companyId: string, destinationId: string): Promise<{ id: number; webhookId: string; status: string; resource: { id: string; version: number }; attempts: number }[]> {
  const page = await admin('GET', `/companies/${companyId}/deliveries?destinationId=${destinationId}&limit=500`);
  expect(page.status, JSON.stringify(page.body)).toBe(200);
  return [...page.body.items].reverse();
}
