/**
 * Tracing with OpenTelemetry (what is traced: lib/tracing.ts; how to use it: docs/operations.md, "Traces").
 * Spans go over OTLP/HTTP, protobuf or JSON, through a BatchSpanProcessor; the SDK reads the standard OTEL_*
 * variables itself. No context manager and no global tracer provider: every parent is passed explicitly. A
 * context manager would be AsyncLocalStorage, which on Node 20 costs every promise of the process; a global
 * provider would turn on the spans drizzle-orm makes for each query.
 */
import { createRequire } from 'node:module';
import { diag, DiagLogLevel, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';
import { parseTraceParent, setGlobalErrorHandler } from '@opentelemetry/core';
import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Counter } from 'prom-client';
import { describeError } from './error-reporter.js';
import type { FetchSpan, GetAnswer, IncomingRequest, RequestSpan, SpanRef, TakenJob, Tracing, TracingConfig, TracingContext } from './tracing.js';

/** From src/lib or dist/lib alike. */
const VERSION = (createRequire(import.meta.url)('../../package.json') as { version: string }).version;
const QUEUE = 'fetch';
/** At most this many notification ids on a fetch's span (a claim takes up to 1000). */
const MAX_IDS = 100;
/** OpenTelemetry's default cap on a span's links. */
const MAX_LINKS = 128;
const TRACING_ERROR = 'tracing';

/** Query parameters whose values never go into a span: credentials and signatures (OpenTelemetry's list and OAuth's). */
const SENSITIVE_PARAM = /^(?:oauth_\w*|access_token|refresh_token|id_token|token|api_?key|key|code|password|passwd|secret|client_secret|sig|signature|awsaccesskeyid|x-amz-signature|x-amz-security-token|x-goog-signature|x-goog-credential)$/i;

/** A URL fit for `url.full`: credentials and sensitive query values replaced by REDACTED (semantic conventions). */
export function urlForSpan(href: string): string {
  const url = URL.parse(href);
  if (!url) return 'REDACTED';
  let changed = false;
  if (url.username || url.password) {
    url.username = 'REDACTED';
    url.password = 'REDACTED';
    changed = true;
  }
  for (const name of new Set(url.searchParams.keys())) {
    if (SENSITIVE_PARAM.test(name)) {
      url.searchParams.set(name, 'REDACTED');
      changed = true;
    }
  }
  return changed ? url.toString() : href;
}

/** What every span of a fetch job carries: the queue, and the company and resource the job fetches. */
const messagingOf = (job: { companyId: string; fetchKey: string }): Attributes => ({
  'messaging.system': 'bullmq',
  'messaging.destination.name': QUEUE,
  'skyhook.company.id': job.companyId,
  'skyhook.fetch.key': job.fetchKey,
});

const traceparentOf = (sc: SpanContext): string => `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, '0')}`;

/** `error.type` of a thrown error: its code, else its class name. */
const errorType = (err: unknown): string => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.name : 'error';
};

/** A span with the one way Skyhook ends spans: ok, or failed with the error's one-line description (never its stack). */
class Ref implements SpanRef {
  constructor(readonly span: Span) {}

  get context(): Context {
    return trace.setSpan(ROOT_CONTEXT, this.span);
  }

  end(error?: unknown): void {
    if (error !== undefined) fail(this.span, errorType(error), describeError(error));
    this.span.end();
  }
}

function fail(span: Span, type: string, message: string): void {
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message });
}

const hostAndPort = (host: string | undefined): Attributes => {
  const match = host ? /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(host) : null;
  if (!match) return {};
  return { 'server.address': match[1]!, ...(match[2] ? { 'server.port': Number(match[2]) } : {}) };
};

class NotificationRequest implements RequestSpan {
  private readonly ref: Ref;
  /** An abort and an answer may both be reported; the span ends once. */
  private ended = false;

  constructor(
    private readonly tracer: Tracer,
    req: IncomingRequest,
  ) {
    const attributes: Attributes = {
      'http.request.method': req.method,
      'http.route': req.route,
      // The path as routed, its key (a credential of the webhook's address) redacted.
      'url.path': req.route.replace(/:\w+/g, 'REDACTED'),
      'url.scheme': req.scheme,
      'client.address': req.clientAddress,
      'network.protocol.name': 'http',
      'network.protocol.version': req.httpVersion,
      ...hostAndPort(req.host),
    };
    if (req.userAgent !== undefined) attributes['user_agent.original'] = req.userAgent;
    // A new trace: the receiver is public, and a sender's traceparent must not decide what is sampled.
    this.ref = new Ref(tracer.startSpan(`${req.method} ${req.route}`, { kind: SpanKind.SERVER, attributes }, ROOT_CONTEXT));
  }

