/**
 * The request a delivery sends (SPEC §5.2), built from its event alone, so it is the same bytes on every
 * attempt and replay, and in every destination. Above the size limit the snapshot is left out first, then
 * the changes; both stay readable with GET /admin/companies/{companyId}/events/{eventId}.
 */
import type { DeliveryToSend } from '../destinations/lifecycle.js';

/** `<resource type>.created` for a resource's first version, `.updated` for the others; `test` for a destination's test. */
export const eventTypeOf = (resourceType: string, version: number): string => `${resourceType}.${version === 1 ? 'created' : 'updated'}`;

/** What a delivery's request and the pull feed carry of an event. */
export function eventPayload(companyId: string, event: DeliveryToSend['event'] & { href: string }) {
  return {
    id: event.id,
    type: eventTypeOf(event.type, event.version),
    companyId,
    occurredAt: event.occurredAt.toISOString(),
    resource: { type: event.type, id: event.resourceId, href: event.href, version: event.version, previousVersion: event.version > 1 ? event.version - 1 : null },
    eventTypes: event.eventTypes,
    changes: event.changes,
    snapshot: event.snapshot,
  };
}

/** The body, whole while it fits in `limitBytes`; else without the snapshot, then without the changes. */
export function deliveryBody(delivery: Pick<DeliveryToSend, 'companyId' | 'href' | 'event'>, limitBytes: number): string {
  const payload = eventPayload(delivery.companyId, { ...delivery.event, href: delivery.href });
  const whole = JSON.stringify(payload);
  if (Buffer.byteLength(whole) <= limitBytes) return whole;
  const { snapshot: _snapshot, ...withoutSnapshot } = payload;
  const lighter = JSON.stringify({ ...withoutSnapshot, snapshotOmitted: true });
  if (Buffer.byteLength(lighter) <= limitBytes) return lighter;
  const { changes: _changes, ...bare } = withoutSnapshot;
  return JSON.stringify({ ...bare, snapshotOmitted: true, changesOmitted: true });
}
