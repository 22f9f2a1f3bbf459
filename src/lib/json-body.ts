/**
 * Request bodies as JSON that PostgreSQL can store: strict UTF-8 (no silent replacement characters),
 * valid JSON, and no NUL or lone UTF-16 surrogate anywhere (jsonb and text refuse both, and a refusal
 * there would be a 500 instead of the caller's 400). The text is stored as received, except when it holds
 * a number PostgreSQL's numeric cannot hold (jsonb refuses `1e200000`, which JSON.parse reads as Infinity):
 * then the value is serialised again, as JavaScript read it.
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
  if (/\\u/i.test(text) && hasUnstorableText(value)) {
    throw badRequest('The body contains a NUL character or a lone surrogate (\\uD800-\\uDFFF), which cannot be stored.');
  }
  return { value, text: OUT_OF_NUMERIC_RANGE.test(text) ? JSON.stringify(value) : text };
}

/**
 * A number jsonb may refuse: a 5-digit exponent, or a run of more digits than numeric keeps after the
 * point (16,383). Cheap and on the safe side: a match only means the text is serialised again.
 */
const OUT_OF_NUMERIC_RANGE = /[eE][+-]?\d{5}|\d{16384}/;

const unstorable = (s: string) => s.includes('\u0000') || !s.isWellFormed();

/** Text PostgreSQL cannot store (NUL, a lone UTF-16 surrogate), anywhere in a parsed JSON value. */
export function hasUnstorableText(root: unknown): boolean {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value === 'string' && unstorable(value)) return true;
    if (typeof value === 'object' && value !== null) {
      for (const [key, child] of Object.entries(value)) {
        if (unstorable(key)) return true;
        stack.push(child);
      }
    }
  }
  return false;
}
