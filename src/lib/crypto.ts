/** Secrets at rest (SPEC §10): AES-256-GCM for what must be recovered, SHA-256 for what is only compared. */
import { createCipheriv, createDecipheriv, hash, randomBytes, timingSafeEqual } from 'node:crypto';

const VERSION = 'v1';

export function encryptSecret(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')}`;
}

export function decryptSecret(key: Buffer, sealed: string): string {
  const [version, payload] = sealed.split('.', 2);
  if (version !== VERSION || !payload) throw new Error('unknown secret format');
  const raw = Buffer.from(payload, 'base64url');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
  decipher.setAuthTag(raw.subarray(12, 28));
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
}

/** One-shot `crypto.hash`: cheaper than a Hash object for the short inputs hashed per request. */
export const sha256 = (value: string | Buffer): Buffer => hash('sha256', value, 'buffer');

/** Unguessable text: 32 random bytes unless told otherwise, URL-safe. */
export const randomToken = (bytes = 32): string => randomBytes(bytes).toString('base64url');

/** Constant-time comparison that does not leak length through an exception. */
export function constantTimeEqual(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}
