/**
 * The table of who may call what, as docs/access.md shows it: made from the app's own route declarations and
 * the roles' table, so it cannot drift (test/unit/access-table.test.ts compares the file with it).
 */
import { GRANTS, PERMISSIONS, ROLES, type Access } from './roles.js';

const WHO: Record<Exclude<Access, keyof typeof PERMISSIONS>, string> = {
  public: 'anyone',
  metrics: 'anyone, or `METRICS_TOKEN` when it is set',
};

/** Markdown: the permissions by role, then every route (plugin routes grouped by their prefix) with its permission. */
export function accessMarkdown(routes: { method: string; url: string; access: Access }[]): string {
  const yes = (b: boolean) => (b ? 'yes' : '–');
  const permissions = (Object.keys(PERMISSIONS) as (keyof typeof PERMISSIONS)[]).map(
    (p) => `| \`${p}\` | ${PERMISSIONS[p]} | ${ROLES.map((r) => yes(GRANTS[r].includes(p))).join(' | ')} |`,
  );
  // Each route once (not its HEAD twin); a plugin's many routes under one line of their prefix.
  const grouped = new Map<string, Access>();
  for (const r of routes) {
    if (r.method === 'HEAD') continue;
    const url = r.url.startsWith('/admin/queues') ? '/admin/queues/…' : r.url.startsWith('/docs') ? '/docs/…' : r.url.startsWith('/console/assets') ? '/console/assets/…' : r.url;
    const method = url.endsWith('/…') ? '*' : r.method;
    grouped.set(`${method} ${url}`, r.access);
  }
  const rows = [...grouped].sort(([a], [b]) => a.split(' ')[1]!.localeCompare(b.split(' ')[1]!) || a.localeCompare(b)).map(([route, access]) => {
    const who = access in WHO ? WHO[access as keyof typeof WHO] : `\`${access}\`: ${ROLES.filter((r) => GRANTS[r].includes(access as keyof typeof PERMISSIONS)).join(', ')}`;
    return `| \`${route}\` | ${who} |`;
  });
  return [
    '# Who may do what',
    '',
    'Generated from the route declarations and `src/access/roles.ts` by `npm run docs:access`; CI fails when this file',
    'and the code disagree (`test/unit/access-table.test.ts`). A `company` key has its role\'s permissions over its own',
    "company only: another company's ids answer 404, and every list holds its own rows.",
    '',
    '## Permissions by role',
    '',
    `| permission | what | ${ROLES.join(' | ')} |`,
    `|---|---|${ROLES.map(() => '---').join('|')}|`,
    ...permissions,
    '',
    '## Every route',
    '',
    '| route | who may call it |',
    '|---|---|',
    ...rows,
    '',
  ].join('\n');
}
