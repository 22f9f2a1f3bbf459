/**
 * The `skyhook` CLI as an operator or a developer runs it: `node bin/skyhook.js <args>` as a child process,
 * configured by its environment only. `run` waits for it to end (stdout, stderr, exit code); `start` keeps a
 * long-running one (`listen`, `events tail`) and its output, to wait for a line and to stop it with a signal.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { Command } from 'commander';
import type pg from 'pg';
import { registerAdminCommands } from '../../src/admin/cli/index.js';

const BIN = new URL('../../bin/skyhook.js', import.meta.url).pathname;

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

export interface Running {
  child: ChildProcess;
  /** stdout so far, and stderr so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves with the first stdout or stderr line (already seen or new) that matches; throws after timeoutMs or if it exits first. */
  waitForLine(match: RegExp, timeoutMs?: number): Promise<string>;
  /** Sends `signal` (default SIGINT, as Ctrl-C) and answers how it exited. */
  stop(signal?: NodeJS.Signals): Promise<Run>;
  exited: Promise<Run>;
}

/** One invocation to its end; `stdin` is written to its standard input. */
export function runSkyhook(env: NodeJS.ProcessEnv, args: string[], stdin?: string): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = execFile(process.execPath, [BIN, ...args], { env, timeout: 30_000 }, (error, stdout, stderr) => {
      const code = error ? error.code : 0;
      if (typeof code !== 'number') reject(error ?? new Error('no exit code'));
      else resolve({ code, stdout, stderr });
    });
    child.stdin?.end(stdin ?? '');
  });
}

/** A long-running invocation: stopped by the caller (stop), or by killLeftovers() in afterAll. */
export function startSkyhookCommand(env: NodeJS.ProcessEnv, args: string[], stdin?: string): Running {
  const child = spawn(process.execPath, [BIN, ...args], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  running.add(child);
  child.stdin.end(stdin ?? '');
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  const seen = () => listeners.forEach((l) => l());
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => ((stdout += chunk), seen()));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => ((stderr += chunk), seen()));
  const exited = new Promise<Run>((resolve) =>
    child.once('close', (code, signal) => {
      running.delete(child);
      resolve({ code: code ?? (signal ? 128 : -1), stdout, stderr });
      seen();
    }),
  );
  let done = false;
  void exited.then(() => (done = true));
  return {
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    exited,
    waitForLine: (match, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          const line = `${stdout}\n${stderr}`.split('\n').find((l) => match.test(l));
          if (line !== undefined) return finish(() => resolve(line));
          if (done) finish(() => reject(new Error(`the command exited before a line matched ${match}:\n${stdout}\n${stderr}`)));
        };
        const timer = setTimeout(() => finish(() => reject(new Error(`no line matched ${match} within ${timeoutMs} ms:\n${stdout}\n${stderr}`))), timeoutMs);
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          listeners.delete(check);
          settle();
        };
        listeners.add(check);
        check();
      }),
    stop: (signal = 'SIGINT') => {
      child.kill(signal);
      return exited;
    },
  };
}

const running = new Set<ChildProcess>();

/** Kills what a test left running (call it in afterAll). */
export function killLeftovers(): void {
  for (const child of running) child.kill('SIGKILL');
}

/**
 * The admin commands of `groups` (`skyhook <group> <command>`, read from the program the CLI registers)
 * that are not in `reads`, each of which must have left an `ok` entry in the audit log read from `sql`; and
 * no entry of a command may have been recorded by the command runner after its change instead of by the
 * change itself (SPEC §10.1). Answers what is wrong, as lines.
 */
export async function auditWalk(sql: Pick<pg.ClientBase, 'query'>, groups: string[], reads: string[]): Promise<string[]> {
  const program = new Command();
  registerAdminCommands(program);
  const commands = program.commands.filter((g) => groups.includes(g.name())).flatMap((g) => g.commands.map((c) => `skyhook ${g.name()} ${c.name()}`));
  const { rows } = await sql.query<{ action: string; outcome: string; outside: boolean }>(
    "SELECT action, outcome, coalesce((details->>'outsideTransaction')::boolean, false) AS outside FROM audit_log WHERE action LIKE 'skyhook %'",
  );
  const made = new Set(rows.filter((r) => r.outcome === 'ok').map((r) => r.action));
  return [
    ...commands.filter((c) => !reads.includes(c) && !made.has(c)).map((c) => `${c}: no change made here, and not a read`),
    ...commands.filter((c) => reads.includes(c) && made.has(c)).map((c) => `${c}: a read that wrote an entry`),
    ...rows.filter((r) => r.outside).map((r) => `${r.action}: recorded after its change, not by it`),
  ];
}
