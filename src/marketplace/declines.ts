/**
 * Declining a requested lift or an RFQ (the real marketplace's "Decline request"): the schema both Skyhook
 * and the simulator validate with. The body and the reasons are the documented ones; the path is assumed
 * (contract.ts rfqActionPath), and so is the answer's shape.
 */
import { z } from 'zod';

/** The documented values of `declineReason`. */
export const DECLINE_REASONS = ['AIRCRAFT_NOT_AVAILABLE', 'CABOTAGE', 'CREW_NOT_AVAILABLE', 'OWNER_DECLINED', 'UNATTRACTIVE_TRIP', 'UNKNOWN', 'OTHER'] as const;
export type DeclineReason = (typeof DECLINE_REASONS)[number];

/** The documentation shows no required/optional status: decided here, a decline needs its reason. */
export const declineSchema = z.strictObject({
  message: z.string().max(10_000).optional().describe('message to the buyer that goes with the decline'),
  declineReason: z.enum(DECLINE_REASONS, { message: `must be one of ${DECLINE_REASONS.join(', ')}` }),
  suppressNotification: z.boolean().optional(),
});
export type Decline = z.infer<typeof declineSchema>;

/** (assumed shape) What the marketplace answers for a decline: the trip message sent to the buyer, when it says. */
export interface DeclineAnswered {
  tripmsgs?: { id: string };
}
