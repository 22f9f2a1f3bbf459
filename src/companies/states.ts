/**
 * A company's state (SPEC §5.1) as an interface: every change of it, named by intent, each owning its
 * statement and what follows it at the company's gate; and the views. transitions.ts says which changes
 * are allowed; postgres.ts is the implementation Skyhook runs (the only code that writes a company's
 * pause, its credentials' verdict and revision, and its limit), test/helpers/memory-company-states.ts the
 * fast tier's. Callers take `Pick<>` views.
 */
import type { Change } from '../db/client.js';
import type { CompanyRow } from '../db/schema/index.js';
import type { GateView } from '../gate/gate.js';
import type { CompanyState, CompanyStateName, StateColumns } from './transitions.js';

/** A company's credentials as stored (sealed by the caller: services/companies.service.ts); those given are replaced. */
export type CredentialColumns = Partial<
  Pick<
    CompanyRow,
    | 'apiTokenEncrypted'
    | 'connectionProfile'
    | 'authTokenEncrypted'
    | 'oauthTokenUrl'
    | 'oauthClientId'
    | 'oauthClientSecretEncrypted'
    | 'oauthClientSecretExpiresAt'
    | 'product'
    | 'apiVersion'
    | 'extraBaseUrls'
  >
>;

/** What one harmless call with a company's credentials found (SPEC §14). */
export interface CheckVerdict {
  status: 'accepted' | 'refused' | 'unreachable';
  /** The marketplace's reason, with its codes, when refused or unreachable. */
  error: string | null;
}

/** The marketplace refused a company's credentials on a fetch (SPEC §5.1 F4). */
export interface Refusal {
  /** The credentials revision the refused call used: newer credentials are not paused for it. */
  revision: number;
  /** What the admin sees: the call and the marketplace's words. */
  reason: string;
  /** Its resources whose fetch met the refusal: parked at its gate. */
  hrefs: string[];
}

/** A company with its one state and what its gate knows (none when Redis could not be read). */
export interface StatedCompany {
  id: string;
  name: string;
  state: CompanyState;
  gate: GateView | undefined;
}

/** The companies not `ok`, and how many companies are in each state: what a deployment of any size needs to find who is in trouble. */
export interface TroubledCompanies {
  /** Every company, counted in its one state. */
  counts: Record<CompanyStateName, number>;
  /** Every company whose state is not `ok`, in id order. */
  companies: StatedCompany[];
}

export interface CompanyStates {
  /**
   * Renames it, sets its own fetch limit (null: the default; applied at its gate at once), and
   * replaceCredentials: new credentials raise the revision, lift a pause and are checked at once
   * (recordCheck); a lifted pause not imposed again by the check queues what waits. One statement for the
   * change. Answers the row, or undefined for no such company. `within`: a statement of that larger change (the
   * gate told once it committed); not with credentials, whose check is a call to the marketplace.
   */
  change(companyId: string, change: { name?: string; fetchConcurrency?: number | null; credentials?: CredentialColumns }, within?: Change): Promise<CompanyRow | undefined>;
  /** recordCheck: one harmless call with the stored credentials, its verdict recorded if they are still the stored ones; refused pauses. */
  check(companyId: string): Promise<CompanyRow | undefined>;
  /** pause: paused (since the first refusal) if `revision` is still its credentials' revision, the hrefs parked at its gate; answers whether it is. */
  pause(companyId: string, refusal: Refusal): Promise<boolean>;
  /** recordProbe: a paused company's credentials tried once more; accepted, it resumes (what waits is queued again). Answers whether it resumed. */
  probe(companyId: string): Promise<boolean>;
  /** A 429 met by a call that is not a fetch (a lead, a quote, a settings call): its calls and fetches held (SPEC §5.1 F3). */
  hold(companyId: string, retryAfterMs: number | undefined, why: string): Promise<void>;
  /** Until when its calls are held, if they are now. */
  heldUntil(companyId: string): Promise<number | null>;
  /** The one state of each row, in order, with its gate's view (states from PostgreSQL alone when Redis cannot be read). */
  states(rows: (StateColumns & { id: string })[]): Promise<{ state: CompanyState; gate: GateView | undefined }[]>;
  /**
   * Every company not `ok`, and the count in each state (the metrics, the console's overview): read from
   * the few rows PostgreSQL says may not be ok (paused, credentials unchecked or unreachable) and the ids
   * the gate notes as held or unanswered (its trouble set), never from every company's gate.
   */
  troubled(): Promise<TroubledCompanies>;
  /** delete: the company with everything it owns, in PostgreSQL (what grows with traffic purged in batches after: purge.ts) and at its gate (once `within` committed, when given); answers whether it existed. */
  delete(companyId: string, within?: Change): Promise<boolean>;
}
