/**
 * Client leads (seed §2.1, §4.1; SPEC §6): the schema both Skyhook and the simulator validate with.
 * Which fields are required is "not shown" in the seed; decided here: `clientIdentifier` and at least
 * one `inquiryLift` item. The empty-leg form is recognised by an `emptyLegId` on any item.
 */
import { z } from 'zod';

const text = (max: number) => z.string().trim().min(1).max(max);
/** (assumed) Contact entry types beyond Work and Home are "not shown": only these two are accepted. */
const CONTACT_TYPES = ['Work', 'Home'] as const;

const inquiryLiftSchema = z.strictObject({
  aircraftType: text(200).optional(),
  priceExpectation: z.number().finite().min(0, 'must be zero or more').optional(),
  availabilityId: z.string().min(1).max(200).nullable().optional(),
  emptyLegId: text(200).optional(),
});

const leadContactInfoSchema = z.strictObject({
  name: text(200).optional(),
  title: text(200).optional(),
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(2048).optional(),
  emailAddresses: z.array(z.strictObject({ type: z.enum(CONTACT_TYPES), emailAddress: z.email({ error: 'must be an e-mail address' }).max(320) })).max(20).optional(),
  phoneNumbers: z
    .array(z.strictObject({ type: z.enum(CONTACT_TYPES), phoneNumber: z.string().regex(/^\+[1-9]\d{5,14}$/, 'must be in international format: a leading + and 6 to 15 digits') }))
    .max(20)
    .optional(),
});

export const clientLeadSchema = z
  .strictObject({
    clientIdentifier: text(200),
    searchId: text(200).optional(),
    sellerQuoteIds: z.array(text(200)).max(100).optional(),
    inquiryLift: z.array(inquiryLiftSchema).min(1, 'must have at least one item').max(50),
    leadContactInfo: leadContactInfoSchema.optional(),
    leadCurrency: z.string().regex(/^[A-Z]{3}$/, 'must be a three-letter upper-case currency code').optional(),
    leadMessage: z.string().max(10_000).optional(),
    leadLocale: z.string().regex(/^[a-z]{2}$/i, 'must be a two-letter language code').optional(),
    campaignIdentifier: text(200).optional(),
  })
  .superRefine((lead, ctx) => {
    const emptyLeg = lead.inquiryLift.some((l) => l.emptyLegId !== undefined);
    if (!emptyLeg) return;
    // The empty leg lead (seed §4.1 rule 3): searchId and every inquiryLift[].emptyLegId.
    if (!lead.searchId) ctx.addIssue({ code: 'custom', path: ['searchId'], message: 'is required for an empty leg lead' });
    lead.inquiryLift.forEach((l, i) => {
      if (l.emptyLegId === undefined) ctx.addIssue({ code: 'custom', path: ['inquiryLift', i, 'emptyLegId'], message: 'is required for an empty leg lead' });
      for (const field of ['aircraftType', 'availabilityId'] as const) {
        if (l[field] !== undefined) ctx.addIssue({ code: 'custom', path: ['inquiryLift', i, field], message: 'belongs to a client search lead, not an empty leg lead' });
      }
    });
    if (lead.sellerQuoteIds !== undefined) ctx.addIssue({ code: 'custom', path: ['sellerQuoteIds'], message: 'belongs to a client search lead, not an empty leg lead' });
  });

export type ClientLead = z.infer<typeof clientLeadSchema>;
export const leadKind = (lead: ClientLead): 'empty_leg' | 'client_search' => (lead.inquiryLift.some((l) => l.emptyLegId !== undefined) ? 'empty_leg' : 'client_search');

export const LEADS_PATH = '/leads';

/** (assumed) The state a new lead is in: the seed names it but not how the answer spells it. */
export const CLIENT_LEAD_STATUS = 'ClientLead';

/** (assumed: the seed does not show the response) What the marketplace answers for a lead. */
export interface LeadCreated {
  id: string;
  clientIdentifier: string;
  status: string;
}
