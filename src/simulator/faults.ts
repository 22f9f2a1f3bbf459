/** The fault knobs: their types, their defaults, their validation and the dice that decide each fault. */
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';

export const NO_FAULTS: Faults = {
  duplicateRate: 0,
  lostAckRate: 0,
  deliveryLatencyMs: 0,
  resourceLatencyMs: 0,
  submitLatencyMs: 0,
  resource5xxRate: 0,
  resource429Rate: 0,
  pluralPutMissing: false,
  tokenEndpointDown: false,
};

const share = z.number().min(0).max(1);
const latencyMs = z.number().int().min(0).max(600_000);

/** A partial update of the faults (Faults, below); unknown keys are refused so a misspelt knob is not silently ignored. */
export const faultsPatch = z.strictObject({
  /** Share of deliveries sent twice. */
  duplicateRate: share.optional(),
  /** Share of 200 answers treated as lost (retried anyway). */
  lostAckRate: share.optional(),
  /** Added before each delivery attempt. */
  deliveryLatencyMs: latencyMs.optional(),
  /** Added before each resource GET answer. */
  resourceLatencyMs: latencyMs.optional(),
  /** Added after a lead, a quote or a decline was handled, before its answer: the marketplace acted, the caller may time out. */
  submitLatencyMs: latencyMs.optional(),
  /** Share of resource GETs answering 503. */
  resource5xxRate: share.optional(),
  /** Share of resource GETs answering 429 with `Retry-After: 1`. */
  resource429Rate: share.optional(),
  /** The plural PUT /webhooks/settings/{id} answers 404 (to test Skyhook's singular fallback). */
  pluralPutMissing: z.boolean().optional(),
  /** The OAuth token endpoint answers 503. */
  tokenEndpointDown: z.boolean().optional(),
});

export const NO_COMPANY_FAULTS: CompanyFaults = { resourceLatencyMs: 0, resourceRateLimit: null };

/** The largest per-company rate limit: the window keeps one time per admitted GET. */
const MAX_RATE_PER_SECOND = 100_000;

const resourceRateLimit = z.strictObject({
  perSecond: z.number().int().min(1).max(MAX_RATE_PER_SECOND),
  retryAfterS: z.number().int().min(0).max(86_400),
});

/** A partial update of one company's faults (CompanyFaults, below): an absent knob keeps its value, null clears it. */
export const companyFaultsPatch = z.strictObject({
  resourceLatencyMs: latencyMs.nullable().optional(),
  resourceRateLimit: resourceRateLimit.nullable().optional(),
});

/** Fault knobs, so tests can see how Skyhook copes with an imperfect marketplace. Rates are shares in [0, 1]. */
export type Faults = Required<z.output<typeof faultsPatch>>;

/** A company's rate limit on resource GETs: above `perSecond` in any sliding second, `429` with `Retry-After: <retryAfterS>`. */
export type ResourceRateLimit = z.output<typeof resourceRateLimit>;

/**
 * Fault knobs of one company's resource GETs (those carrying its credentials), on top of the global ones:
 * one company slow or rate-limited while the others are not (SPEC §5.1).
 */
export interface CompanyFaults {
  /** Added before each of its resource GET answers (after the global resourceLatencyMs); a 429 of its rate limit is not delayed. */
  resourceLatencyMs: number;
  /**
   * Decided when the GET arrives, before its latency and any scripted answer; a refused GET takes no place
   * in the window. null: no limit.
   */
  resourceRateLimit: ResourceRateLimit | null;
}

/** A partial update of a company's faults: an absent knob keeps its value, `null` clears it. */
export type CompanyFaultsPatch = z.input<typeof companyFaultsPatch>;

export function applyCompanyFaults(current: CompanyFaults, patch: CompanyFaultsPatch): CompanyFaults {
  return {
    resourceLatencyMs: patch.resourceLatencyMs === undefined ? current.resourceLatencyMs : (patch.resourceLatencyMs ?? 0),
    resourceRateLimit: patch.resourceRateLimit === undefined ? current.resourceRateLimit : patch.resourceRateLimit,
  };
}

/** Applies a partial update; a knob given as undefined (an absent CLI flag, say) keeps its value. */
export function applyFaults(current: Faults, patch: Partial<Faults>): Faults {
  const given = Object.entries(patch).filter(([, value]) => value !== undefined);
  return { ...current, ...Object.fromEntries(given) };
}

/** An onSend hook that holds a lead's, a quote's or a decline's answer for submitLatencyMs, after the call was handled. */
export const lateAnswer = (state: { faults: Faults }) => async (): Promise<void> => {
  if (state.faults.submitLatencyMs > 0) await sleep(state.faults.submitLatencyMs);
};

/** True for about `rate` of the calls. */
export const happens = (rate: number): boolean => rate > 0 && Math.random() < rate;
