/**
 * The marketplace client's typed error and the envelope entries it carries, apart from its transport
 * (client.ts), so that code which builds calls but does not make them can raise it without loading undici.
 */

/** An envelope entry as Skyhook reads it (contract.ts readEnvelopeMessage): always a text, and the field and code when the marketplace gave them. */
export interface EnvelopeEntry {
  message: string;
  field?: string;
  code?: string;
}

/**
 * `invalid_request`: the call was not sent, as a value it needs cannot be put in it (contract.ts pathSegment).
 * `token_refused`: the OAuth token endpoint refused the client credentials (or answered no token), so the call
 * was not sent; `token_unavailable`: the token endpoint did not answer, or answered 5xx/429 (worth asking again).
 */
export type MarketplaceErrorKind = 'network' | 'timeout' | 'http' | 'soft' | 'invalid_response' | 'invalid_request' | 'token_refused' | 'token_unavailable';

/** Answers worth asking again: the marketplace was busy or briefly failing. */
export const isTransientStatus = (status: number): boolean => status === 408 || status === 429 || status >= 500;

/** Network errors raised while connecting: the request was never sent. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

export class MarketplaceError extends Error {
  readonly status?: number;
  /** The envelope's error entries, read into one shape (contract.ts readEnvelopeMessage). */
  readonly errors: EnvelopeEntry[];
  readonly retryAfterMs?: number;
  /** The network error's code (kind `network`). */
  readonly code?: string;

  constructor(
    readonly kind: MarketplaceErrorKind,
    message: string,
    details: { status?: number; errors?: EnvelopeEntry[]; retryAfterMs?: number; code?: string } = {},
  ) {
    super(message);
    this.status = details.status;
    this.errors = details.errors ?? [];
    this.retryAfterMs = details.retryAfterMs;
    this.code = details.code;
  }

  /** No answer worth acting on came (no answer, or a transient status): worth asking again later. */
  get transient(): boolean {
    return this.kind === 'network' || this.kind === 'timeout' || this.kind === 'token_unavailable' || (this.kind === 'http' && isTransientStatus(this.status ?? 0));
  }

  /**
   * Whether the marketplace may have acted on the call although no success was read: the request may
   * have been sent and the answer is missing (a timeout, a dropped connection), unreadable (a 2xx
   * without JSON, too large), or a server error other than 503. A refusal (4xx, 503, a soft error), a
   * failure to connect or a call never sent means it did not.
   */
  get mayHaveActed(): boolean {
    switch (this.kind) {
      case 'timeout':
      case 'invalid_response':
        return true;
      case 'network':
        return !NOT_CONNECTED.has(this.code ?? '');
      case 'http':
        return (this.status ?? 0) >= 500 && this.status !== 503;
      case 'soft':
      case 'invalid_request':
      case 'token_refused':
      case 'token_unavailable':
        return false;
    }
  }
}
