/**
 * A PostgreSQL LISTEN connection that stays: it reconnects by itself (every second while PostgreSQL is
 * away) and listens again. Notifications sent while it is not listening are lost to it, so its owner is
 * told of every loss (an error, the connection's end, a failed liveness check) before anything else
 * happens, and again when it listens once more: an owner's cache built on "what I was not told has not
 * changed" is untrusted from the first and starts empty at the second. Used for webhook changes (each
 * process's credential cache), keys' changes (their cache), and notification status changes and events
 * (the live streams).
 *
 * A connection can also die silently (a NAT or firewall forgetting it, a failover, a host gone without
 * a FIN): nothing errors, nothing ends, and nothing is heard again. So the socket has TCP keepalive on,
 * and every PING_EVERY_MS the connection proves it still carries notifications: it NOTIFYs a channel of
 * its own and must hear the notification back within PING_TIMEOUT_MS, or it counts as lost. A silently
 * dead connection is thus noticed at most PING_EVERY_MS + PING_TIMEOUT_MS (10 s) after it died.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';

export interface Listener {
  onNotification(channel: string, payload: string | undefined): void;
  /** LISTEN is in place (again): what was sent while it was not is lost. */
  onConnected?(): void;
  /**
   * The connection was lost (an error, its end, no answer to the liveness check) or could not be made:
   * from now until onConnected, notifications may be missed. Said once per loss, before reconnecting.
   */
  onError(err: unknown): void;
}

export interface ListenOptions {
  /** How often the connection proves it still carries notifications (default PING_EVERY_MS). */
  pingEveryMs?: number;
  /** How long that round trip may take before the connection counts as lost (default PING_TIMEOUT_MS). */
  pingTimeoutMs?: number;
}

const RECONNECT_MS = 1000;
/**
 * One NOTIFY and its echo per this interval per listening connection (a few per process): nothing to the
 * database, and it bounds how long a dead connection goes unnoticed.
 */
export const PING_EVERY_MS = 5000;
/** Far above a healthy round trip (a millisecond), short enough to keep the bound in seconds. */
export const PING_TIMEOUT_MS = 5000;
/** The first keepalive probe after this much silence: keeps NAT entries fresh, lets the kernel find a dead peer. */
const KEEPALIVE_DELAY_MS = 5000;

interface Connection {
  client: pg.Client;
  /** Its loss was said: later errors and its end are the same loss. */
  lost: boolean;
  /** The next liveness check, or the running one's deadline. */
  timer?: NodeJS.Timeout;
  /** The running check's token and what hearing it back does. */
  echo?: { token: string; heard: () => void };
}

/** `channels` are Skyhook's own constant names (identifiers, not input). */
export function listen(databaseUrl: string, channels: string[], listener: Listener, opts: ListenOptions = {}): { stop: () => Promise<void> } {
  const pingEveryMs = opts.pingEveryMs ?? PING_EVERY_MS;
  const pingTimeoutMs = opts.pingTimeoutMs ?? PING_TIMEOUT_MS;
  // A channel of this listener's own, so its checks reach no other process (nor this one's owner).
  const pingChannel = `skyhook_ping_${randomBytes(8).toString('hex')}`;
  let current: Connection | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;

  /** The one way a connection is given up: the owner is told first, then it is ended and replaced. */
  const lose = (conn: Connection, err: unknown) => {
    if (conn.lost) return;
    conn.lost = true;
    clearTimeout(conn.timer);
    conn.echo = undefined;
    if (stopped) return;
    listener.onError(err);
    // With the check's query unanswered, end() destroys the socket rather than waiting on a dead peer.
    void conn.client.end().catch(listener.onError);
    reconnect();
  };

  /**
   * Why a NOTIFY round trip rather than `SELECT 1`: it proves what the owner relies on, that this very
   * session is still registered and still hears what is notified, not only that its socket answers.
   */
  const ping = async (conn: Connection) => {
    const token = randomBytes(6).toString('hex');
    const heard = new Promise<void>((resolve) => (conn.echo = { token, heard: resolve }));
    const late = new Promise<never>((_, reject) => {
      conn.timer = setTimeout(() => reject(new Error(`the listening connection did not carry its liveness check back within ${pingTimeoutMs} ms`)), pingTimeoutMs);
      conn.timer.unref();
    });
    try {
      await Promise.race([Promise.all([conn.client.query(`NOTIFY ${pingChannel}, '${token}'`), heard]), late]);
    } catch (err) {
      lose(conn, err);
      return;
    }
    clearTimeout(conn.timer);
    conn.echo = undefined;
    if (!conn.lost) schedulePing(conn);
  };
  const schedulePing = (conn: Connection) => {
    conn.timer = setTimeout(() => void ping(conn), pingEveryMs);
    conn.timer.unref();
  };

  const connect = async () => {
    const client = new pg.Client({
      connectionString: databaseUrl,
      connectionTimeoutMillis: 3000,
      keepAlive: true,
      keepAliveInitialDelayMillis: KEEPALIVE_DELAY_MS,
      // Names its channels, so an operator (or a test) can tell which listener a backend serves.
      application_name: `skyhook-listen ${channels.join(',')}`.slice(0, 63),
    });
    const conn: Connection = { client, lost: false };
    current = conn;
    client.on('notification', (n) => {
      if (n.channel === pingChannel) {
        if (conn.echo && n.payload === conn.echo.token) conn.echo.heard();
        return;
      }
      listener.onNotification(n.channel, n.payload);
    });
    client.on('error', (err) => lose(conn, err));
    // pg says an unexpected end as an error first; an end it does not (or ours, after a loss) is one all the same.
    client.on('end', () => lose(conn, new Error('the listening connection ended')));
    try {
      await client.connect();
      for (const channel of [...channels, pingChannel]) await client.query(`LISTEN ${channel}`);
    } catch (err) {
      lose(conn, err);
      return;
    }
    if (conn.lost || stopped) return;
    listener.onConnected?.();
    schedulePing(conn);
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
      const conn = current;
      if (!conn || conn.lost) return;
      conn.lost = true;
      clearTimeout(conn.timer);
      await conn.client.end().catch(listener.onError);
    },
  };
}
