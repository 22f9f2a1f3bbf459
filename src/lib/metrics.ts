/**
 * Prometheus metrics (SPEC §7): one registry per process (and per test runtime). Counters are updated
 * where things happen; gauges that need a query (queue depth, oldest pending age, company states,
 * readiness) are collected when /metrics is scraped, so an idle process does no work for them.
 * Per-company series exist only for the companies that carry information (a state other than ok, a
 * backlog); the rest are in totals, so a scrape's size does not grow with healthy companies
 * (docs/decisions.md, "Metrics at ten thousand companies").
 * deploy/prometheus/alerts.yml and deploy/grafana/skyhook-dashboard.json use these names, and
 * test/e2e/observability.test.ts checks that every name they use is served here.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** Seconds, from 5 ms to an hour; a delivery's latency goes on to a day. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600];

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'skyhook_' });
  // In this registry only, never prom-client's global one: each runtime (and test) has its own.
  const registers = [registry];
  const counter = <L extends string = never>(name: string, labelNames: readonly L[], help: string) => new Counter({ name, help, labelNames, registers });
  const gauge = <L extends string = never>(name: string, labelNames: readonly L[], help: string) => new Gauge({ name, help, labelNames, registers });
  const histogram = <L extends string = never>(name: string, buckets: number[], labelNames: readonly L[], help: string) => new Histogram({ name, help, buckets, labelNames, registers });
  return {
    registry,
    received: counter('skyhook_notifications_received_total', ['outcome'],
      'Notifications answered by the receiver, by outcome (stored, discarded, not_fetched: an href under none of the company base URLs, or the HTTP status of a refusal), across every company'),
    processingLatency: histogram('skyhook_processing_latency_seconds', LATENCY_BUCKETS, ['status'],
      'From a notification received to its final status'),
    fetchOutcomes: counter('skyhook_fetch_outcomes_total', ['outcome'],
      'Resource GETs by outcome (ok, gone, soft_error, unauthorized, retry, failed)'),
    marketplaceCalls: counter('skyhook_marketplace_calls_total', ['operation', 'outcome'],
      'Calls to the marketplace API by operation and outcome (ok or the error kind)'),
    jobsHeld: gauge('skyhook_jobs_held', [],
      'Fetch jobs waiting for the receiver in the same process to be no longer flooded (role all)'),
    errors: counter('skyhook_errors_total', ['kind'],
      'Errors handled by carrying on (a connection lost and retried, a relay or retention pass that failed), by kind'),
    queueDepth: gauge('skyhook_queue_depth', ['state'],
      'Jobs in the fetch queue by state'),
    oldestPendingAge: gauge('skyhook_oldest_pending_age_seconds', ['company'],
      'Age of the oldest notification not yet processed, per company with a backlog'),
    notificationsPending: gauge('skyhook_notifications_pending', ['company'],
      'Notifications not yet processed (received or queued), per company with a backlog'),
    companies: gauge('skyhook_companies', ['state'],
      'Companies in each state (SPEC §5.1 F5): every company counted, ok ones included'),
    connectionWarning: gauge('skyhook_connection_warning', ['company', 'kind'],
      "1 for each company whose marketplace connection needs an operator soon (SPEC §14), by kind: connection_unused (no successful call for 50 days: the marketplace deactivates it at 60) or client_secret_expiring (its OAuth client secret expires within 14 days, or did)"),
    companyState: gauge('skyhook_company_state', ['company', 'state'],
      "1 for each company not ok, in its one state (SPEC §5.1 F5): paused (credentials refused: its notifications wait for new ones), throttled, unreachable or unchecked; skyhook_companies counts every state"),
    deliveries: counter('skyhook_deliveries_total', ['outcome'],
      "Delivery attempts to companies' destinations by outcome (delivered, retry, failed, gone), and deliveries that ended expired (pending past RETENTION_DAYS)"),
    deliveryLatency: histogram('skyhook_delivery_latency_seconds', [...LATENCY_BUCKETS, 21600, 86400], [],
      'From an event stored to its delivery answered 2xx (SPEC §5.2)'),
    destinationState: gauge('skyhook_destination_state', ['destination', 'company', 'state'],
      "1 for each destination's one state (SPEC §5.2): ok, failing (its circuit open), throttled or disabled"),
    deliveriesPending: gauge('skyhook_deliveries_pending', ['destination', 'company'],
      'Deliveries waiting to be answered, and the age of the oldest, per destination'),
    oldestPendingDeliveryAge: gauge('skyhook_oldest_pending_delivery_age_seconds', ['destination', 'company'],
      "Age of a destination's oldest delivery not yet answered: the delivery lag"),
    partitionDefaultRows: gauge('skyhook_partition_default_rows', ['table'],
      "Rows in a growing table's default partition (SPEC §5.3): none while partitions are made ahead; any means `skyhook partitions maintain` has not run"),
    ready: gauge('skyhook_ready', [],
      'Whether /readyz would answer 200 (started, PostgreSQL and Redis answer): 1 or 0, as of the last /readyz or scrape'),
    dependencyUp: gauge('skyhook_dependency_up', ['dependency'],
      'Whether PostgreSQL or Redis answered this process (1) or not (0), as of the last /readyz or scrape'),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
