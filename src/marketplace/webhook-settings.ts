/**
 * Webhook settings on the marketplace (seed §4.3). The seed spells the PUT once in the singular
 * (`/webhook/settings/{id}`): the plural is used, and when the marketplace answers 404 for it the
 * call is tried once with the other spelling, which the caller then remembers for the company.
 */
import { MarketplaceError, type ApiConnection, type MarketplaceClient } from './client.js';
import { pathSegment, WEBHOOK_SETTINGS_PATH, WEBHOOK_SETTINGS_SINGULAR_PATH, type WebhookSetting, type WebhookSettingBody } from './contract.js';

type SettingsPathForm = 'plural' | 'singular';

/** `id` is the one the marketplace answered on creation (stored as the webhook's remoteId). */
const pathFor = (form: SettingsPathForm, id: string) =>
  `${form === 'plural' ? WEBHOOK_SETTINGS_PATH : WEBHOOK_SETTINGS_SINGULAR_PATH}/${pathSegment(id, 'the webhook setting id')}`;

export interface WebhookSettingsApi {
  /**
   * The company's settings on the marketplace (SPEC §14: reconciliation, and the harmless call that checks
   * credentials). `retry: false` asks once (a caller waiting for a check).
   */
  list(conn: ApiConnection, opts?: { retry?: boolean }): Promise<WebhookSetting[]>;
  create(conn: ApiConnection, body: WebhookSettingBody): Promise<WebhookSetting>;
  update(conn: ApiConnection, id: string, body: WebhookSettingBody, form: SettingsPathForm): Promise<{ setting: WebhookSetting; pathForm: SettingsPathForm }>;
}

export function webhookSettingsApi(client: MarketplaceClient): WebhookSettingsApi {
  return {
    async list(conn, opts = {}) {
      const settings = await client.call<unknown>(conn, 'GET', WEBHOOK_SETTINGS_PATH, { operation: 'webhook_settings.list', retry: opts.retry });
      if (!Array.isArray(settings)) throw new MarketplaceError('invalid_response', 'GET /webhooks/settings answered without a list in data');
      const bad = settings.findIndex((s) => typeof s !== 'object' || s === null || typeof (s as { id?: unknown }).id !== 'string');
      if (bad !== -1) throw new MarketplaceError('invalid_response', `GET /webhooks/settings answered a setting without an id (item ${bad})`);
      return settings as WebhookSetting[];
    },

    async create(conn, body) {
      const setting = await client.call<WebhookSetting>(conn, 'POST', WEBHOOK_SETTINGS_PATH, { body, operation: 'webhook_settings.create' });
      if (!setting || typeof setting.id !== 'string') throw new MarketplaceError('invalid_response', 'POST /webhooks/settings answered without data.id');
      return setting;
    },

    async update(conn, id, body, form) {
      const put = async (pathForm: SettingsPathForm) => ({ setting: await client.call<WebhookSetting>(conn, 'PUT', pathFor(pathForm, id), { body, operation: 'webhook_settings.update' }), pathForm });
      try {
        return await put(form);
      } catch (err) {
        if (!(err instanceof MarketplaceError) || err.status !== 404) throw err;
        // Both spellings unknown: the setting itself is missing; report the first answer.
        return await put(form === 'plural' ? 'singular' : 'plural').catch(() => Promise.reject(err));
      }
    },
  };
}
