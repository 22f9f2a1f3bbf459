/**
 * A TCP proxy on a fixed 127.0.0.1 port in front of a real server, whose behaviour a test switches at
 * will: `pass` (forward), `refuse` (nothing listens: ECONNREFUSED), `reset` (accept, then close at
 * once) or `blackhole` (accept and never answer). Switching away from `pass` cuts every open link, as a
 * network failure or a server crash would. `cut(keep)` does the same selectively: it refuses new
 * connections and cuts every open link except those `keep` spares, judged by the link's first chunk (for
 * PostgreSQL its StartupMessage, which names the application). `stall(which)` makes open links go
 * silent instead: kept open, nothing carried either way, as when a NAT or firewall forgets a connection
 * or a host vanishes without a FIN; new connections pass. Optionally records what clients sent (to
 * read what one process told another, e.g. the webhook secrets Skyhook registers on the simulator).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

export type ProxyMode = 'pass' | 'refuse' | 'reset' | 'blackhole';

export interface SwitchableProxy {
  port: number;
  setMode(mode: ProxyMode): Promise<void>;
  /** Sets the upstream (for a proxy started before its target). */
  setTarget(target: { host: string; port: number }): void;
  /** The forwarded links: the client's first chunk, and the local port of the upstream socket (the `client_port` PostgreSQL sees). */
  links(): { startup: Buffer; upstreamPort: number | undefined }[];
  /** Mode `refuse` (nothing listens from now on), cutting every open link except those `keep` spares. */
  cut(keep?: (startup: Buffer) => boolean): void;
  /** The open links `which` picks (default all) stop carrying anything, without closing; answers how many. */
  stall(which?: (startup: Buffer) => boolean): number;
  /** Everything clients sent through the proxy so far, as text (when started with `record: true`). */
  recorded(): string;
  close(): Promise<void>;
}

export async function startSwitchableProxy(opts: { target?: { host: string; port: number }; record?: boolean } = {}): Promise<SwitchableProxy> {
  let target = opts.target;
  let mode: ProxyMode = 'pass';
  const sockets = new Set<Socket>();
  const links = new Set<{ client: Socket; upstream: Socket; startup: Buffer }>();
  const recorded: Buffer[] = [];

  const onConnection = (client: Socket) => {
    sockets.add(client);
    client.on('close', () => sockets.delete(client));
    client.on('error', () => client.destroy());
    if (mode === 'reset') {
      client.destroy();
      return;
    }
    if (mode === 'blackhole' || !target) {
      client.on('data', () => {}); // read and drop, answer nothing
      return;
    }
    const upstream = connect(target.port, target.host);
    sockets.add(upstream);
    const link: { client: Socket; upstream: Socket; startup: Buffer } = { client, upstream, startup: Buffer.alloc(0) };
    links.add(link);
    client.once('data', (chunk: Buffer) => {
      link.startup = chunk;
    });
    const drop = () => {
      client.destroy();
      upstream.destroy();
      links.delete(link);
    };
    upstream.on('close', () => {
      sockets.delete(upstream);
      drop();
    });
    upstream.on('error', drop);
    client.on('close', drop);
    if (opts.record) client.on('data', (chunk: Buffer) => recorded.push(Buffer.from(chunk)));
    client.pipe(upstream);
    upstream.pipe(client);
  };

  let server: Server | undefined;
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      const s = createServer(onConnection);
      s.once('error', reject);
      s.listen(port, '127.0.0.1', () => {
        server = s;
        resolve((s.address() as { port: number }).port);
      });
    });
  const unlisten = () =>
    new Promise<void>((resolve) => {
      const s = server;
      server = undefined;
      if (!s) return resolve();
      s.close(() => resolve());
    });
  const cutAll = (keep: (startup: Buffer) => boolean = () => false) => {
    const spared = new Set([...links].filter((l) => keep(l.startup)).flatMap((l) => [l.client, l.upstream]));
    for (const s of [...sockets]) {
      if (spared.has(s)) continue;
      s.destroy();
      sockets.delete(s);
    }
  };

  const port = await listen(0);
  return {
    port,
    async setMode(next) {
      if (next === mode) return;
      const previous = mode;
      mode = next;
      cutAll();
      if (next === 'refuse') await unlisten();
      else if (previous === 'refuse') {
        // The port was free a moment ago; retry briefly in case the OS is slow to release it.
        for (let i = 0; ; i++) {
          try {
            await listen(port);
            break;
          } catch (err) {
            if (i >= 50) throw err;
            await new Promise((r) => setTimeout(r, 100));
          }
        }
      }
    },
    setTarget(t) {
      target = t;
    },
    links: () => [...links].map((l) => ({ startup: l.startup, upstreamPort: l.upstream.localPort })),
    cut(keep) {
      mode = 'refuse';
      void unlisten();
      cutAll(keep);
    },
    stall(which = () => true) {
      const stalled = [...links].filter((l) => which(l.startup));
      for (const { client, upstream } of stalled) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        // Read and drop, so neither side is ever pushed back or closed.
        for (const s of [client, upstream]) s.on('data', () => {}).resume();
      }
      return stalled.length;
    },
    recorded: () => Buffer.concat(recorded).toString('utf8'),
    async close() {
      cutAll();
      await unlisten();
    },
  };
}

/** A proxy forwarding to `target` from the start: `startSwitchableProxy({ target })`. */
export const startTcpProxy = (target: { host: string; port: number }): Promise<SwitchableProxy> => startSwitchableProxy({ target });
