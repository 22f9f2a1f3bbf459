/** The console's page frame and the small pieces every page uses. Every interpolation is escaped (html.ts). */
import type { Problem } from '../lib/problem.js';
import { html, type Html, type Interpolation } from './html.js';

import { may, type Permission, type Principal } from '../access/roles.js';

export interface PageContext {
  /** The console's URL path: PUBLIC_BASE_URL's path + /console (a proxy may serve Skyhook under a prefix). */
  base: string;
  /** The session's CSRF token (absent on the sign-in page). */
  csrfToken?: string;
  /** The URL of a static file, by name (content-hashed). */
  asset: (name: string) => string;
  /** Who is signed in (absent on the sign-in page): pages show only the actions their role may take. */
  principal?: Principal;
}

/** Whether the signed-in key's role may do this: an action it may not is not shown (and the server refuses it anyway). */
export const can = (ctx: PageContext, permission: Permission): boolean => ctx.principal !== undefined && may(ctx.principal.role, permission);

/**
 * The crumbs down to a company's page (`anchor`: a section of it): from the companies, or, for a company key
 * (whose companies list is its company), from its company's name alone. On the company's own page, `here`.
 */
export const companyCrumbs = (ctx: PageContext, company: { id: string; name: string }, opts: { anchor?: string; here?: boolean } = {}): Html => {
  const name = opts.here ? html`${company.name}` : html`<a href="${ctx.base}/companies/${company.id}${opts.anchor ?? ''}">${company.name}</a>`;
  return ctx.principal?.companyId ? name : html`<a href="${ctx.base}/companies">Companies</a> › ${name}`;
};

/** `markup` when the signed-in key's role may do `permission`, else nothing. */
export const allowed = (ctx: PageContext, permission: Permission, markup: Html): Html | '' => (can(ctx, permission) ? markup : '');

const NAV: [string, string][] = [
  ['', 'Overview'],
  ['/notifications', 'Notifications'],
  ['/companies', 'Companies'],
  ['/outbound', 'Leads & quotes'],
  ['/audit', 'Audit log'],
];
const KEYS_NAV: [string, string] = ['/keys', 'Keys'];

