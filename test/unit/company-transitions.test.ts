/**
 * A company's transition table (src/companies/transitions.ts) read as rules: what it promises about where
 * a company's state can go; and the one state worked out from PostgreSQL's columns and the gate's view.
 * The contract tests (test/helpers/company-states-contract.ts) hold both implementations to the table.
 */
import { describe, expect, it } from 'vitest';
import { allowed, COMPANY_STATES, pauseGuard, PAUSED_SQL, stateOf, TRANSITIONS, type CompanyIntent, type CompanyStateName, type StateColumns } from '../../src/companies/transitions.js';
import type { GateView } from '../../src/gate/gate.js';

const intents = Object.keys(TRANSITIONS) as CompanyIntent[];
/** The intents that can take a company out of `from` into `to`. */
const leading = (from: CompanyStateName, to: CompanyStateName) => intents.filter((i) => allowed(i, from, to));

describe("a company's transition table", () => {
  it('only new credentials or an accepted probe lift a pause', () => {
    const lifting = new Set(COMPANY_STATES.filter((s) => s !== 'paused').flatMap((s) => leading('paused', s)));
    expect([...lifting].sort()).toEqual(['recordProbe', 'replaceCredentials']);
  });

  it('any state can be paused by a refusal of the stored credentials, and deleted', () => {
    for (const s of COMPANY_STATES) {
      expect(allowed('pause', s, 'paused'), s).toBe(true);
      expect(allowed('delete', s, null), s).toBe(true);
    }
  });

  it('new credentials always start unchecked, and only their check says ok, refused (paused) or no answer', () => {
    for (const s of COMPANY_STATES) expect(TRANSITIONS.replaceCredentials.to, s).toEqual(['unchecked']);
    expect(leading('unchecked', 'ok')).toEqual(['recordCheck']);
    expect(leading('unchecked', 'unreachable')).toEqual(['recordCheck']);
    // A check leaves a paused company paused: a fetch's refusal of the same credentials stands until a probe.
    expect(allowed('recordCheck', 'paused', 'ok')).toBe(false);
  });

  it('builds the SQL guards of the pause from the table', () => {
    expect(pauseGuard('recordProbe')).toBe(PAUSED_SQL);
    expect(pauseGuard('recordCheck')).toBe(`NOT (${PAUSED_SQL})`);
    expect(pauseGuard('pause')).toBe('TRUE');
  });
});

describe('the one state', () => {
  const row = (over: Partial<StateColumns> = {}): StateColumns => ({
    connectionStatus: 'ok',
    connectionError: null,
    pausedAt: null,
    credentialsStatus: 'accepted',
    credentialsCheckedAt: new Date('2026-11-28T10:00:00Z'),
    credentialsError: null,
    ...over,
  });
  const gate = (over: Partial<GateView> = {}): GateView => ({ heldUntil: null, heldWhy: null, noAnswerSince: null, noAnswerWhy: null, answeredAt: null, limitNow: null, running: 0, parked: 0, ...over });
  const later = Date.parse('2026-11-28T11:00:00Z');

  it('orders what needs the operator first: paused, throttled, unreachable, unchecked, ok', () => {
    const held = gate({ heldUntil: later, heldWhy: '429', noAnswerSince: later, noAnswerWhy: 'timeout' });
    expect(stateOf(row({ connectionStatus: 'unauthorized', connectionError: '401', pausedAt: new Date(later) }), held)).toEqual({ status: 'paused', since: new Date(later).toISOString(), until: null, reason: '401' });
    expect(stateOf(row(), held)).toMatchObject({ status: 'throttled', until: new Date(later).toISOString(), reason: '429' });
    expect(stateOf(row(), gate({ noAnswerSince: later, noAnswerWhy: 'timeout' }))).toMatchObject({ status: 'unreachable', reason: 'timeout' });
    expect(stateOf(row({ credentialsStatus: 'unchecked', credentialsCheckedAt: null }), gate()).status).toBe('unchecked');
    expect(stateOf(row(), gate()).status).toBe('ok');
  });

  it("a check's verdict stands until a fetch is answered after it; without Redis, PostgreSQL's part alone", () => {
    const unreachable = row({ credentialsStatus: 'unreachable', credentialsError: 'ECONNREFUSED' });
    expect(stateOf(unreachable, undefined)).toMatchObject({ status: 'unreachable', reason: 'ECONNREFUSED' });
    expect(stateOf(unreachable, gate({ answeredAt: later })).status).toBe('ok');
    expect(stateOf(row({ credentialsStatus: 'unchecked', credentialsCheckedAt: null }), gate({ answeredAt: later })).status).toBe('ok');
  });
});
