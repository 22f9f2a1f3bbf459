/** Envelopes the simulated marketplace answers with when something is wrong (seed §7 leaves them open). */
import type { z } from 'zod';
import { envelope, type Envelope, type EnvelopeMessage, type SeedEnvelopeMessage, type TitledEnvelopeMessage } from '../marketplace/contract.js';
import type { ErrorShape } from './types.js';

/** Bad input: HTTP 200 with `meta.errors` and no data, the "soft error" Skyhook must treat as an error. */
export const softError = (errors: EnvelopeMessage[]): Envelope<null> => envelope(null, errors);

/** One envelope error per schema issue, naming the field ("body" for the body as a whole). */
export const issueErrors = (issues: z.ZodError['issues']): SeedEnvelopeMessage[] =>
  issues.map((issue) => ({ code: issue.code, message: issue.message, field: issue.path.join('.') || 'body' }));

export const notFound = (what: string): Envelope<null> =>
  envelope(null, [{ code: 'not_found', message: `${what} not found` }]);

const titled = (e: SeedEnvelopeMessage): TitledEnvelopeMessage => ({
  title: e.message,
  code: e.code ?? 'error',
  ...(e.field !== undefined ? { path: e.field } : {}),
});

/**
 * An answer's error entries in the given shape. Every answer is built in the seed's shape, so the simulator
 * speaks the real marketplace's `{title, code, path}` by rewriting here, once, what it is about to send.
 */
export function inErrorShape(shape: ErrorShape, payload: unknown): unknown {
  const meta = (payload as { meta?: { errors?: unknown } } | null)?.meta;
  if (shape !== 'titled' || !Array.isArray(meta?.errors) || meta.errors.length === 0) return payload;
  return { ...(payload as object), meta: { ...meta, errors: (meta.errors as SeedEnvelopeMessage[]).map(titled) } };
}
