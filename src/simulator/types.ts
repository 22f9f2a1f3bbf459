/**
 * The public shapes of the marketplace simulator: its options, its control inputs and the records of its
 * report. Every module of the simulator may import it, so it imports none of them but the schemas and the
 * fault knobs these shapes are read from. The report itself (ledger.ts), a fired event and the running
 * simulator (simulation.ts) are named beside the code that makes them; index.ts exports them all.
 */
import type { z } from 'zod';
import type { DeclineReason } from '../marketplace/declines.js';
import type { companyAccount, ERROR_SHAPES, fireRequest, resourceProgram, scriptedResponse, simulationSettings } from './schemas.js';

/** How a quote or a decline reached the simulator: the assumed path, or an action href of an RFQ resource (rfq-actions.ts). */
export type AnswerRoute = 'assumed_path' | 'action_href';

/**
 * A marketplace company account (SPEC §14): `bearer` (the default) is known by `Authorization: Bearer <token>`,
 * `avinode` by `Bearer <authToken>` and its X-Avinode-* headers (marketplace/connection.ts). With `clientId`
 * and `clientSecret`, the token endpoint issues access tokens that stand in for the fixed bearer token.
 */
export type CompanyAccount = z.input<typeof companyAccount>;

export type { CompanyFaults, CompanyFaultsPatch, Faults, ResourceRateLimit } from './faults.js';

/** startSimulator's options: the simulation's settings (schemas.ts) and where it listens. */
export type SimulatorOptions = z.input<typeof simulationSettings> & {
  /** 0 = a random free port. Default 0. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  companies?: CompanyAccount[];
  /** Log every request (pino). Default false. */
  logger?: boolean;
};

export type ErrorShape = (typeof ERROR_SHAPES)[number];

/** Fire events on demand (POST /_sim/events). */
export type FireRequest = z.input<typeof fireRequest>;

/** A scripted answer for the next GET of a resource href. */
export type ScriptedResponse = z.input<typeof scriptedResponse>;

/** Scripted answers for the next GETs of a resource href (POST /_sim/resources/program). */
export type ResourceProgram = z.input<typeof resourceProgram>;

export type DeliveryStatus = 'delivered' | 'pending' | 'gave_up' | 'dropped';

/** One notification on its way to one webhook. */
export interface NotificationRecord {
  id: string;
  href: string;
  type: string;
  companyId: string;
  webhookId: string;
  attempts: number;
  status: DeliveryStatus;
  /** Why the last attempt did not count as consumed. */
  lastError?: string;
}

/** One resource GET, recorded to prove that no company's token reached another company's data. */
export interface FetchRecord {
  href: string;
  /** null when no such resource exists. */
  ownerCompanyId: string | null;
  /** null for an unknown token. */
  tokenCompanyId: string | null;
  status: number;
  /** When the GET arrived. */
  startedAt: string;
  /** When it was answered. */
  at: string;
}

export interface ResourceRecord {
  companyId: string;
  href: string;
  type: string;
  id: string;
  version: number;
}

/** A lead the simulator created; a repeat of its clientIdentifier adds no record. */
export interface LeadRecord {
  companyId: string;
  id: string;
  clientIdentifier: string;
  kind: 'client_search' | 'empty_leg';
}

/** What a quote's and a decline's records share: the lift or RFQ answered, and how. */
interface AnswerRecord {
  companyId: string;
  requestId: string;
  tripMessageId: string;
  /** The act-as header of the company's profile (X-Service-ActAsAccount or X-Avinode-ActAsAccount); null when it was not sent. */
  actAsAccount: string | null;
  /** Where it was sent: the assumed path, or an action href of an RFQ resource. */
  via: AnswerRoute;
}

/** A quote the simulator accepted; a repeat of its sellerUniqueQuoteIdentifier adds no record. */
export interface QuoteRecord extends AnswerRecord {
  sellerQuoteId: string;
  liftId: string;
  sellerUniqueQuoteIdentifier: string;
}

/** A decline the simulator accepted; a repeat for the same lift or RFQ adds no record. */
export interface DeclineRecord extends AnswerRecord {
  declineReason: DeclineReason;
}

/** One request to the OAuth token endpoint. */
export interface TokenRecord {
  /** The company whose client credentials were presented; null for an unknown client. */
  companyId: string | null;
  status: number;
  at: string;
}

/** One call to the marketplace API (resource GETs included), with the profile headers it carried. */
export interface ApiCallRecord {
  method: string;
  path: string;
  /** The company its credentials named; null when they named none. */
  companyId: string | null;
  status: number;
  /** X-Avinode-Product and X-Avinode-ApiVersion as sent; null when absent. */
  product: string | null;
  apiVersion: string | null;
  /** The act-as header of the company's profile, as sent; null when absent. */
  actAsAccount: string | null;
  at: string;
}
