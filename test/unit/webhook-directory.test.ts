/**
 * The receiver's cache of webhook credentials (SPEC §10: "a flood of unknown keys cannot evict known
 * webhooks from a cache"), over an in-memory loader that counts its loads.
 */
import { describe, expect, it } from 'vitest';
import { WebhookDirectory, type WebhookCredentials, type WebhookKey } from '../../src/receiver/authenticate.js';

const known: WebhookCredentials = {
  webhookId: 'w1',
  companyId: 'c1',
  clientIdentifier: 'skh_known',
  endpointKey: 'known-key',
  authType: 'BASIC',
  active: true,
  apiBaseUrl: new URL('https://api.example.com/api'),
  extraBaseUrls: [],
  secretSha256: Buffer.alloc(32),
  previousSecretSha256: null,
  secret: null,
  previousSecret: null,
  previousSecretExpiresAt: null,
};

function counting(): { directory: WebhookDirectory; loads: WebhookKey[] } {
  const loads: WebhookKey[] = [];
  const directory = new WebhookDirectory(async (key) => {
    loads.push(key);
    return ('endpointKey' in key && key.endpointKey === known.endpointKey) || ('clientIdentifier' in key && key.clientIdentifier === known.clientIdentifier) ? known : null;
  });
  return { directory, loads };
}

describe('WebhookDirectory', () => {
  it('answers a known webhook from its cache after the first lookup', async () => {
    const { directory, loads } = counting();
    expect(await directory.byEndpointKey('known-key')).toBe(known);
    expect(await directory.byEndpointKey('known-key')).toBe(known);
    expect(await directory.byClientIdentifier('skh_known')).toBe(known);
    expect(loads).toEqual([{ endpointKey: 'known-key' }, { clientIdentifier: 'skh_known' }]);
  });

  it('keeps the known webhooks through a flood of 60,000 unknown keys (more than the cache holds)', async () => {
    const { directory, loads } = counting();
    await directory.byEndpointKey('known-key');
    for (let i = 0; i < 60_000; i++) expect(await directory.byEndpointKey(`random-${i}`)).toBeNull();
    loads.length = 0;
    expect(await directory.byEndpointKey('known-key')).toBe(known);
    expect(loads, 'the known webhook was still cached').toEqual([]);
  });

  it('remembers an unknown key briefly, so a repeat costs no lookup', async () => {
    const { directory, loads } = counting();
    await directory.byClientIdentifier('nobody');
    await directory.byClientIdentifier('nobody');
    expect(loads).toEqual([{ clientIdentifier: 'nobody' }]);
  });

  it('answers a key the database cannot take (a NUL character, a lone surrogate) as unknown, without a lookup', async () => {
    const { directory, loads } = counting();
    expect(await directory.byEndpointKey('known\u0000key')).toBeNull();
    expect(await directory.byClientIdentifier('skh_\ud800')).toBeNull();
    expect(loads).toEqual([]);
  });

  it('forgets everything when told a webhook changed', async () => {
    const { directory, loads } = counting();
    await directory.byEndpointKey('known-key');
    directory.invalidate();
    await directory.byEndpointKey('known-key');
    expect(loads).toHaveLength(2);
  });
});
