/**
 * A client of the live stream over Server-Sent Events: one `notification` event per status change, a
 * comment every HEARTBEAT_MS (proxies close idle connections), `resync` when changes may have been missed.
 * A client that reads slower than events come is not allowed to pile them up in memory: past
 * MAX_BUFFERED_BYTES its events are dropped, and it is told how many with a `resync`.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { NotificationStream } from '../services/notification-stream.js';

const HEARTBEAT_MS = 15_000;
const MAX_BUFFERED_BYTES = 1024 * 1024;
/** x-accel-buffering: nginx and similar proxies buffer responses unless told not to. */
const EVENT_STREAM_HEADERS = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', connection: 'keep-alive', 'x-accel-buffering': 'no' };
/** How long a new client waits for the process's LISTEN connection before a 503. */
const LISTENING_TIMEOUT_MS = 5_000;

/** `companyId` narrows the stream to one company's notifications; `notificationId` (the console's notification page) to one. */
export async function streamToClient(stream: NotificationStream, req: FastifyRequest, reply: FastifyReply, filter: { companyId?: string; notificationId?: string }): Promise<FastifyReply> {
  const res = reply.raw;
  let dropped = 0;
  const write = (text: string): boolean => {
    if (res.writableLength > MAX_BUFFERED_BYTES) return false;
    res.write(text);
    return true;
  };
  const send = (event: string, data: unknown) => {
    if (dropped > 0 && write(`event: resync\ndata: ${JSON.stringify({ reason: `${dropped} events were dropped: the client read too slowly` })}\n\n`)) dropped = 0;
    if (!write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`)) dropped++;
  };
  // Subscribed before the answer starts: a full stream is still answered with a problem (503).
  const unsubscribe = stream.subscribe({ companyId: filter.companyId }, {
    event: (e) => {
      if (filter.notificationId === undefined || e.id === filter.notificationId) send('notification', e);
    },
    resync: (reason) => send('resync', { reason }),
    end: () => res.end(),
  });
  // Answered once the process listens, so the client sees every change after its 200.
  await stream.listening(LISTENING_TIMEOUT_MS).catch((err: unknown) => {
    unsubscribe();
    throw err;
  });
  const about = `${filter.notificationId ? ` of notification ${filter.notificationId}` : ''}${filter.companyId ? ` of company ${filter.companyId}` : ''}`;
  openEventStream(req, reply, `streaming status changes${about}`, write, unsubscribe);
  return reply;
}

/**
 * Starts a Server-Sent Events answer, the reply's own from here on: its headers, `retry` and a first comment,
 * then a heartbeat through `write` every HEARTBEAT_MS until the client goes (then `closed`) or the answered stop is called.
 */
export function openEventStream(req: FastifyRequest, reply: FastifyReply, comment: string, write: (text: string) => unknown, closed: () => void): () => void {
  reply.hijack();
  reply.raw.writeHead(200, EVENT_STREAM_HEADERS);
  reply.raw.write(`retry: 5000\n: ${comment}\n\n`);
  const heartbeat = setInterval(() => write(': heartbeat\n\n'), HEARTBEAT_MS);
  req.raw.socket.on('close', () => {
    clearInterval(heartbeat);
    closed();
  });
  return () => clearInterval(heartbeat);
}