  attributed(webhook: { companyId: string; webhookId: string }, by: 'basic' | 'oauth'): void {
    this.ref.span.setAttributes({ 'skyhook.company.id': webhook.companyId, 'skyhook.webhook.id': webhook.webhookId, 'skyhook.auth': by });
  }

  commitWait(): SpanRef {
    return new Ref(this.tracer.startSpan('commit notification', { kind: SpanKind.INTERNAL }, this.ref.context));
  }

  stored(row: { id: number; type: string; status: string; fetchKey: string }): void {
    this.ref.span.setAttributes({
      'skyhook.notification.id': row.id,
      'skyhook.notification.type': row.type,
      'skyhook.notification.status': row.status,
      'skyhook.fetch.key': row.fetchKey,
    });
  }

  answered(statusCode: number): void {
    if (this.ended) return;
    this.ended = true;
    const span = this.ref.span;
    span.setAttribute('http.response.status_code', statusCode);
    // Server spans: only a 5xx is the server's failure (semantic conventions).
    if (statusCode >= 500) fail(span, String(statusCode), `answered ${statusCode}`);
    span.end();
  }

  aborted(): void {
    if (this.ended) return;
    this.ended = true;
    fail(this.ref.span, 'aborted', 'the client went away before the answer');
    this.ref.span.end();
  }
}

class FetchRun implements FetchSpan {
  private readonly ref: Ref;

  constructor(
    private readonly tracer: Tracer,
    job: TakenJob,
  ) {
    const parent = job.traceparent ? parseTraceParent(job.traceparent) : null;
    const context = parent ? trace.setSpanContext(ROOT_CONTEXT, parent) : ROOT_CONTEXT;
    const messaging = messagingOf(job);
    if (job.id !== undefined) messaging['messaging.message.id'] = job.id;
    // The wait is only the queue's on a job's first run: later runs were delayed or backed off on purpose.
    if (job.attemptsStarted <= 1) {
      tracer.startSpan('fetch queued', { kind: SpanKind.INTERNAL, startTime: job.enqueuedAt, attributes: messaging }, context).end(Math.max(job.enqueuedAt, job.takenAt));
    }
    const attributes: Attributes = {
      ...messaging,
      'messaging.operation.type': 'process',
      'messaging.operation.name': 'process',
      'skyhook.fetch.attempt': job.attemptsMade + 1,
      'skyhook.fetch.runs': job.attemptsStarted,
    };
    this.ref = new Ref(tracer.startSpan(`process ${QUEUE}`, { kind: SpanKind.CONSUMER, startTime: job.takenAt, attributes }, context));
  }

  claimed(ids: number[]): void {
    this.ref.span.setAttributes({ 'skyhook.notification.count': ids.length, 'skyhook.notification.ids': ids.slice(0, MAX_IDS) });
  }

  get(href: string, resendCount: number): { end(answer: GetAnswer | undefined, error?: unknown): void } {
    const url = URL.parse(href);
    const attributes: Attributes = { 'http.request.method': 'GET', 'url.full': urlForSpan(href) };
    if (url) {
      attributes['url.scheme'] = url.protocol.replace(/:$/, '');
      attributes['server.address'] = url.hostname;
      attributes['server.port'] = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
    }
    if (resendCount > 0) attributes['http.request.resend_count'] = resendCount;
    const span = this.tracer.startSpan('GET', { kind: SpanKind.CLIENT, attributes }, this.ref.context);
    return {
      end(answer, error) {
        if (answer) {
          span.setAttribute('skyhook.fetch.outcome', answer.kind);
          if (answer.status !== null) span.setAttribute('http.response.status_code', answer.status);
          if (answer.status !== null && answer.status >= 400) fail(span, String(answer.status), answer.message ?? `answered ${answer.status}`);
          else if (answer.status === null) fail(span, answer.noAnswer ?? 'network', answer.message ?? 'no answer');
          else if (answer.kind !== 'ok') fail(span, answer.kind, answer.message ?? answer.kind);
        } else if (error !== undefined) fail(span, errorType(error), describeError(error));
        span.end();
      },
    };
  }

  snapshot(): SpanRef {
    return new Ref(this.tracer.startSpan('store snapshot', { kind: SpanKind.INTERNAL }, this.ref.context));
  }

