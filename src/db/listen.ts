/**
 * A PostgreSQL LISTEN connection that stays: it reconnects by itself (every second while PostgreSQL is
 * away) and listens again, telling its owner when it is connected and when it lost the connection, since
 * notifications sent meanwhile are lost to it. Used for webhook changes (each process's credential cache)
 * and for notification status changes (the live stream).
 */
import pg from 'pg';

export interface Listener {
  onNotification(channel: string, payload: string | undefined): void;
  /** LISTEN is in place (again): what was sent while it was not is lost. */
  onConnected?(): void;
  /** The connection was lost, or could not be made. */
  onError(err: unknown): void;
}

const RECONNECT_MS = 1000;

/** `channels` are Skyhook's own constant names (identifiers, not input). */
export function listen(databaseUrl: string, channels: string[], listener: Listener): { stop: () => Promise<void> } {
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  const connect = async () => {
    const c = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 3000, application_name: 'skyhook-listen' });
    client = c;
    c.on('notification', (n) => listener.onNotification(n.channel, n.payload));
    c.on('error', (err) => {
      listener.onError(err);
      reconnect();
    });
    c.on('end', () => reconnect());
    try {
      await c.connect();
      for (const channel of channels) await c.query(`LISTEN ${channel}`);
      listener.onConnected?.();
    } catch (err) {
      listener.onError(err);
      await c.end().catch(listener.onError);
      reconnect();
    }
  };
  const reconnect = () => {
    if (stopped || retry) return;
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, RECONNECT_MS);
    retry.unref();
  };

  void connect();
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(retry);
      await client?.end().catch(listener.onError);
    },
  };
}
