/** How the CLI shows results to a person: short tables, aligned key-value lines, times to the second. */
export const yesNo = (value: boolean): string => (value ? 'yes' : 'no');
export const truncate = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max - 1)}…` : text);
/** `Name (uuid)`: an id as tables show it, beside its name: a company's, or a destination's URL. */
export const labelled = (names: Map<string, string>, id: string): string => (names.has(id) ? `${names.get(id)} (${id})` : id);
/** 2024-05-01T12:00:03.123Z -> 2024-05-01 12:00:03Z */
export const shortTime = (iso: string): string => iso.replace('T', ' ').replace(/\.\d+Z$/, 'Z');
/** ` until <time>` or ` since <time>`, after a state's status: until when it lasts, or since when (nothing when neither is known). */
export const whenText = (state: { since: string | null; until: string | null }): string =>
  state.until ? ` until ${shortTime(state.until)}` : state.since ? ` since ${shortTime(state.since)}` : '';

function display(value: unknown): string {
  if (value === null || value === undefined) return '-';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value.join(', ');
  return JSON.stringify(value);
}

/** One object as aligned `key: value` lines. */
export function keyValues(object: object): string {
  const entries = Object.entries(object).filter(([, v]) => v !== undefined);
  const width = Math.max(...entries.map(([k]) => k.length)) + 1;
  return entries.map(([k, v]) => `${`${k}:`.padEnd(width)} ${display(v)}`).join('\n');
}

/** Rows as a small aligned table under their headers. */
export function table(headers: string[], rows: string[][]): string {
  const all = [headers, ...rows];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  return all
    .map((r) =>
      r
        .map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

/** A page as a small aligned table, and how to get the next page. */
export function listing<T>(page: { items: T[]; nextCursor: string | null }, noun: string, headers: string[], row: (item: T) => string[]): string {
  if (page.items.length === 0) return `no ${noun}`;
  return `${table(headers, page.items.map(row))}${page.nextCursor ? `\nmore: add --cursor ${page.nextCursor}` : ''}`;
}
