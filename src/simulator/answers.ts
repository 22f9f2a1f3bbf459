/** Envelopes the simulated marketplace answers with when something is wrong (seed §7 leaves them open). */
import type { z } from 'zod';
import { envelope, type Envelope, type EnvelopeMessage } from '../marketplace/contract.js';

/** Bad input: HTTP 200 with `meta.errors` and no data, the "soft error" Skyhook must treat as an error. */
export const softError = (errors: EnvelopeMessage[]): Envelope<null> => envelope(null, errors);

/** One envelope error per schema issue, naming the field ("body" for the body as a whole). */
export const issueErrors = (issues: z.ZodError['issues']): EnvelopeMessage[] =>
  issues.map((issue) => ({ code: issue.code, message: issue.message, field: issue.path.join('.') || 'body' }));

export const notFound = (what: string): Envelope<null> =>
  envelope(null, [{ code: 'not_found', message: `${what} not found` }]);
