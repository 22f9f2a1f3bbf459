/**
 * promtool over what deploy/ ships (CI: .ci/run; by hand: `npx tsx scripts/check-monitoring.ts`):
 *
 * 1. `promtool check rules` on deploy/prometheus/alerts.yml: the rules parse, their templates too;
 * 2. `promtool check config` on deploy/prometheus/prometheus.yml (the compose stack's), which loads the rules;
 * 3. the dashboard's queries, as recording rules of a scratch file, through `promtool check rules`: each
 *    one is valid PromQL (Grafana's $__rate_interval read as 5m, other variables as `.*`);
 * 4. `promtool test rules` on deploy/prometheus/alerts.test.yml: each alert fires, or stays quiet, on the
 *    series it is given. promtool compares every annotation; a rule's `runbook` is static text, so it is
 *    copied here from alerts.yml into each expected alert rather than repeated in the test file.
 *
 * Which metric names the rules and the dashboard use, and that Skyhook serves each, is
 * test/e2e/observability.test.ts's part. Exits 1 on the first failure, 2 when promtool is not installed.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { parse, stringify } from 'yaml';
import { PROMETHEUS_CONFIG, ROOT, RULES_FILE, RULE_TESTS_FILE, dashboardQueries, readDashboard, readRules } from '../test/helpers/monitoring.js';

const promtool = process.env.PROMTOOL ?? 'promtool';

function run(args: string[]): void {
  console.log(`$ promtool ${args.map((a) => (a.startsWith(ROOT) ? relative(ROOT, a) : a)).join(' ')}`);
  const res = spawnSync(promtool, args, { cwd: ROOT, encoding: 'utf8' });
  if (res.error) {
    console.error(`check-monitoring: cannot run ${promtool}: ${res.error.message} (Debian: apt-get install prometheus)`);
    process.exit(2);
  }
  process.stdout.write(res.stdout);
  process.stderr.write(res.stderr);
  if (res.status !== 0) {
    console.error(`check-monitoring: promtool ${args[0]} ${args[1]} failed (exit ${res.status})`);
    process.exit(1);
  }
}

const scratch = mkdtempSync(join(tmpdir(), 'skyhook-monitoring-'));
try {
  run(['--version']);
  run(['check', 'rules', RULES_FILE]);
  run(['check', 'config', PROMETHEUS_CONFIG]);

  const queries = dashboardQueries(readDashboard());
  const dashboardRules = join(scratch, 'dashboard-queries.yml');
  writeFileSync(
    dashboardRules,
    stringify({ groups: [{ name: 'dashboard', rules: queries.map((q, i) => ({ record: `skyhook_dashboard:query_${i + 1}`, expr: q.expr, labels: { panel: q.panel } })) }] }),
  );
  console.log(`(the dashboard's ${queries.length} queries, as recording rules)`);
  run(['check', 'rules', dashboardRules]);

  const runbooks = new Map(readRules().map((r) => [r.alert, r.annotations?.runbook]));
  type Expected = { exp_labels?: Record<string, string>; exp_annotations?: Record<string, string> };
  const tests = parse(readFileSync(RULE_TESTS_FILE, 'utf8')) as {
    rule_files: string[];
    tests: { alert_rule_test?: { alertname: string; exp_alerts?: Expected[] }[] }[];
  };
  tests.rule_files = [RULES_FILE];
  for (const t of tests.tests) {
    for (const check of t.alert_rule_test ?? []) {
      const runbook = runbooks.get(check.alertname);
      if (!runbooks.has(check.alertname)) throw new Error(`${relative(ROOT, RULE_TESTS_FILE)} tests ${check.alertname}, which alerts.yml does not define`);
      for (const exp of check.exp_alerts ?? []) if (runbook !== undefined) exp.exp_annotations = { ...exp.exp_annotations, runbook };
    }
  }
  const testFile = join(scratch, 'alerts.test.yml');
  writeFileSync(testFile, stringify(tests, { lineWidth: 0 }));
  console.log(`(${relative(ROOT, RULE_TESTS_FILE)}, with each rule's runbook)`);
  run(['test', 'rules', testFile]);
  console.log('check-monitoring: rules, config, dashboard queries and rule tests pass');
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
