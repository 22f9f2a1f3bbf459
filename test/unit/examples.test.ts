/** The example bodies the README's tour and the CLI's help point to are accepted as they are. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { createDeclineBody, createLeadBody, createQuoteBody } from '../../src/services/schemas.js';
import { priceMismatch } from '../../src/marketplace/quotes.js';

const example = (name: string): unknown => JSON.parse(readFileSync(new URL(`../../examples/${name}`, import.meta.url), 'utf8'));

describe('examples/', () => {
  it('lead.json is a valid Client Lead', () => {
    const parsed = createLeadBody.safeParse(example('lead.json'));
    expect(parsed.error?.issues ?? []).toEqual([]);
  });

  it('quote.json is a valid quote request, its price matching its line items', () => {
    const parsed = createQuoteBody.safeParse(example('quote.json'));
    expect(parsed.error?.issues ?? []).toEqual([]);
    expect(priceMismatch(parsed.data!.submission.quote)).toBeNull();
  });

  it('decline.json is a valid decline request', () => {
    const parsed = createDeclineBody.safeParse(example('decline.json'));
    expect(parsed.error?.issues ?? []).toEqual([]);
  });
});