export function page(ctx: PageContext, opts: { title: string; section?: string; body: Interpolation; charts?: boolean; notice?: Interpolation }): Html {
  const signedIn = ctx.csrfToken !== undefined;
  // A company key's console is its company's alone: its company's page stands for the overview and the companies.
  const own = ctx.principal?.companyId;
  const nav: [string, string][] = own ? [[`/companies/${own}`, 'My company'], ...NAV.filter(([path]) => path !== '' && path !== '/companies')] : can(ctx, 'keys') ? [...NAV, KEYS_NAV] : NAV;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="htmx-config" content='{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"selfRequestsOnly":true,"historyCacheSize":0}'>
${signedIn ? html`<meta name="csrf-token" content="${ctx.csrfToken}">` : ''}
<title>${opts.title} · Skyhook console</title>
<link rel="icon" href="${ctx.asset('favicon.svg')}" type="image/svg+xml">
<link rel="stylesheet" href="${ctx.asset('console.css')}">
${opts.charts ? html`<link rel="stylesheet" href="${ctx.asset('uplot.css')}">` : ''}
<script src="${ctx.asset('htmx.js')}" defer></script>
<script src="${ctx.asset('htmx-sse.js')}" defer></script>
${opts.charts ? html`<script src="${ctx.asset('uplot.js')}" defer></script>` : ''}
<script src="${ctx.asset('console.js')}" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to content</a>
<header class="top">
  <a class="brand" href="${ctx.base}">Skyhook</a>
  ${
    signedIn
      ? html`<nav aria-label="Console">
    <ul>${nav.map(([path, label]) => html`<li><a href="${ctx.base}${path}"${opts.section === path ? html` aria-current="page"` : ''}>${label}</a></li>`)}</ul>
  </nav>
  <form method="post" action="${ctx.base}/sign-out" class="sign-out">${ctx.principal ? html`<span class="muted">${ctx.principal.name} · ${ctx.principal.role}</span> ` : ''}${csrfField(ctx)}<button type="submit" class="link">Sign out</button></form>`
      : ''
  }
</header>
<main id="main">
<div id="flash" role="status" aria-live="polite">${opts.notice ?? ''}</div>
${opts.body}
</main>
</body>
</html>`;
}

export const csrfField = (ctx: PageContext): Html => html`<input type="hidden" name="_csrf" value="${ctx.csrfToken ?? ''}">`;

export const notice = (text: Interpolation, kind: 'ok' | 'error' | 'warn' = 'ok'): Html => html`<p class="notice ${kind}">${text}</p>`;

/** What the action a redirect came back from did (`?done=<key>`), from the page's own `messages`. */
export function doneNotice(query: unknown, messages: Record<string, string>): Html | undefined {
  const done = (query as { done?: unknown }).done;
  return typeof done === 'string' && Object.hasOwn(messages, done) ? notice(messages[done]!) : undefined;
}

/** An error in the page (SPEC §13: never a raw JSON dump): its title, what happened, and each field named. */
export function problemBox(p: Problem): Html {
  const errors = p.extra.errors;
  return html`<div class="notice error" role="alert">
  <p><strong>${p.title}</strong> (${p.status})${p.detail ? html`: ${p.detail}` : ''}</p>
  ${errors?.length ? html`<ul>${errors.map((e) => html`<li><code>${e.field}</code> ${e.message}</li>`)}</ul>` : ''}
</div>`;
}

/** A status as a small badge (the class only picks a colour; the word is always there). */
export const statusBadge = (status: string): Html => html`<span class="badge s-${status}">${status}</span>`;

/**
 * A table in its scrolling frame. A heading given as text is a plain column heading; one given as markup (a
 * `<th>` of its own: numeric, sortable) is inserted as it is, and `false` leaves the column out.
 */
export function table(headings: (string | Html | false)[], rows: Interpolation, opts: { class?: string; caption?: string } = {}): Html {
  return html`<div class="table-wrap"><table${opts.class ? html` class="${opts.class}"` : ''}>
  ${opts.caption ? html`<caption class="visually-hidden">${opts.caption}</caption>` : ''}
  <thead><tr>${headings.map((h) => (typeof h === 'string' ? html`<th scope="col">${h}</th>` : h))}</tr></thead>
  <tbody>${rows}</tbody>
</table></div>`;
}

/** The heading of a column of numbers (right-aligned). */
export const numHeading = (label: string): Html => html`<th scope="col" class="num">${label}</th>`;

/** The Newest and Older links of a list paged by cursor: `href` builds a page's URL from its cursor (none: the newest). */
export const pager = (label: string, href: (cursor?: string) => string, cursor: string | undefined, next: string | null, older = 'Older →'): Html =>
  html`<nav class="pager" aria-label="${label}">${cursor ? html`<a href="${href()}">Newest</a>` : ''}${next ? html`<a href="${href(next)}">${older}</a>` : ''}</nav>`;

/** A time in UTC, readable, with the machine-readable value kept. */
export function time(iso: string | null | undefined, opts: { ms?: boolean } = {}): Html {
  if (!iso) return html`<span class="muted">–</span>`;
  const shown = opts.ms ? iso.replace('T', ' ').replace('Z', ' UTC') : iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z').replace('Z', ' UTC');
  return html`<time datetime="${iso}">${shown}</time>`;
}

export function ago(seconds: number): string {
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
  return `${Math.floor(seconds / 86_400)} d`;
}

/** JSON, indented, as text: a notification body is attacker-influenced and never markup. */
export const jsonBlock = (value: unknown, label: string): Html =>
  html`<pre class="json" tabindex="0" aria-label="${label}"><code>${JSON.stringify(value, null, 2) ?? 'null'}</code></pre>`;

/** A query string from the non-empty values. */
export function query(params: Record<string, string | number | undefined | null>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
