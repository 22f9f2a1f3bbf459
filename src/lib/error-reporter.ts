/**
 * Errors that are handled by carrying on (a connection that reconnects, a pass that runs again later, a
 * best-effort clean-up) are still seen: each is counted in `skyhook_errors_total{kind}`, and logged once
 * per kind and interval (the first at once, then a reminder saying how many followed), so an outage reads
 * as one clear line and a reminder now and then, not a line (or a stack trace) per attempt.
 */
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';

/** How long a kind goes unlogged after its line: later reports are counted, and said in the next line. */
const INTERVAL_MS = 30_000;

/** What an error says in one line: its message and code, never a stack. */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  // Connection failures to several addresses come as an AggregateError with an empty message.
  const first = err instanceof AggregateError ? (err.errors[0] as unknown) : undefined;
  const message = err.message || (first instanceof Error ? first.message : '') || err.name;
  return typeof code === 'string' && !message.includes(code) ? `${message} (${code})` : message;
}

export class ErrorReporter {
  /** Per kind: when it was last logged, and how many reports followed since. */
  private readonly kinds = new Map<string, { lastLoggedAt: number; since: number }>();

  constructor(
    private readonly log: Logger,
    private readonly counter: Counter<'kind'>,
  ) {}

  /** Counts the error; logs `message` now if this kind was not logged within the interval. */
  report(kind: string, err: unknown, message: string, fields: Record<string, unknown> = {}): void {
    this.counter.inc({ kind });
    const now = Date.now();
    const state = this.kinds.get(kind);
    if (state && now - state.lastLoggedAt < INTERVAL_MS) {
      state.since++;
      return;
    }
    const repeated = state ? { repeated: state.since + 1 } : {};
    this.log.warn({ kind, err: describeError(err), ...repeated, ...fields }, message);
    this.kinds.set(kind, { lastLoggedAt: now, since: 0 });
  }

  /** Counts an error whose cause was already said (an outage being reported): no line of its own. */
  count(kind: string): void {
    this.counter.inc({ kind });
  }

  /** Whether `kind` was reported since it last recovered. */
  active(kind: string): boolean {
    return this.kinds.has(kind);
  }

  /** The condition `kind` reported is over: said once, and its next failure is logged at once. */
  recovered(kind: string, message: string, fields: Record<string, unknown> = {}): void {
    if (!this.kinds.delete(kind)) return;
    this.log.info({ kind, ...fields }, message);
  }
}
