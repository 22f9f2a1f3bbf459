/**
 * Traces (SPEC §15): a notification's way, in the code's own words. The implementation, lib/tracing-otel.ts,
 * is imported by runtime.ts only when an OTLP endpoint is set; otherwise every `tracing` dependency is
 * undefined and each place that would trace costs one check. Which trace each span joins: docs/decisions.md.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ErrorReporter } from './error-reporter.js';

/** A span in progress; what it is made of belongs to the implementation. */
export interface SpanRef {
  /** Ends it; an error marks it failed (its message, never a secret, is the span's status). */
  end(error?: unknown): void;
}

/** `work`, ending `span` when it settles (failed if it rejects); without a span, `work` itself. */
export function endsWith<T>(span: SpanRef | undefined, work: Promise<T>): Promise<T> {
  if (!span) return work;
  return work.then(
    (value) => {
      span.end();
      return value;
    },
    (err: unknown) => {
      span.end(err);
      throw err;
    },
  );
}

/** The request that carries a notification (a SERVER span), from its arrival to its answer. */
export interface RequestSpan {
  /** The webhook the credentials named (SPEC §4 attribution). */
  attributed(webhook: { companyId: string; webhookId: string }, by: 'basic' | 'oauth'): void;
  /** The request's wait for its group commit: a child span, handed to the writer with the row. */
  commitWait(): SpanRef;
  /** The row as committed. */
  stored(row: { id: number; type: string; status: string; fetchKey: string }): void;
  answered(statusCode: number): void;
  /** The client went away before the answer. */
  aborted(): void;
}

export interface IncomingRequest {
  method: string;
  /** The route's template (`/hooks/:endpointKey`): the endpoint key itself never goes into a trace. */
  route: string;
  scheme: string;
  host: string | undefined;
  clientAddress: string;
  userAgent: string | undefined;
  httpVersion: string;
}

/** What one GET of an href found (processing/fetch-job.ts). */
export interface GetAnswer {
  kind: string;
  status: number | null;
  message?: string;
  /** Why no answer came, when none did. */
  noAnswer?: 'timeout' | 'network';
}

/** One run of a fetch job (a CONSUMER span) and what it does. */
export interface FetchSpan {
  /** The notifications the run covers (SPEC §5 C4). */
  claimed(ids: number[]): void;
  /** The GET of the href (a CLIENT span). */
  get(href: string, resendCount: number): { end(answer: GetAnswer | undefined, error?: unknown): void };
  /** The wait for the snapshot to be stored (batched with other jobs' snapshots); its handler runs under it. */
  snapshot(): SpanRef;
  /** What the run asks of the queue: done (with its summary), delayed, or retried (with the error). */
  end(outcome: { next: string; summary?: string; error?: unknown }): void;
}

/** A fetch job as a worker took it. */
export interface TakenJob {
  /** W3C traceparent of the notification whose commit added the job, if it carried one. */
  traceparent: string | undefined;
  id: string | undefined;
  companyId: string;
  href: string;
  fetchKey: string;
  /** When the job was added (epoch ms) and when this run took it; the wait between is the queue's. */
  enqueuedAt: number;
  takenAt: number;
  /** How many times the job was taken (1: its first run) and how many attempts failed before. */
  attemptsStarted: number;
  attemptsMade: number;
}

export interface Tracing {
  /** A notification's POST. */
  request(req: IncomingRequest): RequestSpan;
  /** One group commit of notifications: it joins the trace of its first traced request; the others link to it. */
  commitBatch(waits: (SpanRef | undefined)[]): SpanRef;
  /** A fetch job added after a commit (a PRODUCER span); its traceparent travels in the job's data. */
  enqueue(commitWait: SpanRef, job: { companyId: string; fetchKey: string }): { traceparent: string; added(jobId: string | undefined): void; failed(error: unknown): void };
  /** A fetch job taken by a worker: its wait in the queue (first run only), then its run. */
  fetch(job: TakenJob): FetchSpan;
  /** A type's handler, under its snapshot's span. */
  handler(snapshot: SpanRef | undefined, run: { type: string; companyId: string }): SpanRef | undefined;
  /** Exports what is left (bounded in time). */
  shutdown(): Promise<void>;
}

/** What config.ts read: whether traces are exported, and how. Every other OTEL_* variable is read by the SDK. */
export interface TracingConfig {
  protocol: 'http/protobuf' | 'http/json';
  /** The endpoint the traces go to (shown at start-up, without credentials). */
  endpoint: string;
}

export interface TracingContext {
  role: string;
  log: Logger;
  reporter: ErrorReporter;
  /** The process's metrics: tracing adds skyhook_trace_spans_dropped_total to them. */
  registry: Registry;
}
