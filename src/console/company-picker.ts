/**
 * The company picker of the notifications and the leads & quotes pages (SPEC §13), at any number of
 * companies: a text field for part of a name or a pasted id, and a hidden `companyId` holding the pick.
 * As the operator types, htmx asks GET /console/companies/search for at most 20 names and puts them in a
 * listbox, which console.js makes a keyboard-usable combobox; a pick fills the hidden id, and the form sends
 * only `companyId`. Without script the text itself is sent as `company` and read here: a pasted id, or a
 * name that designates one company.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { isUuid } from '../db/pagination.js';
import { storableText } from '../lib/json-body.js';
import { badRequest, type Problem } from '../lib/problem.js';
import type { CompaniesService } from '../services/companies.service.js';
import { html, type Html } from './html.js';
import type { PageContext } from './layout.js';
import type { ConsoleKit } from './kit.js';
import { ownCompany } from '../access/guard.js';

/** How many names the picker suggests at a time. */
export const SUGGESTIONS = 20;

const companyText = z.string().max(200).refine(storableText, 'must not contain a NUL character or a lone surrogate');
const searchQuery = z.object({ company: companyText.default('') });

/** What the picker holds: the company picked (if any), and the text its field shows. */
export interface Picked {
  companyId?: string;
  text: string;
}

type Companies = Pick<CompaniesService, 'search' | 'names'>;
/** Whether a text is a company id (not a type guard: a text that is not one is still text). */
const isId = (text: string): boolean => isUuid(text);

/**
 * The companies as a company key may see them: its own, and no other's name or id (SPEC §13: its console
 * is that company's alone), so that a picked name or id of another reads as no company at all.
 */
function reachOf(companies: Companies, own: string | undefined): Companies {
  if (own === undefined) return companies;
  const ownName = async () => (await companies.names([own])).get(own.toLowerCase());
  return {
    names: (ids) => companies.names(ids.filter((id) => id.toLowerCase() === own.toLowerCase())),
    search: async (text) => {
      const name = await ownName();
      const t = text.trim().toLowerCase();
      return name !== undefined && (name.toLowerCase().includes(t) || t === own.toLowerCase()) ? [{ id: own, name }] : [];
    },
  };
}

/**
 * The company a page's query picks. A query without `company` (a link, or the form sent with script) is its
 * `companyId`. One with `company` (the form sent without script, or its text not picked) is that text: empty
 * for none; an id; the name of the company `companyId` already holds; else the one company whose whole name
 * it is (in any case), or the one whose name contains it. `query` is the page's query with `companyId` as
 * picked and `company` removed; `problem`, what to show when the text designates no single company.
 * `own`: a company key's company, the only one it can pick or be told of.
 */
export async function pickCompany(all: Companies, raw: unknown, own: string | undefined): Promise<{ query: Record<string, unknown>; picked: Picked; problem?: Problem }> {
  const companies = reachOf(all, own);
  const { company, ...rest } = (raw ?? {}) as Record<string, unknown>;
  const givenId = typeof rest.companyId === 'string' ? rest.companyId.trim() : '';
  const nameOf = async (id: string) => (isId(id) ? (await companies.names([id])).get(id.toLowerCase()) : undefined);
  if (company === undefined) return { query: rest, picked: { companyId: givenId || undefined, text: givenId ? ((await nameOf(givenId)) ?? givenId) : '' } };

  const given = companyText.safeParse(company);
  if (!given.success) {
    const message = given.error.issues[0]?.message ?? 'is not a company';
    return { query: rest, picked: { text: typeof company === 'string' ? company : '' }, problem: badRequest(`Please correct: company ${message}`, [{ field: 'company', message }]) };
  }
  const text = given.data.trim();
  const picked = (companyId: string | undefined, shown = text) => ({ query: { ...rest, companyId }, picked: { companyId, text: shown } });
  if (text === '') return picked(undefined);
  if (isId(text)) return picked(text.toLowerCase(), (await nameOf(text)) ?? text);
  if (givenId && (await nameOf(givenId)) === text) return picked(givenId);

  const found = await companies.search(text, SUGGESTIONS + 1);
  const named = found.filter((c) => c.name.toLowerCase() === text.toLowerCase());
  const only = named.length === 1 ? named[0] : named.length === 0 && found.length === 1 ? found[0] : undefined;
  if (only) return picked(only.id, only.name);
  const candidates = (named.length > 0 ? named : found).slice(0, 5).map((c) => ({ field: 'company', message: `${c.name}: ${c.id}` }));
  const detail =
    found.length === 0
      ? `No company's name contains “${text}”.`
      : named.length > 1
        ? `${named.length} companies are named “${text}”: paste the id of the one you mean.`
        : `${found.length > SUGGESTIONS ? `More than ${SUGGESTIONS}` : found.length} companies match “${text}”: type more of the name, or paste the company's id.`;
  return { query: rest, picked: { text }, problem: badRequest(detail, candidates) };
}

/** The picker's fields (a grid cell of a `filters` form): `id` is its text field's, which `label` names. */
export function companyPicker(ctx: PageContext, opts: { id: string; label: string; picked: Picked; placeholder: string }): Html {
  const listbox = `${opts.id}-options`;
  return html`<div class="field wide picker" data-company-picker>
    <label for="${opts.id}">${opts.label}</label>
    <input id="${opts.id}" name="company" value="${opts.picked.text}" placeholder="${opts.placeholder}" maxlength="200" autocomplete="off" spellcheck="false" data-listbox="${listbox}"
      hx-get="${ctx.base}/companies/search" hx-trigger="input changed delay:200ms, picker:open" hx-target="#${listbox}" hx-swap="innerHTML" hx-sync="this:replace">
    <input type="hidden" name="companyId" value="${opts.picked.companyId ?? ''}">
    <ul id="${listbox}" class="picker-options" role="listbox" aria-label="${opts.label}: suggestions" hidden></ul>
    <span class="visually-hidden" role="status" aria-live="polite"></span>
  </div>`;
}

/** The picker's suggestions: the companies whose name contains the text (or whose id it is), as listbox options. */
export function companyPickerRoutes(scope: FastifyInstance, kit: ConsoleKit): void {
  scope.get('/companies/search', async (req, reply) => {
    const parsed = searchQuery.safeParse(req.query ?? {});
    if (!parsed.success) throw badRequest(`Please correct: company ${parsed.error.issues[0]?.message ?? 'is not a search'}`, parsed.error.issues.map((i) => ({ field: 'company', message: i.message })));
    // A company key finds only its own company (reachOf), as the pages' picker reads only it.
    const found = await reachOf(kit.deps.services.companies, ownCompany(req)).search(parsed.data.company, SUGGESTIONS);
    const options = found.map(
      (c) => html`<li role="option" aria-selected="false" data-id="${c.id}" data-name="${c.name}"><span class="picker-name">${c.name}</span> <span class="picker-id">${c.id}</span></li>`,
    );
    return kit.send(reply, found.length === 0 ? html`<li role="option" aria-disabled="true" class="picker-none">No company matches.</li>` : html`${options}`);
  });
}
