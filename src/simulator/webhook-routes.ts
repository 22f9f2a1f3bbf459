/**
 * Webhook settings (seed §3, §4.3): POST creates an active setting; PUT replaces it whole, which activates,
 * deactivates, changes it or rotates its secret. The seed's singular spelling of the PUT path works too.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import {
  envelope,
  webhookSettingBody,
  WEBHOOK_SETTINGS_PATH,
  WEBHOOK_SETTINGS_SINGULAR_PATH,
  type EnvelopeMessage,
  type WebhookSetting,
  type WebhookSettingBody,
} from '../marketplace/contract.js';
import { issueErrors, notFound, softError } from './answers.js';
import { callerOf } from './auth.js';
import type { Simulation } from './simulation.js';
import { newId, type MarketplaceState, type StoredWebhookSetting } from './state.js';

/** What the marketplace answers for a setting: never the secret. */
const publicView = (setting: StoredWebhookSetting): WebhookSetting => ({
  id: setting.id,
  version: setting.version,
  targetURI: setting.targetURI,
  displayName: setting.displayName,
  active: setting.active,
  clientIdentifier: setting.clientIdentifier,
  clientAuthenticationType: setting.clientAuthenticationType,
  eventTypes: setting.eventTypes,
});

/** Rules beyond the body's shape, shared by create and update. */
function settingProblems(state: MarketplaceState, body: WebhookSettingBody, webhookId?: string): EnvelopeMessage[] {
  const problems: EnvelopeMessage[] = [];
  // The simulator delivers with fetch, so only http(s) targets can ever consume a notification.
  if (!['http:', 'https:'].includes(new URL(body.targetURI).protocol)) {
    problems.push({ code: 'invalid_url', message: 'targetURI must be an http or https URL', field: 'targetURI' });
  }
  if (state.clientIdentifierTaken(body.clientIdentifier, webhookId)) {
    const message = 'clientIdentifier is already used by a webhook setting';
    problems.push({ code: 'duplicate', message, field: 'clientIdentifier' });
  }
  return problems;
}

/** Creation needs a secret; an update without one keeps the current secret. */
const creationBody = webhookSettingBody.extend({ clientSecret: webhookSettingBody.shape.clientSecret.unwrap() });

export const webhookSettingsRoutes: FastifyPluginAsync<{ simulation: Simulation }> = async (api, { simulation }) => {
  const { state } = simulation;

  // The settings list: reconciliation reads it, and Skyhook checks new credentials with it (SPEC §14).
  api.get(WEBHOOK_SETTINGS_PATH, async (request) => {
    simulation.ledger.calls.settingsLists++;
    return envelope(state.webhooksOf(callerOf(request).id).map(publicView));
  });

  api.post(WEBHOOK_SETTINGS_PATH, async (request) => {
    const parsed = creationBody.safeParse(request.body);
    if (!parsed.success) return softError(issueErrors(parsed.error.issues));
    const problems = settingProblems(state, parsed.data);
    // Seed §3: creation always yields an active setting; refusing active:false makes a mismatch visible.
    if (!parsed.data.active) {
      problems.push({ code: 'invalid_state', message: 'a new webhook setting is active; deactivate it with PUT', field: 'active' });
    }
    if (problems.length > 0) return softError(problems);
    const setting: StoredWebhookSetting = {
      ...parsed.data,
      id: newId('wh'),
      version: 1,
      companyId: callerOf(request).id,
    };
    state.addWebhook(setting);
    return envelope(publicView(setting));
  });

  const updateSetting = async (request: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply) => {
    const setting = state.webhook(request.params.id);
    // Another company's setting answers like a missing one, so its existence is not revealed.
    if (setting?.companyId !== callerOf(request).id) return reply.code(404).send(notFound('webhook setting'));
    const parsed = webhookSettingBody.safeParse(request.body);
    if (!parsed.success) return softError(issueErrors(parsed.error.issues));
    const problems = settingProblems(state, parsed.data, setting.id);
    if (problems.length > 0) return softError(problems);
    const wasActive = setting.active;
    // In place: deliveries under way read the same object and so see the new state at once.
    Object.assign(setting, {
      ...parsed.data,
      version: setting.version + 1,
      clientSecret: parsed.data.clientSecret ?? setting.clientSecret,
    });
    if (wasActive && !setting.active) simulation.deliveries.dropWebhook(setting.id);
    return envelope(publicView(setting));
  };

  api.put<{ Params: { id: string } }>(`${WEBHOOK_SETTINGS_PATH}/:id`, async (request, reply) =>
    state.faults.pluralPutMissing ? reply.code(404).send(notFound('route')) : updateSetting(request, reply),
  );
  api.put<{ Params: { id: string } }>(`${WEBHOOK_SETTINGS_SINGULAR_PATH}/:id`, updateSetting);
};
