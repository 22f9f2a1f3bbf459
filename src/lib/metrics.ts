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

export function createMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'skyhook_' });
  /** In this registry only, never prom-client's global one: each runtime (and test) has its own. */
  const registered = <C extends object>(config: C) => ({ ...config, registers: [registry] });
  return {
    registry,
    received: new Counter(registered({
      name: 'skyhook_notifications_received_total',
      help: 'Notifications answered by the receiver, by outcome (stored, discarded, not_fetched: an href under none of the company base URLs, or the HTTP status of a refusal), across every company',
      labelNames: ['outcome'] as const,
    })),
    processingLatency: new Histogram(registered({
      name: 'skyhook_processing_latency_seconds',
      help: 'From a notification received to its final status',
      labelNames: ['status'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600],
    })),
    fetchOutcomes: new Counter(registered({
      name: 'skyhook_fetch_outcomes_total',
      help: 'Resource GETs by outcome (ok, gone, soft_error, unauthorized, retry, failed)',
      labelNames: ['outcome'] as const,
    })),
    marketplaceCalls: new Counter(registered({
      name: 'skyhook_marketplace_calls_total',
      help: 'Calls to the marketplace API by operation and outcome (ok or the error kind)',
      labelNames: ['operation', 'outcome'] as const,
    })),
    jobsHeld: new Gauge(registered({
      name: 'skyhook_jobs_held',
      help: 'Fetch jobs waiting for the receiver in the same process to be no longer flooded (role all)',
    })),
    errors: new Counter(registered({
      name: 'skyhook_errors_total',
      help: 'Errors handled by carrying on (a connection lost and retried, a relay or retention pass that failed), by kind',
      labelNames: ['kind'] as const,
    })),
    queueDepth: new Gauge(registered({ name: 'skyhook_queue_depth', help: 'Jobs in the fetch queue by state', labelNames: ['state'] as const })),
    oldestPendingAge: new Gauge(registered({
      name: 'skyhook_oldest_pending_age_seconds',
      help: 'Age of the oldest notification not yet processed, per company with a backlog',
      labelNames: ['company'] as const,
    })),
    notificationsPending: new Gauge(registered({
      name: 'skyhook_notifications_pending',
      help: 'Notifications not yet processed (received or queued), per company with a backlog',
      labelNames: ['company'] as const,
    })),
    companies: new Gauge(registered({
      name: 'skyhook_companies',
      help: 'Companies in each state (SPEC §5.1 F5): every company counted, ok ones included',
      labelNames: ['state'] as const,
    })),
    connectionWarning: new Gauge(registered({
      name: 'skyhook_connection_warning',
      help: "1 for each company whose marketplace connection needs an operator soon (SPEC §14), by kind: connection_unused (no successful call for 50 days: the marketplace deactivates it at 60) or client_secret_expiring (its OAuth client secret expires within 14 days, or did)",
      labelNames: ['company', 'kind'] as const,
    })),
    companyState: new Gauge(registered({
      name: 'skyhook_company_state',
      help: "1 for each company not ok, in its one state (SPEC §5.1 F5): paused (credentials refused: its notifications wait for new ones), throttled, unreachable or unchecked; skyhook_companies counts every state",
      labelNames: ['company', 'state'] as const,
    })),
    deliveries: new Counter(registered({
      name: 'skyhook_deliveries_total',
      help: "Delivery attempts to companies' destinations by outcome (delivered, retry, failed, gone), and deliveries that ended expired (pending past RETENTION_DAYS)",
      labelNames: ['outcome'] as const,
    })),
    deliveryLatency: new Histogram(registered({
      name: 'skyhook_delivery_latency_seconds',
      help: 'From an event stored to its delivery answered 2xx (SPEC §5.2)',
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 1800, 3600, 21600, 86400],
    })),
    destinationState: new Gauge(registered({
      name: 'skyhook_destination_state',
      help: "1 for each destination's one state (SPEC §5.2): ok, failing (its circuit open), throttled or disabled",
      labelNames: ['destination', 'company', 'state'] as const,
    })),
    deliveriesPending: new Gauge(registered({
      name: 'skyhook_deliveries_pending',
      help: 'Deliveries waiting to be answered, and the age of the oldest, per destination',
      labelNames: ['destination', 'company'] as const,
    })),
    oldestPendingDeliveryAge: new Gauge(registered({
      name: 'skyhook_oldest_pending_delivery_age_seconds',
      help: "Age of a destination's oldest delivery not yet answered: the delivery lag",
      labelNames: ['destination', 'company'] as const,
    })),
    partitionDefaultRows: new Gauge(registered({
      name: 'skyhook_partition_default_rows',
      help: "Rows in a growing table's default partition (SPEC §5.3): none while partitions are made ahead; any means `skyhook partitions maintain` has not run",
      labelNames: ['table'] as const,
    })),
    ready: new Gauge(registered({
      name: 'skyhook_ready',
      help: 'Whether /readyz would answer 200 (started, PostgreSQL and Redis answer): 1 or 0, as of the last /readyz or scrape',
    })),
    dependencyUp: new Gauge(registered({
      name: 'skyhook_dependency_up',
      help: 'Whether PostgreSQL or Redis answered this process (1) or not (0), as of the last /readyz or scrape',
      labelNames: ['dependency'] as const,
    })),
  };
}

export type Metrics = ReturnType<typeof createMetrics>;
