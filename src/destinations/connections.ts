/**
 * A destination as the delivery worker sends to it: read with each round of deliveries it claims
 * (destinations/postgres.ts claim), so an edited URL, a rotated secret or a new state applies from the next
 * round; its secrets opened to sign, its limits with their defaults.
 */
import type { DestinationRow } from '../db/schema/index.js';
import { decryptSecret } from '../lib/crypto.js';
import type { DestinationNow } from './lifecycle.js';

export interface DestinationConnection {
  id: string;
  companyId: string;
  url: string;
  /** The secrets signing now: the current one, and the previous one within its grace period. */
  secrets: string[];
  /** Its requests at once, across every worker: its own limit, or DESTINATION_CONCURRENCY. */
  maxConcurrency: number;
  /** Its own requests per second (0: none). */
  ratePerSecond: number;
  timeoutMs: number;
  /** Failing or disabled: its deliveries wait parked at its gate. */
  paused: boolean;
}

/** The secrets a destination signs with at `now` (SPEC §5.2: at most two, during a rotation's grace period). */
export function signingSecrets(row: Pick<DestinationRow, 'secretEncrypted' | 'previousSecretEncrypted' | 'previousSecretExpiresAt'>, secretKey: Buffer, now = Date.now()): string[] {
  const previous = row.previousSecretEncrypted !== null && row.previousSecretExpiresAt !== null && row.previousSecretExpiresAt.getTime() > now;
  return [decryptSecret(secretKey, row.secretEncrypted), ...(previous ? [decryptSecret(secretKey, row.previousSecretEncrypted!)] : [])];
}

export function destinationConnection(ids: { destinationId: string; companyId: string }, d: DestinationNow, secretKey: Buffer, defaults: { concurrency: number; timeoutMs: number }): DestinationConnection {
  return {
    id: ids.destinationId,
    companyId: ids.companyId,
    url: d.url,
    secrets: signingSecrets(d, secretKey),
    maxConcurrency: d.maxConcurrency ?? defaults.concurrency,
    ratePerSecond: d.ratePerSecond ?? 0,
    timeoutMs: d.timeoutMs ?? defaults.timeoutMs,
    paused: d.paused,
  };
}
