/**
 * Webhooks: Skyhook generates the credentials (clientIdentifier, clientSecret, endpoint key), creates
 * and changes the setting on the marketplace with the company's token (SPEC §6), and keeps its row.
 */
import { and, asc, eq, sql } from 'drizzle-orm';
import type { Database } from '../db/client.js';
import { webhooks, type WebhookRow } from '../db/schema/index.js';
import { encryptSecret, randomToken, sha256 } from '../lib/crypto.js';
import { isDatabaseUnavailable } from '../db/client.js';
import { describeError } from '../lib/error-reporter.js';
import { Problem, notFound, serviceUnavailable } from '../lib/problem.js';
import type { ClientAuthenticationType, EventType, WebhookSettingBody } from '../marketplace/contract.js';
import type { WebhookSettingsApi } from '../marketplace/webhook-settings.js';
import { WEBHOOK_CHANGES_CHANNEL } from '../receiver/attribution.js';
import type { CompaniesService } from './companies.service.js';
import { marketplaceCall } from './marketplace-call.js';
import type { WebhookView } from './views.js';

export type { WebhookView };

export interface WebhooksDeps {
  db: Database;
  secretKey: Buffer;
  publicBaseUrl: string;
  rotationGraceMs: number;
  companies: CompaniesService;
  settings: WebhookSettingsApi;
  /** Called after every change so receivers drop cached credentials. */
  onChange: () => void;
}

/** The targetURI a webhook is reached at: its own (`/hooks/<endpointKey>`) or the shared one. */
export const targetUri = (publicBaseUrl: string, w: Pick<WebhookRow, 'endpointKey'> & { shared: boolean }) =>
  w.shared ? `${publicBaseUrl}/hooks` : `${publicBaseUrl}/hooks/${w.endpointKey}`;

