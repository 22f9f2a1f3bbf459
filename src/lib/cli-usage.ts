/** Exit codes shared by the `skyhook` commands: a usage error (a bad flag, argument or body file) exits 2, a failure while running 1. */
import type { CommanderError } from 'commander';

export const USAGE_EXIT_CODE = 2;

/** Commander exits with 1 on bad flags and 0 after --help; usage errors here exit with 2. */
export function exitOnUsageError(error: CommanderError): never {
  process.exit(error.exitCode === 0 ? 0 : USAGE_EXIT_CODE);
}

/** A bad flag, argument or body file: each line said on stderr, and the command exits with USAGE_EXIT_CODE. */
export class UsageError extends Error {
  constructor(readonly lines: string[]) {
    super(lines.join('; '));
  }
}
