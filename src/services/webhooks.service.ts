/**
 * Webhooks: Skyhook generates the credentials (clientIdentifier, clientSecret, endpoint key), creates
 * and changes the setting on the marketplace with the company's token (SPEC §6), and keeps its row.
 */
import { and, asc, eq, sql } from 'drizzle-orm';
import type { z } from 'zod';
import type { createWebhookBody, patchWebhookBody } from './schemas.js';
import type { Database } from '../db/client.js';
import { webhooks, type WebhookRow } from '../db/schema/index.js';
import { decryptSecret, encryptSecret, randomToken, sha256 } from '../lib/crypto.js';
import { isDatabaseUnavailable } from '../lib/database-unavailable.js';
import { describeError } from '../lib/error-reporter.js';
import { Problem, notFound, serviceUnavailable } from '../lib/problem.js';
import type { ApiConnection } from '../marketplace/connection.js';
import { MarketplaceError } from '../marketplace/errors.js';
import type { ClientAuthenticationType, EventType, WebhookSetting, WebhookSettingBody } from '../marketplace/contract.js';
import type { WebhookSettingsApi } from '../marketplace/webhook-settings.js';
import { WEBHOOK_CHANGES_CHANNEL } from '../receiver/authenticate.js';
import { changedFields, givenFields, type Audit } from '../access/audit.js';
import type { CompaniesService } from './companies.service.js';
import { viewOf, webhookViewSchema, type Drift, type ReconciliationView, type WebhookView } from './views.js';

interface WebhooksDeps {
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
const targetUri = (publicBaseUrl: string, w: Pick<WebhookRow, 'endpointKey'> & { shared: boolean }) =>
  w.shared ? `${publicBaseUrl}/hooks` : `${publicBaseUrl}/hooks/${w.endpointKey}`;

/** The setting a webhook row stands for on the marketplace, with `changes` (one not given keeps the row's; a secret is sent only when given). */
const settingOf = (w: WebhookRow, changes: Partial<WebhookSettingBody>): WebhookSettingBody => ({
  targetURI: w.targetUri,
  displayName: changes.displayName ?? w.displayName,
  active: changes.active ?? w.active,
  clientIdentifier: w.clientIdentifier,
  ...(changes.clientSecret ? { clientSecret: changes.clientSecret } : {}),
  clientAuthenticationType: w.authType,
  eventTypes: changes.eventTypes ?? (w.eventTypes as EventType[]),
});

/** A webhook's columns by the field names of its view (the audit log names the fields a change changed). */
const WEBHOOK_FIELDS = { displayName: 'displayName', active: 'active', eventTypes: 'eventTypes' } as const;

// Over 80 lines on purpose: its body is the service's methods, each short, over the dependencies they share.
export function createWebhooksService(deps: WebhooksDeps) {
  const { db } = deps;

  const view = (w: WebhookRow): WebhookView => viewOf(webhookViewSchema, w, { targetURI: w.targetUri });

  /** Secret columns for a new secret: a BASIC secret is only compared (hash), an OAUTH one signs (encrypted). */
  const secretColumns = (authType: ClientAuthenticationType, secret: string) =>
    authType === 'BASIC' ? { secretSha256: sha256(secret), secretEncrypted: null } : { secretSha256: null, secretEncrypted: encryptSecret(deps.secretKey, secret) };

  /** A new secret's columns; the previous one stays valid for the grace period: no notification is refused during the switch. */
  const rotatedSecret = (w: WebhookRow, secret: string) => ({
    ...secretColumns(w.authType, secret),
    previousSecretSha256: w.secretSha256,
    previousSecretEncrypted: w.secretEncrypted,
    previousSecretExpiresAt: new Date(Date.now() + deps.rotationGraceMs),
  });

  /** The setting `body` describes, deactivated on the marketplace (its secret is not sent again). */
  const deactivate = (conn: ApiConnection, id: string, { clientSecret: _omit, ...body }: WebhookSettingBody, form: 'plural' | 'singular') =>
    deps.settings.update(conn, id, { ...body, active: false }, form);

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

    /** The company's webhook row, or a 404 naming it. */
    row: getRow,

    /** Registered on the marketplace, then stored (a call: in the audit log, before and after). */
    create: (companyId: string, input: z.infer<typeof createWebhookBody>, audit: Pick<Audit, 'call'>): Promise<WebhookView> =>
      audit.call({ fields: givenFields(input) }, () => create(companyId, input), (w) => ({ targets: { webhookId: w.id } })),

    /**
     * Reconciliation (SPEC §14): the company's settings on the marketplace against its local webhooks. Drift
     * is reported; with `apply`, what the marketplace lost (a sandbox reset) is re-created, under the same
     * targetURI and clientIdentifier (so attribution does not change), and a row whose setting the
     * marketplace holds under another id takes that id. Differing settings and unknown ones are only
     * reported: they may be someone's deliberate change.
     */
    reconcile: (companyId: string, opts: { apply: boolean }, audit: Pick<Audit, 'call'>): Promise<ReconciliationView> =>
      audit.call({}, () => reconcile(companyId, opts), (r) => ({ details: { applied: r.applied, drift: r.drift.length } })),

    /** All of them, as one page (a company has a handful). */
    async list(companyId: string): Promise<{ items: WebhookView[]; nextCursor: null }> {
      await deps.companies.get(companyId);
      const rows = await db.select().from(webhooks).where(eq(webhooks.companyId, companyId)).orderBy(asc(webhooks.createdAt));
      return { items: rows.map(view), nextCursor: null };
    },

    async get(companyId: string, webhookId: string): Promise<WebhookView> {
      return view(await getRow(companyId, webhookId));
    },

    /** Changed on the marketplace first, then here (a call: in the audit log, before and after, naming the fields it changes). */
    async update(companyId: string, webhookId: string, patch: z.infer<typeof patchWebhookBody>, audit: Pick<Audit, 'call'>): Promise<WebhookView> {
      const current = await getRow(companyId, webhookId);
      const fields = [...changedFields(current, { displayName: patch.displayName, active: patch.active, eventTypes: patch.eventTypes }, WEBHOOK_FIELDS), ...(patch.rotateSecret ? ['clientSecret'] : [])];
      return audit.call({ fields }, () => updateRow(current, patch));
    },

    /** updateRow: a change of a webhook here and on the marketplace, as a part of a larger one (a deletion's deactivation), which holds its audit entry. */
    updateRow,
  };

