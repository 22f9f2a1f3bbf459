/**
 * Quote submission (seed §2.2, §4.2; SPEC §6): the schema both Skyhook and the simulator validate with.
 * The seed shows no required/optional status; decided here: a quote needs segments, a lift, a
 * currency, a sellerUniqueQuoteIdentifier (it makes the call idempotent), a total and line items.
 */
import { z } from 'zod';

const nonNegativeInt = z.number().int('must be a whole number').min(0, 'must be zero or more');
const numericText = z.string().regex(/^\d+(\.\d+)?$/, 'must be numeric text, such as "4" or "1250.50"');
const icao = z.strictObject({ icao: z.string().regex(/^[A-Z]{4}$/, 'must be a four-letter ICAO code') });

function isCalendarDate(s: string): boolean {
  const d = new Date(`${s}T00:00:00Z`);
  return !Number.isNaN(d.getTime()) && d.toISOString().slice(0, 10) === s;
}

const segmentSchema = z.strictObject({
  startAirport: icao,
  endAirport: icao,
  dateTime: z.strictObject({
    date: z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'must be YYYY-MM-DD').refine(isCalendarDate, 'must be a real calendar date'),
    time: z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be HH:MM (24-hour)'),
    departure: z.boolean(),
    local: z.boolean(),
  }),
  paxCount: z.string().regex(/^\d+$/, 'must be numeric text, such as "4"'),
  paxSegment: z.boolean().optional(),
  paxTBD: z.boolean().optional(),
  timeTBD: z.boolean().optional(),
  departureDateTimeCalculated: z.boolean().optional(),
  arrivalDateTimeCalculated: z.boolean().optional(),
  showToBuyer: z.boolean().optional(),
  distanceNM: nonNegativeInt.optional(),
  blockTimeMinutes: nonNegativeInt.optional(),
  flightMinutes: nonNegativeInt.optional(),
  fuelStopTimeMinutes: nonNegativeInt.optional(),
  fuelStopCount: nonNegativeInt.optional(),
});

const liftSchema = z
  .strictObject({ aircraftTail: z.string().max(50).optional(), aircraftType: z.string().max(200).optional(), aircraftCategory: z.string().max(200).optional() })
  .refine((l) => Boolean(l.aircraftTail?.trim() || l.aircraftType?.trim() || l.aircraftCategory?.trim()), {
    message: 'needs an aircraftTail, or (floating fleet) an aircraftType or aircraftCategory',
  });

const lineItemSchema = z.strictObject({
  visibleToBuyer: z.boolean().optional(),
  displayName: z.string().max(500).optional(),
  description: z.string().max(5000).optional(),
  /** (assumed) Values beyond FLT and empty are "not shown": any short code is passed on. */
  type: z.string().max(20).optional(),
  price: z.number().finite(),
  formattedUnitPrice: numericText,
  formattedQuantity: numericText,
});

const MIB = 1024 * 1024;
/**
 * (assumed: the seed gives no size limits) One attachment's `data` (the file as text, base64 in
 * practice) and all of a quote's attachments together.
 */
const MAX_ATTACHMENT_DATA_CHARS = 10 * MIB;
const MAX_ATTACHMENTS_DATA_CHARS = 20 * MIB;
/**
 * The largest quote request read: the admin API's quote route and the simulator. The attachments' data
 * at its largest, and room for the rest of a quote at its largest (50 segments, 200 line items, the
 * messages: well under 1 MiB).
 */
export const MAX_QUOTE_BODY_BYTES = MAX_ATTACHMENTS_DATA_CHARS + 4 * MIB;

const attachmentSchema = z.strictObject({
  mimeType: z.string().min(1).max(200),
  name: z.string().min(1).max(500),
  type: z.string().max(100).optional(),
  uri: z.url().max(4096).optional(),
  data: z.string().max(MAX_ATTACHMENT_DATA_CHARS).optional(),
  temporaryAttachmentId: z.string().max(200).optional(),
});

export const quoteSchema = z.strictObject({
  segments: z.array(segmentSchema).min(1, 'must have at least one segment').max(50),
  lift: liftSchema,
  messageForBuyer: z.string().max(10_000).optional(),
  currencyCode: z.string().regex(/^[A-Z]{3}$/, 'must be a three-letter upper-case currency code'),
  sellerUniqueQuoteIdentifier: z.string().trim().min(1).max(200),
  totalPrice: z.number().finite().min(0, 'must be zero or more'),
  lineItems: z.array(lineItemSchema).max(200),
  attachments: z
    .array(attachmentSchema)
    .max(20)
    .refine((items) => items.reduce((sum, a) => sum + (a.data?.length ?? 0), 0) <= MAX_ATTACHMENTS_DATA_CHARS, {
      message: `the attachments' data must total at most ${MAX_ATTACHMENTS_DATA_CHARS / MIB} MiB`,
    })
    .optional(),
});

export const quoteSubmissionSchema = z.strictObject({
  message: z.string().max(10_000).optional(),
  suppressNotification: z.boolean().optional(),
  quote: quoteSchema,
});

export type QuoteSubmission = z.infer<typeof quoteSubmissionSchema>;

/** Total equals the sum of the line items' prices, to the cent. */
export function priceMismatch(quote: QuoteSubmission['quote']): { total: number; sum: number } | null {
  const cents = (n: number) => Math.round(n * 100);
  const sum = quote.lineItems.reduce((acc, li) => acc + cents(li.price), 0);
  return sum === cents(quote.totalPrice) ? null : { total: quote.totalPrice, sum: sum / 100 };
}

/** (assumed shape) What the marketplace answers for a submitted quote. */
export interface QuoteSubmitted {
  tripmsgs: { id: string };
  sellerQuote: { id: string };
  lift: { id: string };
}
