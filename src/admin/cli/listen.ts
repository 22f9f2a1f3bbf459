/**
 * `skyhook listen`: a local receiver for a company's developer (SPEC §5.2), as payment platforms' CLIs have:
 * point a destination at it, and each delivery is verified with the destination's secret and printed, one
 * line each, until Ctrl-C. It needs neither the database nor Redis.
 */
import type { Command } from 'commander';
import { z } from 'zod';
import { describeError } from '../../lib/error-reporter.js';
import { secretProblem, startWebhookListener, type Heard } from '../../lib/webhook-listener.js';
import { execute, group, numberText, readStdin, validate, type JsonFlag } from './command.js';
import { shortTime } from './output.js';

const DEFAULT_PORT = 4400;

const listenFlags = z.object({
  port: z.number().int().min(0).max(65_535),
  secret: z
    .string()
    .superRefine((secret, ctx) => {
      const problem = secretProblem(secret);
      if (problem) ctx.addIssue({ code: 'custom', message: problem });
    })
    .optional(),
  path: z.string().regex(/^\/[^\s?#]*$/, 'must be a path starting with / (no query)'),
});

export function registerListen(program: Command): void {
  group(program, 'listen', "receive deliveries on this machine: each request's signature verified with --secret and printed, one line each, until Ctrl-C")
    .option('--port <port>', `the port to listen on, on 127.0.0.1 (0: any free one; default ${DEFAULT_PORT})`)
    .option('--secret <whsec>', "the destination's signing secret (destinations create or destinations secret print it); \"-\" reads it from stdin. Without it requests are answered 200, NOT verified")
    .option('--path <path>', 'the path deliveries are POSTed to (default /)')
    .option('--json', 'one JSON object per request (with its body), instead of a line')
    .action((flags: JsonFlag & { port?: string; secret?: string; path?: string }, cmd: Command) =>
      execute(cmd, async () => {
        const secret = flags.secret === '-' ? (await readStdin()).toString('utf8').trim() : flags.secret;
        const input = validate(cmd, listenFlags, { port: numberText(flags.port) ?? DEFAULT_PORT, secret, path: flags.path ?? '/' });
        await listen(input, Boolean(flags.json));
      }),
    );
}

/** Listens until SIGINT or SIGTERM, then says what it got. */
async function listen(input: z.output<typeof listenFlags>, json: boolean): Promise<void> {
  const counts = { requests: 0, verified: 0, refused: 0 };
  const listener = await startWebhookListener({
    port: input.port,
    path: input.path,
    secret: input.secret,
    onRequest: (heard) => {
      counts.requests++;
      if (heard.verification === 'verified') counts.verified++;
      if (heard.status >= 400) counts.refused++;
      process.stdout.write(`${json ? JSON.stringify(heard) : lineOf(heard)}\n`);
    },
  }).catch((err: unknown) => {
    const code = (err as { code?: string }).code;
    if (code === 'EADDRINUSE') throw new Error(`port ${input.port} on 127.0.0.1 is in use: pick another with --port`);
    throw new Error(`cannot listen on 127.0.0.1:${input.port}: ${describeError(err)}`);
  });
  // Said on stderr: with --json, stdout holds only the requests.
  process.stderr.write(
    `listening on ${listener.url}; Ctrl-C to stop\n` +
      (input.secret
        ? "each request's signature is verified with the secret given: 200 when it verifies, 401 when not\n"
        : 'no --secret: requests are answered 200 but NOT verified (`skyhook destinations secret <companyId> <destinationId>` shows the secret)\n') +
      `point a destination here: skyhook destinations create <companyId> --url ${listener.url}\n`,
  );
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await listener.close();
  process.stderr.write(`stopped: ${counts.requests} request(s), ${counts.verified} verified, ${counts.refused} refused\n`);
}

/** `<time>  <webhook-id>  <event type>  <resource>  <version>  <verdict>`: one request. */
function lineOf(h: Heard): string {
  const time = shortTime(h.at.toISOString());
  // Not a delivery at all (another path, not a POST, too large, unreadable): what was asked, and why not.
  if (h.status !== 200 && h.status !== 401) return `${time}  ${h.method} ${h.path}  -> ${h.status}: ${h.problem}`;
  const r = h.event?.resource;
  const resource = r ? `${String(r.type)} ${String(r.id)}` : '-';
  const version = r ? `version ${String(r.version)}${r.previousVersion === null || r.previousVersion === undefined ? '' : ` (after ${String(r.previousVersion)})`}` : '-';
  const verdict =
    h.verification === 'verified'
      ? 'verified'
      : h.verification === 'no secret'
        ? 'not verified: no --secret given'
        : `NOT verified: ${h.problem}`;
  const note = h.verification !== 'failed' && h.problem ? ` (${h.problem})` : '';
  return `${time}  ${h.webhookId ?? '(no webhook-id)'}  ${typeof h.event?.type === 'string' ? h.event.type : '-'}  ${resource}  ${version}  ${verdict}${note}  -> ${h.status}`;
}