  end(outcome: { next: string; summary?: string; error?: unknown }): void {
    this.ref.span.setAttribute('skyhook.fetch.next', outcome.next);
    if (outcome.summary !== undefined) this.ref.span.setAttribute('skyhook.fetch.summary', outcome.summary);
    this.ref.end(outcome.error);
  }
}

// Over 80 lines on purpose: the SDK's whole set-up (exporter, processor, sampler, error handling) in one place.
export function startTracing(config: TracingConfig, context: TracingContext): Tracing {
  const { reporter } = context;
  const dropped = new Counter({
    name: 'skyhook_trace_spans_dropped_total',
    help: 'Spans dropped before export because the batch span processor queue was full (OTEL_BSP_MAX_QUEUE_SIZE): sample, or raise it',
    registers: [context.registry],
  });
  // The SDK's own complaints (an export that failed, spans dropped from a full queue): counted and logged
  // rate-limited like every error Skyhook carries on after; its chatter below warnings is not wanted.
  const sdkError = (message: string) => {
    // The batch span processor says how many it dropped once its queue has room again.
    const spans = /^Dropped (\d+) spans/.exec(message);
    if (spans) dropped.inc(Number(spans[1]));
    reporter.report(TRACING_ERROR, new Error(message), 'tracing: spans could not be exported or were dropped; the service carries on');
  };
  diag.setLogger(
    {
      error: (message) => sdkError(message),
      warn: (message) => sdkError(message),
      info: () => {},
      debug: () => {},
      verbose: () => {},
    },
    DiagLogLevel.WARN,
  );
  setGlobalErrorHandler((err) => reporter.report(TRACING_ERROR, err, 'tracing: spans could not be exported; the service carries on'));

  // OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (the env detector) win over these defaults.
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': 'skyhook', 'service.version': VERSION, 'skyhook.role': context.role }))
    .merge(detectResources({ detectors: [envDetector] }));
  const exporter = config.protocol === 'http/json' ? new JsonExporter() : new ProtobufExporter();
  // BasicTracerProvider and BatchSpanProcessor read OTEL_TRACES_SAMPLER(_ARG), the span limits and OTEL_BSP_*.
  const provider = new BasicTracerProvider({ resource, spanProcessors: [new BatchSpanProcessor(exporter)] });
  const tracer = provider.getTracer('skyhook', VERSION);
  context.log.info({ endpoint: config.endpoint, protocol: config.protocol }, 'tracing: exporting OpenTelemetry traces over OTLP/HTTP');

  return {
    request: (req) => new NotificationRequest(tracer, req),

    commitBatch(waits) {
      const traced = waits.filter((w): w is Ref => w instanceof Ref);
      const first = traced[0];
      const attributes: Attributes = { 'db.system.name': 'postgresql', 'db.operation.name': 'INSERT', 'db.collection.name': 'notifications' };
      if (waits.length > 1) attributes['db.operation.batch.size'] = waits.length;
      const links = traced.slice(1, MAX_LINKS + 1).map((w) => ({ context: w.span.spanContext() }));
      const span = tracer.startSpan('INSERT notifications', { kind: SpanKind.CLIENT, attributes, links }, first ? first.context : ROOT_CONTEXT);
      const batch = { context: span.spanContext() };
      for (const w of traced) {
        w.span.setAttribute('skyhook.commit.batch_size', waits.length);
        if (w !== first) w.span.addLink(batch);
      }
      return new Ref(span);
    },

    enqueue(commitWait, job) {
      const parent = commitWait instanceof Ref ? commitWait.context : ROOT_CONTEXT;
      const attributes = { ...messagingOf(job), 'messaging.operation.type': 'send', 'messaging.operation.name': 'add' };
      const span = tracer.startSpan(`send ${QUEUE}`, { kind: SpanKind.PRODUCER, attributes }, parent);
      return {
        traceparent: traceparentOf(span.spanContext()),
        added(jobId) {
          if (jobId !== undefined) span.setAttribute('messaging.message.id', jobId);
          span.end();
        },
        failed: (error) => new Ref(span).end(error),
      };
    },

    fetch: (job) => new FetchRun(tracer, job),

    handler(snapshot, run) {
      if (!(snapshot instanceof Ref)) return undefined;
      return new Ref(
        tracer.startSpan(`handle ${run.type}`, { kind: SpanKind.INTERNAL, attributes: { 'skyhook.notification.type': run.type, 'skyhook.company.id': run.companyId } }, snapshot.context),
      );
    },

    shutdown: () => provider.shutdown(),
  };
}
