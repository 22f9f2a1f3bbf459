/**
 * What deploy/ gives a platform team, read the way Prometheus and Grafana read it: the alerting rules, the
 * dashboard's queries, and the metric names every PromQL expression of theirs uses. Shared by
 * test/e2e/observability.test.ts (every name is one Skyhook serves) and scripts/check-monitoring.ts
 * (promtool checks the dashboard's queries too).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const RULES_FILE = join(ROOT, 'deploy/prometheus/alerts.yml');
export const RULE_TESTS_FILE = join(ROOT, 'deploy/prometheus/alerts.test.yml');
export const PROMETHEUS_CONFIG = join(ROOT, 'deploy/prometheus/prometheus.yml');
export const DASHBOARD_FILE = join(ROOT, 'deploy/grafana/skyhook-dashboard.json');

export interface AlertRule {
  alert: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export function readRules(): AlertRule[] {
  const doc = parse(readFileSync(RULES_FILE, 'utf8')) as { groups: { name: string; rules: AlertRule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

interface Target {
  expr?: string;
  refId?: string;
  datasource?: { type?: string; uid?: string };
}
export interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  gridPos?: { h: number; w: number; x: number; y: number };
  /** A collapsed row holds its panels. */
  panels?: Panel[];
}
export interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: { name: string; type: string; query?: string | { query: string }; datasource?: { uid?: string } }[] };
}

export function readDashboard(): Dashboard {
  return JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;
}

/** Every panel, those inside collapsed rows included; rows themselves are not panels with queries. */
export function panelsOf(dashboard: Dashboard): Panel[] {
  return dashboard.panels.flatMap((p) => (p.type === 'row' ? (p.panels ?? []) : [p]));
}

/**
 * The dashboard's queries as plain PromQL: Grafana's interval variables become a duration and any other
 * variable (`$company`, used in regex matchers) matches everything.
 */
export function dashboardQueries(dashboard: Dashboard): { panel: string; expr: string }[] {
  const promql = (expr: string) =>
    expr
      .replace(/\$\{?__rate_interval\}?|\$\{?__interval\}?|\$\{?__range\}?/g, '5m')
      .replace(/\$\{?\w+\}?/g, '.*');
  const queries = panelsOf(dashboard).flatMap((p) => (p.targets ?? []).filter((t) => t.expr).map((t) => ({ panel: p.title, expr: promql(t.expr!) })));
  // A query variable's label_values(metric, label) reads that metric too.
  for (const v of dashboard.templating.list) {
    const q = typeof v.query === 'string' ? v.query : v.query?.query;
    const metric = q && /^label_values\(\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*,/.exec(q)?.[1];
    if (metric) queries.push({ panel: `variable ${v.name}`, expr: metric });
  }
  return queries;
}

const NOT_METRICS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'atan2', 'inf', 'nan']);

/**
 * The metric names an expression selects: what is left once strings, label matchers, ranges and label
 * lists (`by (...)`, `on (...)`) are taken out, minus keywords, functions and aggregations (a name followed
 * by `(`), numbers and durations.
 */
export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/#.*$/gm, ' ')
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`/g, ' ')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/gi, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/(?<![\w.:])[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const rest = bare.slice(m.index + m[0].length).trimStart();
    if (NOT_METRICS.has(m[0].toLowerCase()) || rest.startsWith('(')) continue;
    names.add(m[0]);
  }
  return [...names];
}

/**
 * The metric families a /metrics text declares (`# TYPE name type`), and whether a name the rules use is one
 * of them: a histogram's or summary's `_bucket`, `_sum` and `_count` series belong to its family.
 */
export function exposedFamilies(scrape: string): Map<string, string> {
  return new Map([...scrape.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

export function isExposed(name: string, families: Map<string, string>): boolean {
  if (families.has(name)) return true;
  const m = /^(.*)_(bucket|sum|count)$/.exec(name);
  const type = m ? families.get(m[1]!) : undefined;
  return type === 'histogram' || (type === 'summary' && m![2] !== 'bucket');
}

/** Series Prometheus itself adds to every target: not Skyhook's to serve. */
export const PROMETHEUS_OWN = new Set(['up', 'scrape_duration_seconds', 'scrape_samples_scraped']);