export function createWebhooksService(deps: WebhooksDeps) {
  const { db } = deps;

  const view = (w: WebhookRow): WebhookView => ({
    id: w.id,
    companyId: w.companyId,
    remoteId: w.remoteId,
    targetURI: w.targetUri,
    clientIdentifier: w.clientIdentifier,
    authType: w.authType,
    eventTypes: w.eventTypes,
    displayName: w.displayName,
    active: w.active,
    previousSecretExpiresAt: w.previousSecretExpiresAt?.toISOString() ?? null,
    createdAt: w.createdAt.toISOString(),
    updatedAt: w.updatedAt.toISOString(),
  });

  /** Secret columns for a new secret: a BASIC secret is only compared (hash), an OAUTH one signs (encrypted). */
  const secretColumns = (authType: ClientAuthenticationType, secret: string) =>
    authType === 'BASIC' ? { secretSha256: sha256(secret), secretEncrypted: null } : { secretSha256: null, secretEncrypted: encryptSecret(deps.secretKey, secret) };

  async function changed(): Promise<void> {
    deps.onChange();
    await db.execute(sql`SELECT pg_notify(${WEBHOOK_CHANGES_CHANNEL}, '')`);
  }

  async function getRow(companyId: string, webhookId: string): Promise<WebhookRow> {
    const [row] = await db.select().from(webhooks).where(and(eq(webhooks.id, webhookId), eq(webhooks.companyId, companyId))).limit(1);
    if (!row) throw notFound(`Webhook ${webhookId}`);
    return row;
  }

  return {
    /** Tells every process's receiver that webhooks changed (they drop their cached credentials). */
    changed,

    async create(companyId: string, input: { eventTypes: EventType[]; authType: ClientAuthenticationType; displayName?: string; sharedTarget?: boolean }): Promise<WebhookView> {
      const { row: company, conn } = await deps.companies.connection(companyId);
      const endpointKey = randomToken(24);
      const clientIdentifier = `skh_${randomToken(18)}`;
      const clientSecret = randomToken(32);
      const targetURI = targetUri(deps.publicBaseUrl, { endpointKey, shared: input.sharedTarget ?? false });
      const body: WebhookSettingBody = {
        targetURI,
        displayName: input.displayName ?? `Skyhook (${company.name})`,
        active: true,
        clientIdentifier,
        clientSecret,
        clientAuthenticationType: input.authType,
        eventTypes: input.eventTypes,
      };
      const setting = await marketplaceCall(() => deps.settings.create(conn, body));
      try {
        const [row] = await db
          .insert(webhooks)
          .values({
            companyId,
            remoteId: setting.id,
            remoteVersion: setting.version ?? null,
            endpointKey,
            targetUri: targetURI,
            clientIdentifier,
            authType: input.authType,
            ...secretColumns(input.authType, clientSecret),
            eventTypes: input.eventTypes,
            displayName: body.displayName,
            active: true,
          })
          .returning();
        await changed();
        return view(row!);
      } catch (err) {
        // Do not leave a live setting on the marketplace that Skyhook cannot authenticate; if that fails too,
        // the answer says so, so that the operator deactivates it there.
        const { clientSecret: _omit, ...rest } = body;
        const undoFailed = await deps.settings.update(conn, setting.id, { ...rest, active: false }, company.settingsPathForm).then(
          () => undefined,
          (undoError: unknown) => undoError,
        );
        if (undoFailed === undefined) throw err;
        const left = `the webhook setting ${setting.id} created on the marketplace could not be deactivated (${describeError(undoFailed)}): deactivate it there`;
        if (isDatabaseUnavailable(err)) throw serviceUnavailable(`The database is unavailable, so the webhook was not stored; ${left}.`, 'database_unavailable');
        throw new Problem(500, 'Internal Server Error', `Storing the webhook failed; ${left}.`, { code: 'internal' });
      }
    },

    /** All of them, as one page (a company has a handful). */
    async list(companyId: string): Promise<{ items: WebhookView[]; nextCursor: null }> {
      await deps.companies.get(companyId);
      const rows = await db.select().from(webhooks).where(eq(webhooks.companyId, companyId)).orderBy(asc(webhooks.createdAt));
      return { items: rows.map(view), nextCursor: null };
    },

    async get(companyId: string, webhookId: string): Promise<WebhookView> {
      return view(await getRow(companyId, webhookId));
    },

    async update(
      companyId: string,
      webhookId: string,
      patch: { active?: boolean; eventTypes?: EventType[]; displayName?: string; rotateSecret?: boolean },
    ): Promise<WebhookView> {
      const current = await getRow(companyId, webhookId);
      const { row: company, conn } = await deps.companies.connection(companyId);
      const newSecret = patch.rotateSecret ? randomToken(32) : undefined;
      const body: WebhookSettingBody = {
        targetURI: current.targetUri,
        displayName: patch.displayName ?? current.displayName,
        active: patch.active ?? current.active,
        clientIdentifier: current.clientIdentifier,
        ...(newSecret ? { clientSecret: newSecret } : {}),
        clientAuthenticationType: current.authType,
        eventTypes: (patch.eventTypes ?? current.eventTypes) as EventType[],
      };
      const result = await marketplaceCall(() => deps.settings.update(conn, current.remoteId, body, company.settingsPathForm));
      if (result.pathForm !== company.settingsPathForm) await deps.companies.rememberSettingsPath(companyId, result.pathForm);

      const rotation = newSecret
        ? {
            ...secretColumns(current.authType, newSecret),
            // The previous secret stays valid for the grace period: no notification is refused during the switch.
            previousSecretSha256: current.secretSha256,
            previousSecretEncrypted: current.secretEncrypted,
            previousSecretExpiresAt: new Date(Date.now() + deps.rotationGraceMs),
          }
        : {};
      const [row] = await db
        .update(webhooks)
        .set({
          displayName: body.displayName,
          active: body.active,
          eventTypes: body.eventTypes,
          remoteVersion: result.setting.version ?? current.remoteVersion,
          ...rotation,
          updatedAt: new Date(),
        })
        .where(eq(webhooks.id, webhookId))
        .returning();
      await changed();
      return view(row!);
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
