/**
 * A destination's and a delivery's transition tables (src/destinations/transitions.ts) read as rules: what
 * they promise about where each can go; and a destination's one state worked out from PostgreSQL's columns
 * and its gate's view.
 */
import { describe, expect, it } from 'vitest';
import {
  allowedDelivery,
  DELIVERY_STATUSES,
  DELIVERY_TRANSITIONS,
  deliveryGuard,
  DESTINATION_STATES,
  DESTINATION_TRANSITIONS,
  destinationGuard,
  destinationStateOf,
  type DeliveryIntent,
  type DestinationIntent,
} from '../../src/destinations/transitions.js';
import type { GateView } from '../../src/gate/gate.js';

const deliveryIntents = Object.keys(DELIVERY_TRANSITIONS) as DeliveryIntent[];
const destinationIntents = Object.keys(DESTINATION_TRANSITIONS) as DestinationIntent[];

describe("a delivery's transition table", () => {
  it('starts pending, and only a pending delivery is sent, retried, failed, skipped or expired', () => {
    expect(DELIVERY_TRANSITIONS.create.to).toEqual(['pending']);
    for (const intent of ['deliver', 'retry', 'fail', 'skip', 'expire'] as const) expect(DELIVERY_TRANSITIONS[intent].from, intent).toEqual(['pending']);
  });

  it('leaves a final delivery alone but for a replay, which makes it pending again; a pending one is never replayed', () => {
    const final = DELIVERY_STATUSES.filter((s) => s !== 'pending');
    for (const s of final) expect(deliveryIntents.filter((i) => allowedDelivery(i, s, 'pending')), s).toEqual(['replay']);
    expect(allowedDelivery('replay', 'pending', 'pending')).toBe(false);
  });

  it('builds the SQL guards from the table', () => {
    expect(deliveryGuard('deliver')).toBe("status IN ('pending')");
    expect(deliveryGuard('replay', 'd.status')).toBe("d.status IN ('delivered', 'failed', 'skipped', 'expired')");
    expect(() => deliveryGuard('create')).toThrow('new rows only');
  });
});

describe("a destination's transition table", () => {
  it('only an answered probe closes a circuit, and only an enable ends a disable', () => {
    expect(destinationIntents.filter((i) => (DESTINATION_TRANSITIONS[i].from as readonly string[]).includes('failing') && (DESTINATION_TRANSITIONS[i].to as readonly string[]).includes('ok'))).toEqual(['closeCircuit']);
    expect(destinationIntents.filter((i) => (DESTINATION_TRANSITIONS[i].from as readonly string[]).includes('disabled') && (DESTINATION_TRANSITIONS[i].to as readonly string[]).includes('ok'))).toEqual(['enable']);
  });

  it('any state can be disabled; a disabled or already failing destination does not open its circuit again', () => {
    for (const s of DESTINATION_STATES) expect((DESTINATION_TRANSITIONS.disable.from as readonly string[]).includes(s), s).toBe(true);
    expect(DESTINATION_TRANSITIONS.openCircuit.from).toEqual(['ok', 'throttled']);
    expect(destinationGuard('openCircuit')).toBe('(disabled_at IS NULL AND failing_since IS NULL)');
    expect(destinationGuard('enable')).toBe('(disabled_at IS NOT NULL)');
  });
});

describe("a destination's one state", () => {
  const gate = (over: Partial<GateView> = {}): GateView => ({ heldUntil: null, heldWhy: null, noAnswerSince: null, noAnswerWhy: null, answeredAt: null, limitNow: null, running: 0, parked: 0, ...over });
  const row = { disabledAt: null, disabledReason: null, disabledBy: null, failingSince: null, failingError: null };
  const later = Date.parse('2026-11-28T12:00:00Z');

  it('orders what needs the operator first: disabled, failing, throttled, ok', () => {
    const held = gate({ heldUntil: later, heldWhy: 'answered 429' });
    const failing = { ...row, failingSince: new Date(later), failingError: 'answered 500' };
    expect(destinationStateOf({ ...failing, disabledAt: new Date(later), disabledReason: 'set inactive', disabledBy: 'admin' }, held)).toMatchObject({ status: 'disabled', reason: 'set inactive', by: 'admin' });
    expect(destinationStateOf(failing, held)).toMatchObject({ status: 'failing', reason: 'answered 500' });
    expect(destinationStateOf(row, held)).toMatchObject({ status: 'throttled', until: new Date(later).toISOString() });
    expect(destinationStateOf(row, undefined).status).toBe('ok');
  });
});
