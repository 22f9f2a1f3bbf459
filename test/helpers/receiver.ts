/**
 * A company's own application, as the delivery tests need one: a real HTTP server on a free port that
 * verifies every request with the reference Standard Webhooks library (the npm package `standardwebhooks`),
 * records what it got, and answers what the test tells it to (by default 200 at once).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface Received {
  webhookId: string;
  timestamp: string;
  signature: string;
  body: string;
  /** The parsed body, when it verified. */
  event: { id: number | string; type: string; companyId: string; resource: { type: string; id: string; href: string; version: number; previousVersion: number | null } | null; eventTypes: string[]; changes: unknown; snapshot: unknown; snapshotOmitted?: boolean };
  /** Which of the secrets verified it (index in `secrets`), or -1. */
  verifiedWith: number;
  at: number;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Answer after this long (a hanging destination). */
  delayMs?: number;
}

export interface TestReceiver {
  url: string;
  /** The secrets it verifies with, in turn (set them after creating the destination, and at each rotation). */
  secrets: string[];
  received: Received[];
  /** Every request, the ones answered non-2xx included. */
  attempts: Received[];
  /** What to answer a request (default: 200). */
  answer: (r: Received) => Answer | Promise<Answer>;
  close(): Promise<void>;
}

const read = (req: IncomingMessage) =>
  new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });

export async function startReceiver(path = '/hooks/skyhook'): Promise<TestReceiver> {
  const receiver: TestReceiver = {
    url: '',
    secrets: [],
    received: [],
    attempts: [],
    answer: () => ({ status: 200 }),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
  const server: Server = createServer(async (req, res) => {
    const body = await read(req);
    const headers = { 'webhook-id': String(req.headers['webhook-id']), 'webhook-timestamp': String(req.headers['webhook-timestamp']), 'webhook-signature': String(req.headers['webhook-signature']) };
    let verifiedWith = -1;
    let event: Received['event'] | undefined;
    for (const [i, secret] of receiver.secrets.entries()) {
      try {
        event = new Webhook(secret).verify(body, headers) as Received['event'];
        verifiedWith = i;
        break;
      } catch {
        // Not this secret: the next one, or none (verifiedWith stays -1 and the test sees it).
      }
    }
    const r: Received = { webhookId: headers['webhook-id'], timestamp: headers['webhook-timestamp'], signature: headers['webhook-signature'], body, event: event ?? JSON.parse(body), verifiedWith, at: Date.now() };
    receiver.attempts.push(r);
    const a = await receiver.answer(r);
    if (a.delayMs) await new Promise((resolve) => setTimeout(resolve, a.delayMs));
    if (a.status >= 200 && a.status < 300) receiver.received.push(r);
    if (res.destroyed) return;
    res.writeHead(a.status, { 'content-type': 'text/plain', ...a.headers });
    res.end(a.body ?? 'ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return receiver;
}