  async function create(companyId: string, input: z.infer<typeof createWebhookBody>): Promise<WebhookView> {
    const { row: company, conn, call } = await deps.companies.connection(companyId);
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
    const setting = await call(() => deps.settings.create(conn, body));
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
      const undoFailed = await deactivate(conn, setting.id, body, company.settingsPathForm).then(
        () => undefined,
        (undoError: unknown) => undoError,
      );
      if (undoFailed === undefined) throw err;
      const left = `the webhook setting ${setting.id} created on the marketplace could not be deactivated (${describeError(undoFailed)}): deactivate it there`;
      if (isDatabaseUnavailable(err)) throw serviceUnavailable(`The database is unavailable, so the webhook was not stored; ${left}.`, 'database_unavailable');
      throw new Problem(500, 'Internal Server Error', `Storing the webhook failed; ${left}.`, { code: 'internal' });
    }
  }

  async function reconcile(companyId: string, opts: { apply: boolean }): Promise<ReconciliationView> {
    const { row: company, conn, call } = await deps.companies.connection(companyId);
    const rows = await db.select().from(webhooks).where(eq(webhooks.companyId, companyId)).orderBy(asc(webhooks.createdAt));
    const remote = await call(() => deps.settings.list(conn));
    const byId = new Map(remote.map((r) => [r.id, r]));
    const byClientIdentifier = new Map(remote.map((r) => [r.clientIdentifier, r]));
    const matched = new Set<string>();
    const drift: Drift[] = [];
    let inSync = 0;
    let changedRows = false;
    const entry = (kind: Drift['kind'], row: WebhookRow | null, setting: WebhookSetting | null, more: Partial<Drift> = {}): Drift => ({
      kind,
      webhookId: row?.id ?? null,
      remoteId: setting?.id ?? row?.remoteId ?? null,
      clientIdentifier: row?.clientIdentifier ?? (typeof setting?.clientIdentifier === 'string' ? setting.clientIdentifier : null),
      differences: [],
      action: 'none',
      newRemoteId: null,
      error: null,
      ...more,
    });

    for (const row of rows) {
      const sameId = byId.get(row.remoteId);
      const sameClient = sameId ? undefined : byClientIdentifier.get(row.clientIdentifier);
      const setting = sameId ?? (sameClient && !matched.has(sameClient.id) ? sameClient : undefined);
      if (!setting) {
        const lost = entry('missing_remotely', row, null);
        if (opts.apply) {
          Object.assign(lost, await recreate(row, company.settingsPathForm, conn));
          changedRows ||= lost.action === 'recreated';
        }
        drift.push(lost);
        continue;
      }
      matched.add(setting.id);
      const differences = settingDifferences(row, setting);
      if (setting.id !== row.remoteId) {
        const moved = entry('remote_id_changed', row, setting, { differences, remoteId: row.remoteId, newRemoteId: setting.id });
        if (opts.apply) {
          await db.update(webhooks).set({ remoteId: setting.id, remoteVersion: typeof setting.version === 'number' ? setting.version : null, updatedAt: new Date() }).where(eq(webhooks.id, row.id));
          moved.action = 'remote_id_updated';
        }
        drift.push(moved);
      } else if (differences.length > 0) {
        drift.push(entry('differs', row, setting, { differences }));
      } else {
        inSync++;
      }
    }
    for (const setting of remote) if (!matched.has(setting.id)) drift.push(entry('unknown_remotely', null, setting));
    if (changedRows) await changed();
    return { companyId, applied: opts.apply, inSync, remoteSettings: remote.length, drift };
  }

  async function updateRow(current: WebhookRow, patch: z.infer<typeof patchWebhookBody>): Promise<WebhookView> {
    const { companyId, id: webhookId } = current;
    const { row: company, conn, call } = await deps.companies.connection(companyId);
    const newSecret = patch.rotateSecret ? randomToken(32) : undefined;
    const body = settingOf(current, { ...patch, clientSecret: newSecret });
    const result = await call(() => deps.settings.update(conn, current.remoteId, body, company.settingsPathForm));
    if (result.pathForm !== company.settingsPathForm) await deps.companies.rememberSettingsPath(companyId, result.pathForm);
    const [row] = await db
      .update(webhooks)
      .set({
        displayName: body.displayName,
        active: body.active,
        eventTypes: body.eventTypes,
        remoteVersion: result.setting.version ?? current.remoteVersion,
        ...(newSecret ? rotatedSecret(current, newSecret) : {}),
        updatedAt: new Date(),
      })
      .where(eq(webhooks.id, webhookId))
      .returning();
    await changed();
    return view(row!);
  }

  /**
   * Re-creates a setting the marketplace lost, from the local row: the same targetURI and clientIdentifier;
   * an OAUTH webhook's own secret (it is kept encrypted), a new one for BASIC (only its hash is kept; the old
   * one stays accepted for the rotation grace period). A row that is inactive is deactivated again at once
   * (a new setting is always active). The row then holds the new remote id.
   */
  async function recreate(row: WebhookRow, pathForm: 'plural' | 'singular', conn: ApiConnection): Promise<Partial<Drift>> {
    const secret = row.authType === 'OAUTH' && row.secretEncrypted !== null ? decryptSecret(deps.secretKey, row.secretEncrypted) : randomToken(32);
    const body = settingOf(row, { active: true, clientSecret: secret });
    let setting: WebhookSetting;
    try {
      setting = await deps.settings.create(conn, body);
    } catch (err) {
      if (!(err instanceof MarketplaceError)) throw err;
      return { action: 'failed', error: err.message };
    }
    await db
      .update(webhooks)
      .set({
        remoteId: setting.id,
        remoteVersion: setting.version ?? null,
        ...(row.authType === 'BASIC' ? rotatedSecret(row, secret) : {}),
        updatedAt: new Date(),
      })
      .where(eq(webhooks.id, row.id));
    let error: string | null = null;
    if (!row.active) {
      try {
        await deactivate(conn, setting.id, body, pathForm);
      } catch (err) {
        if (!(err instanceof MarketplaceError)) throw err;
        error = `re-created, but deactivating it again failed (${err.message}): it stays active on the marketplace; its notifications are acknowledged and discarded`;
      }
    }
    return { action: 'recreated', newRemoteId: setting.id, error };
  }
}

/** Where a local row and the marketplace's setting disagree (event types compared as sets). */
function settingDifferences(row: WebhookRow, setting: WebhookSetting): Drift['differences'] {
  const differences: Drift['differences'] = [];
  const differ = (field: string, local: unknown, remote: unknown) => {
    if (JSON.stringify(local) !== JSON.stringify(remote)) differences.push({ field, local, remote: remote ?? null });
  };
  const sorted = (types: unknown) => (Array.isArray(types) ? [...types].map(String).sort() : types);
  differ('eventTypes', sorted(row.eventTypes), sorted(setting.eventTypes));
  differ('targetURI', row.targetUri, setting.targetURI);
  differ('active', row.active, setting.active);
  differ('clientAuthenticationType', row.authType, setting.clientAuthenticationType);
  differ('clientIdentifier', row.clientIdentifier, setting.clientIdentifier);
  differ('displayName', row.displayName, setting.displayName);
  return differences;
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
