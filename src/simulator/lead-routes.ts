/**
 * Client leads (seed §2.1, §3, §4.1): POST /leads validates with the shared schema and creates a lead in
 * the state ClientLead. A repeat of a company's clientIdentifier answers the stored lead unchanged and
 * creates nothing: only a new clientIdentifier makes a new lead.
 */
import type { FastifyPluginAsync } from 'fastify';
import { envelope } from '../marketplace/contract.js';
import { CLIENT_LEAD_STATUS, clientLeadSchema, leadKind, LEADS_PATH, type LeadCreated } from '../marketplace/leads.js';
import { issueErrors, softError } from './answers.js';
import { lateAnswer } from './faults.js';
import { countCall } from './ledger.js';
import { callerOf } from './auth.js';
import type { Simulation } from './simulation.js';
import { newId } from './state.js';

export const leadRoutes: FastifyPluginAsync<{ simulation: Simulation }> = async (api, { simulation }) => {
  const { state, ledger } = simulation;

  api.addHook('onSend', countCall(() => ledger.calls.leads++));
  api.addHook('onSend', lateAnswer(state));

  api.post(LEADS_PATH, async (request) => {
    const parsed = clientLeadSchema.safeParse(request.body);
    if (!parsed.success) return softError(issueErrors(parsed.error.issues));
    const lead = parsed.data;
    const companyId = callerOf(request).id;
    const stored = state.leads.get(companyId, lead.clientIdentifier);
    if (stored) return envelope(stored);

    const created: LeadCreated = { id: newId('lead'), clientIdentifier: lead.clientIdentifier, status: CLIENT_LEAD_STATUS };
    state.leads.set(companyId, lead.clientIdentifier, created);
    const kind = leadKind(lead);
    const fields = { clientIdentifier: lead.clientIdentifier, status: CLIENT_LEAD_STATUS, kind, lead };
    simulation.emit(companyId, 'ClientLeads', created.id, { fields });
    ledger.logs.leads.push({ companyId, id: created.id, clientIdentifier: lead.clientIdentifier, kind });
    return envelope(created);
  });
};
