import type { z } from 'zod';

/** Bad input to a control operation (fire, add a company, set faults, program a resource): a 400 on the wire. */
export class SimulatorInputError extends Error {
  override readonly name = 'SimulatorInputError';
}

/** Parses control input, naming every bad field in one message. */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw new SimulatorInputError(describeIssues(result.error.issues));
}

/** One line naming every bad field, e.g. "count: Too small: expected number to be >=1". */
export const describeIssues = (issues: z.ZodError['issues']): string =>
  issues
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join('.')}: ${issue.message}` : issue.message))
    .join('; ');

/** Why a fetch failed: fetch reports network failures as "fetch failed" with the real reason as the cause. */
export function fetchFailureReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? error.cause.message : error.message;
}
