/**
 * The notification lifecycle's transition table (src/notifications/transitions.ts) read as rules: what it
 * promises about where a notification can go. test/integration/transitions.test.ts checks that PostgreSQL
 * does what the table says.
 */
import { describe, expect, it } from 'vitest';
import type { NotificationStatus } from '../../src/db/schema/index.js';
import { allowed, FINAL, fromGuard, PENDING, TRANSITIONS, type TransitionName } from '../../src/notifications/transitions.js';

const STATUSES: NotificationStatus[] = [...PENDING, ...FINAL];
const names = Object.keys(TRANSITIONS) as TransitionName[];
/** Where a notification in `status` can be next, by any transition. */
const next = (status: NotificationStatus) => new Set(names.flatMap((n) => (TRANSITIONS[n].from as readonly string[]).includes(status) ? [...TRANSITIONS[n].to] : []));

describe('the transition table', () => {
  it('names every status, and a new notification starts pending, discarded or processed (not fetched)', () => {
    expect(new Set(STATUSES)).toEqual(new Set<NotificationStatus>(['received', 'queued', 'processed', 'failed', 'discarded']));
    expect(STATUSES.filter((s) => allowed('accept', null, s))).toEqual(['received', 'queued', 'processed', 'discarded']);
  });

  it('lets every pending notification reach processed and failed', () => {
    for (const s of PENDING) {
      expect(allowed('finish', s, 'processed'), s).toBe(true);
      expect(allowed('finish', s, 'failed'), s).toBe(true);
    }
  });

  it('leaves a final notification alone but for a replay and the purge, and never replays a discarded one', () => {
    expect(Object.fromEntries(FINAL.map((s) => [s, [...next(s)]]))).toEqual({ processed: ['received'], failed: ['received'], discarded: [] });
    expect(names.filter((n) => (TRANSITIONS[n].from as readonly string[]).includes('discarded'))).toEqual(['purge']);
  });

  it('never purges a pending notification', () => {
    for (const s of PENDING) expect(allowed('purge', s, null), s).toBe(false);
  });

  it('builds the SQL guards from the table', () => {
    expect(fromGuard('queue')).toBe("status IN ('received')");
    expect(fromGuard('finish', 'n.status')).toBe("n.status IN ('received', 'queued')");
    expect(fromGuard('replay')).toBe("status IN ('received', 'queued', 'processed', 'failed')");
    expect(() => fromGuard('accept')).toThrow('new rows only');
  });
});
