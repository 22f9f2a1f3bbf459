/**
 * A Redis Cluster of the test's own (never the machine's shared Redis): three masters, no replicas, each
 * a redis-server on free 127.0.0.1 ports (its client port and its cluster bus port), without persistence,
 * with a temporary directory of its own for its nodes.conf. A node can be stopped (SIGTERM) and started
 * again on the same ports: it rejoins the cluster from its nodes.conf, empty, with a new run_id.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { killAllRedisServers, redisServerProcess } from './redis-server.js';
import { freePort } from './skyhook.js';

const execFileAsync = promisify(execFile);

/** Short, so a stopped master is marked failed (cluster_state:fail) within seconds. */
const NODE_TIMEOUT_MS = 2000;

export interface OwnClusterNode {
  port: number;
  /** `127.0.0.1:<port>`, as the cluster announces it. */
  address: string;
  running(): boolean;
  /** SIGTERM, then waits for the process to exit (SIGKILL after 5 s). */
  stop(): Promise<void>;
  /** Starts it again on the same ports and waits until it answers PING (not until the cluster is ok). */
  start(): Promise<void>;
}

export interface OwnRedisCluster {
  nodes: OwnClusterNode[];
  /** Every node, comma-separated: the value of REDIS_CLUSTER_NODES. */
  seeds: string;
  /** Resolves once every node runs, knows every other node and reports cluster_state:ok. */
  waitUntilOk(timeoutMs?: number): Promise<void>;
  /** Stops every node and removes their directories. */
  stop(): Promise<void>;
}

const directories = new Set<string>();

export async function startOwnRedisCluster(masters = 3): Promise<OwnRedisCluster> {
  const ports = await distinctFreePorts(masters * 2);
  const nodes: OwnClusterNode[] = [];
  const dirs: string[] = [];
  for (let i = 0; i < masters; i++) {
    const dir = await mkdtemp(join(tmpdir(), 'skyhook-cluster-'));
    directories.add(dir);
    dirs.push(dir);
    nodes.push(clusterNode(ports[2 * i]!, ports[2 * i + 1]!, dir));
  }
  const cluster: OwnRedisCluster = {
    nodes,
    seeds: nodes.map((n) => n.address).join(','),
    waitUntilOk: (timeoutMs = 20_000) => waitUntilOk(nodes, timeoutMs),
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
      await removeDirectories(dirs);
    },
  };
  try {
    await Promise.all(nodes.map((n) => n.start()));
    // Assigns the 16384 slots evenly and waits until the nodes agree on them.
    await execFileAsync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => n.address), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 30_000 });
    await cluster.waitUntilOk();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

function clusterNode(port: number, busPort: number, dir: string): OwnClusterNode {
  const args = [
    '--port', String(port),
    '--cluster-port', String(busPort),
    '--bind', '127.0.0.1',
    '--cluster-enabled', 'yes',
    '--cluster-config-file', 'nodes.conf',
    '--cluster-node-timeout', String(NODE_TIMEOUT_MS),
    '--dir', dir,
    '--save', '',
    '--appendonly', 'no',
    '--daemonize', 'no',
  ];

  return { port, address: `127.0.0.1:${port}`, ...redisServerProcess(port, args) };
}

/** freePort() may hand out a port twice in a row; a node needs two that differ from every other's. */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

async function waitUntilOk(nodes: OwnClusterNode[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no node answered';
  while (Date.now() < deadline) {
    const states = await Promise.all(nodes.map((n) => clusterInfo(n.port).catch((err) => String(err))));
    const notOk = states.filter((info) => !/^cluster_state:ok\s*$/m.test(info) || !new RegExp(`^cluster_known_nodes:${nodes.length}\\s*$`, 'm').test(info));
    if (notOk.length === 0) return;
    last = notOk[0]!.split('\n').slice(0, 2).join(' ').trim();
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`Redis Cluster not ok within ${timeoutMs} ms: ${last}`);
}

async function clusterInfo(port: number): Promise<string> {
  const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, enableOfflineQueue: false });
  probe.on('error', () => {});
  try {
    await probe.connect();
    return await probe.cluster('INFO');
  } finally {
    probe.disconnect();
  }
}

async function removeDirectories(dirs: Iterable<string>): Promise<void> {
  for (const dir of [...dirs]) {
    await rm(dir, { recursive: true, force: true });
    directories.delete(dir);
  }
}

/** SIGKILLs every redis-server the helpers started in this process (the nodes among them) and removes the nodes' directories (for afterAll). */
export async function killAllClusterNodes(): Promise<void> {
  killAllRedisServers();
  await removeDirectories(directories);
}
