/**
 * What the simulator reads at its doors, as zod schemas: startSimulator's settings, a company account, fired
 * events and scripted answers (the fault knobs' own are in faults.ts). types.ts names the shapes they accept;
 * server.ts, simulation.ts and the CLI (command.ts) validate with them.
 */
import { z } from 'zod';
import { CONNECTION_PROFILES } from '../marketplace/connection.js';
import { EVENT_TYPES } from '../marketplace/contract.js';
import { applyFaults, faultsPatch, NO_FAULTS } from './faults.js';

/** The error entries the simulator's envelopes can take (types.ts ErrorShape). */
export const ERROR_SHAPES = ['seed', 'titled'] as const;

/**
 * What startSimulator reads of its options (types.ts SimulatorOptions): checked before it listens, so a bad
 * value leaves no server behind.
 */
export const simulationSettings = z.object({
  /**
   * The origin other processes reach the simulator at (e.g. `http://simulator:4010` in docker compose); hrefs
   * and the API base URL use it. Default: the listening address. Kept as its origin.
   */
  publicUrl: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .transform((url) => new URL(url).origin)
    .optional(),
  /** 1 = real time; 0.001 compresses the 48 h give-up to 172.8 s and the backoffs likewise. */
  timeScale: z.number().positive().finite().default(1),
  /** A reply slower than this counts as undelivered. */
  replyTimeoutMs: z.number().int().positive().default(10_000),
  deliveryConcurrency: z.number().int().positive().default(64),
  /** How many of each record the report lists (the newest): every resource stays in the state and answers GETs. */
  historyLimit: z.number().int().positive().default(100_000),
  faults: faultsPatch.default({}).transform((faults) => applyFaults(NO_FAULTS, faults)),
  /**
   * The error entries of its envelopes: `seed` `{code, message, field}`, the seed's assumption, or `titled`
   * `{title, code, path}`, the real marketplace's (SPEC §14). Scripted bodies are sent as given.
   */
  errorShape: z.enum(ERROR_SHAPES).default('seed'),
  /** Seconds an access token from the token endpoint lives: short, so refreshes happen. */
  tokenLifetimeS: z.number().int().positive().max(86_400).default(60),
});

const secret = z.string().min(1).max(500);

/** A company account as the control surface and the CLI accept it (types.ts CompanyAccount). */
export const companyAccount = z
  .object({
    id: z.string().min(1).max(200),
    name: z.string().min(1).max(200).optional(),
    /** bearer: the Authorization token (optional with OAuth client credentials); avinode: the X-Avinode-ApiToken (required). */
    token: secret.optional(),
    profile: z.enum(CONNECTION_PROFILES).default('bearer'),
    /** avinode: the fixed Authorization token (optional with OAuth client credentials). */
    authToken: secret.optional(),
    /** OAuth 2.0 client credentials the token endpoint accepts for this company. */
    clientId: secret.optional(),
    clientSecret: secret.optional(),
  })
  .superRefine((a, ctx) => {
    const oauth = a.clientId !== undefined && a.clientSecret !== undefined;
    if ((a.clientId === undefined) !== (a.clientSecret === undefined)) {
      ctx.addIssue({ code: 'custom', path: [a.clientId === undefined ? 'clientId' : 'clientSecret'], message: 'clientId and clientSecret go together' });
    }
    if (a.profile === 'bearer') {
      if (a.authToken !== undefined) ctx.addIssue({ code: 'custom', path: ['authToken'], message: 'is only used by the avinode profile' });
      if (a.token === undefined && !oauth) ctx.addIssue({ code: 'custom', path: ['token'], message: 'is required (or OAuth client credentials: clientId and clientSecret)' });
    } else {
      if (a.token === undefined) ctx.addIssue({ code: 'custom', path: ['token'], message: 'is required by the avinode profile (the X-Avinode-ApiToken)' });
      if (a.authToken === undefined && !oauth) ctx.addIssue({ code: 'custom', path: ['authToken'], message: 'is required by the avinode profile (or OAuth client credentials: clientId and clientSecret)' });
    }
  });

/** Bounds one fire call (and the size of its answer); a longer burst is several calls. */
const MAX_EVENTS_PER_FIRE = 100_000;

export const fireRequest = z
  .object({
    companyId: z.string().min(1),
    eventType: z.enum(EVENT_TYPES),
    count: z.number().int().min(1).max(MAX_EVENTS_PER_FIRE).default(1),
    /** Every event changes this resource (created on first use). */
    resourceId: z.string().min(1).max(200).optional(),
    /** The events go round-robin over this many new resources. Default: a new resource per event. */
    resources: z.number().int().min(1).max(MAX_EVENTS_PER_FIRE).optional(),
    /** Extra notification properties; they are spread last, so tests can also override `type` or `href`. */
    extra: z.record(z.string(), z.unknown()).optional(),
  })
  .refine((request) => request.resourceId === undefined || request.resources === undefined, {
    message: 'give resourceId or resources, not both',
    path: ['resources'],
  });

export const scriptedResponse = z.object({
  status: z.number().int().min(200).max(599),
  /** Default: an envelope (with an error for status >= 400, else the resource or null). */
  body: z.unknown().optional(),
  headers: z.record(z.string(), z.string()).optional(),
});

export const resourceProgram = z.object({ href: z.url(), responses: z.array(scriptedResponse).min(1) });
