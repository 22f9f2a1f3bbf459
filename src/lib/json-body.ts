/**
 * Request bodies as JSON that PostgreSQL can store: strict UTF-8 (no silent replacement characters),
 * valid JSON, no NUL or lone UTF-16 surrogate anywhere (jsonb and text refuse both, and a refusal there
 * would be a 500 instead of the caller's 400), and no number PostgreSQL's numeric cannot hold. The text is
 * then stored exactly as received, numbers included, whatever JavaScript reads them as (`1e400` is
 * Infinity to JSON.parse, and an exact numeric to jsonb); a number numeric cannot hold is a 400 naming it.
 */
import { badRequest } from './problem.js';

const utf8 = new TextDecoder('utf-8', { fatal: true });

export function decodeJsonBody(raw: Buffer): unknown {
  return decodeJson(raw).value;
}

/** The parsed value and the text it was parsed from (valid, storable JSON: it can be stored as is). */
export function decodeJson(raw: Buffer): { value: unknown; text: string } {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw badRequest('The body is not valid UTF-8.');
  }
  if (text.trim() === '') throw badRequest('The body is empty.');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw badRequest('The body is not valid JSON.');
  }
  // Both can only arrive as \\u escapes, so the walk runs only when the text has one.
  const unstorable = /\\u/i.test(text) ? unstorableTextAt(value) : undefined;
  if (unstorable !== undefined) {
    const field = ['body', ...unstorable].join('.');
    throw badRequest(`The body contains a NUL character or a lone surrogate (\\uD800-\\uDFFF) at ${field}, which cannot be stored.`, [
      { field, message: 'must not contain a NUL character or a lone surrogate' },
    ]);
  }
  if (MAYBE_BEYOND_NUMERIC.test(text)) {
    const problem = numberBeyondNumeric(text);
    if (problem) throw badRequest(problem);
  }
  return { value, text };
}

/**
 * PostgreSQL's numeric (jsonb's numbers): a weight of int16 base-10000 digits, so at most 131072 decimal
 * digits before the point, and a 14-bit display scale, so at most 16383 after it. numeric_in refuses an
 * exponent of ±1073741823 (INT_MAX / 2) or more before it looks at the value, even on a zero; PostgreSQL 16
 * reads +1073741823 too, so there `0e1073741823` alone is refused here though jsonb would take it.
 */
const MAX_DIGITS_BEFORE_POINT = 131072;
const MAX_DIGITS_AFTER_POINT = 16383;
const MAX_EXPONENT = 1073741822;
const LIMITS = `PostgreSQL's numeric holds at most ${MAX_DIGITS_BEFORE_POINT} digits before the decimal point and ${MAX_DIGITS_AFTER_POINT} after it`;

/**
 * The quick test, run on every body: without a 5-digit exponent (|e| <= 9999) and a run of 6385 digits, a
 * number has at most 6384 + 9999 = 16383 digits after the point and far fewer than 131072 before it.
 * The lookbehind starts a run's match at its first digit only: without it a body of 6384-digit runs
 * costs seconds (each position of a run would be tried again).
 */
const MAYBE_BEYOND_NUMERIC = /[eE][+-]?\d{5}|(?<!\d)\d{6385}/;

/** A JSON number token: integer part, fraction digits, exponent sign and digits. */
const NUMBER_TOKEN = /-?(0|[1-9]\d*)(?:\.(\d+))?(?:[eE]([+-]?)(\d+))?/y;

/**
 * The exact check, once the quick test matched: why the first number of valid JSON `text` that numeric
 * cannot hold is refused, or undefined when every number fits. Strings are skipped (digits in them are text).
 */
function numberBeyondNumeric(text: string): string | undefined {
  let i = 0;
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i = afterString(text, i);
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      NUMBER_TOKEN.lastIndex = i;
      const m = NUMBER_TOKEN.exec(text);
      if (!m) {
        i++; // not a number after all (the text is not JSON): nothing of numeric's to judge here
        continue;
      }
      const why = whyBeyondNumeric(m[1]!, m[2] ?? '', m[3] === '-', m[4]);
      if (why) return `The body holds a number PostgreSQL cannot store, ${shorten(m[0])}: ${why}.`;
      i = NUMBER_TOKEN.lastIndex;
    } else {
      i++;
    }
  }
  return undefined;
}

/** Where the string opening at `start` ends (after its closing quote): a quote after an even run of backslashes. */
function afterString(text: string, start: number): number {
  let from = start + 1;
  for (;;) {
    const quote = text.indexOf('"', from);
    if (quote < 0) return text.length;
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    from = quote + 1;
  }
}

function whyBeyondNumeric(integer: string, fraction: string, negativeExponent: boolean, exponentDigits: string | undefined): string | undefined {
  let exponent = 0;
  if (exponentDigits !== undefined) {
    const digits = exponentDigits.replace(/^0+/, '');
    if (digits.length > String(MAX_EXPONENT).length || Number(digits) > MAX_EXPONENT) {
      return `its exponent is beyond ±${MAX_EXPONENT}, the most PostgreSQL reads, and ${LIMITS}`;
    }
    exponent = negativeExponent ? -Number(digits) : Number(digits);
  }
  // numeric keeps every written digit after the point, zeros included: 1.000e-2 has five.
  const after = Math.max(0, fraction.length - exponent);
  if (after > MAX_DIGITS_AFTER_POINT) return `it would have ${after} digits after the decimal point, and ${LIMITS}`;
  // Leading zeros are not kept: the first non-zero digit's place says how many digits come before the point.
  let first: number | undefined;
  if (integer !== '0') first = integer.length - 1;
  else if (fraction.search(/[1-9]/) >= 0) first = -1 - fraction.search(/[1-9]/);
  const before = first === undefined ? 0 : first + exponent + 1;
  if (before > MAX_DIGITS_BEFORE_POINT) return `it would have ${before} digits before the decimal point, and ${LIMITS}`;
  return undefined;
}

/** A number as the detail shows it: whole when short, else its ends and its length. */
function shorten(token: string): string {
  return token.length <= 40 ? token : `${token.slice(0, 20)}…${token.slice(-12)} (${token.length} characters)`;
}

/** Text PostgreSQL can store: no NUL character (text refuses it) and no lone UTF-16 surrogate. */
export const storableText = (s: string): boolean => !s.includes('\u0000') && s.isWellFormed();

/** Where a parsed JSON value holds text PostgreSQL cannot store (NUL, a lone UTF-16 surrogate): the keys to it (a bad key's own, JSON-quoted, last), or undefined. */
export function unstorableTextAt(root: unknown): string[] | undefined {
  const stack: { value: unknown; path: string[] }[] = [{ value: root, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (typeof value === 'string' && !storableText(value)) return path;
    if (typeof value === 'object' && value !== null) {
      for (const [key, child] of Object.entries(value)) {
        if (!storableText(key)) return [...path, JSON.stringify(key)];
        stack.push({ value: child, path: [...path, key] });
      }
    }
  }
  return undefined;
}
