/**
 * Skyhook on a real Redis Cluster (REDIS_CLUSTER_NODES): three redis-server masters of this file's own,
 * the real runtime (role all) and the simulator. The cluster's nodes are read directly, with a plain
 * client per node, as the witness of where Skyhook's keys went.
 *
 * Proves: every Redis connection is a cluster client (the producer reaches every master); BASIC and OAuth
 * notifications are received (OAuth nonces stored in the cluster) and all end `processed`; a burst on one
 * resource still costs at most two fetches; every key (both BullMQ queues, nonces, fetch slots) lives in
 * the one hash slot of QUEUE_PREFIX, on one master; /readyz follows a master's outage; and the relay's
 * restart check covers every master: steady (no false alarm) until one restarts, then it re-queues at once.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { REDIS_URL } from '../helpers/database.js';
import { killAllClusterNodes, startOwnRedisCluster, type OwnClusterNode, type OwnRedisCluster } from '../helpers/redis-cluster.js';
import { startScenario, type Scenario } from '../helpers/scenario.js';
import { eventually } from '../helpers/skyhook.js';

let cluster: OwnRedisCluster;
let s: Scenario;
/** Notifications fired so far, for scenario.settled(). */
let fired = 0;

beforeAll(async () => {
  cluster = await startOwnRedisCluster();
  // REDIS_URL stays the machine's shared Redis: with REDIS_CLUSTER_NODES set nothing may go there.
  s = await startScenario({ env: { REDIS_CLUSTER_NODES: cluster.seeds, FETCH_MIN_INTERVAL_MS: '1000' } });
}, 60_000);

afterAll(async () => {
  // Closing BullMQ against a cluster that is down would wait for it: bring every node back first.
  for (const node of cluster?.nodes ?? []) if (!node.running()) await node.start().catch(() => {});
  await s?.close();
  await cluster?.stop();
  await killAllClusterNodes();
});

/** A plain (non-cluster) client of one node: it sees that node's keys only. */
async function onNode<T>(node: OwnClusterNode, fn: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({ host: '127.0.0.1', port: node.port, lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

async function scanAll(redis: Redis, pattern: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
    cursor = next;
    keys.push(...batch);
  } while (cursor !== '0');
  return keys;
}

/** Every node's keys matching `pattern`, by node port. */
async function keysByNode(pattern: string): Promise<Map<number, string[]>> {
  const entries = await Promise.all(cluster.nodes.map(async (n) => [n.port, await onNode(n, (r) => scanAll(r, pattern))] as const));
  return new Map(entries);
}

/** The node that serves `slot`, from the cluster's own slot map. */
async function ownerOf(slot: number): Promise<OwnClusterNode> {
  const ranges = await onNode(cluster.nodes[0]!, (r) => r.cluster('SLOTS'));
  const range = ranges.find(([start, end]) => slot >= start && slot <= end);
  const node = cluster.nodes.find((n) => n.port === range?.[2]?.[1]);
  if (!node) throw new Error(`no node serves slot ${slot}`);
  return node;
}

const prefixSlot = () => onNode(cluster.nodes[0]!, (r) => r.cluster('KEYSLOT', s.prefix));

const readyz = async () => {
  const res = await fetch(`${s.skyhook.url}/readyz`);
  return { status: res.status, body: (await res.json()) as { database: boolean; redis: boolean } };
};

const finalSnapshotVersion = async (href: string) => {
  const { rows } = await s.sql.query<{ body: { version: number } }>('SELECT body FROM resources WHERE href = $1', [href]);
  return rows[0]?.body.version;
};

describe('Skyhook on a Redis Cluster', () => {
  it('connects to the cluster only, and /readyz asks every master', async () => {
    expect(await readyz()).toEqual({ status: 200, body: { status: 'ready', database: true, redis: true } });
    // /readyz went to every master through the producer connection; the worker's connection is there too.
    const names = await Promise.all(cluster.nodes.map((n) => onNode(n, async (r) => [...String(await r.client('LIST')).matchAll(/ name=(\S+)/g)].map((m) => m[1]))));
    for (const onThisNode of names) expect(onThisNode).toContain('skyhook-producer');
    expect(names.flat()).toContain('skyhook-worker');
  });

  it('receives BASIC and OAuth notifications (nonces in the cluster) and processes every one', async () => {
    await s.company('basic', { authType: 'BASIC' });
    await s.company('oauth', { authType: 'OAUTH', sharedTarget: true });
    const sent = [
      ...(await s.sim.fire({ companyId: 'basic', eventType: 'TripRequest', count: 40, resources: 8 })),
      ...(await s.sim.fire({ companyId: 'oauth', eventType: 'TripRequest', count: 40, resources: 8 })),
    ];
    fired += sent.length;
    await s.sim.idle();
    await s.settled(fired, 30_000);

    expect(await s.statusCounts()).toEqual({ processed: fired });
    const report = s.sim.report();
    expect(report.notifications.filter((n) => n.status !== 'delivered')).toEqual([]);
    for (const r of report.resources) expect(await finalSnapshotVersion(r.href), r.href).toBe(r.version);
    const { rows } = await s.sql.query<{ by: string; n: number }>('SELECT authenticated_by AS by, count(*)::int AS n FROM notifications GROUP BY 1 ORDER BY 1');
    expect(rows).toEqual([{ by: 'basic', n: 40 }, { by: 'oauth', n: 40 }]);

    // Every accepted OAuth notification left its nonce, and all of them sit on one node.
    const nonces = [...(await keysByNode(`${s.prefix}:nonce:*`)).values()].filter((keys) => keys.length > 0);
    expect(nonces).toHaveLength(1);
    expect(nonces[0]!.length).toBeGreaterThanOrEqual(40);
  });

  it('coalesces a burst on one resource into at most two fetches', async () => {
    const burst = await s.sim.fire({ companyId: 'basic', eventType: 'TripRequest', resourceId: 'rfq-cluster-burst', count: 50 });
    fired += burst.length;
    await s.settled(fired, 30_000);
    const href = burst[0]!.notification.href;
    const fetches = s.fetchesOf(href);
    expect(fetches.length).toBeGreaterThanOrEqual(1);
    expect(fetches.length).toBeLessThanOrEqual(2);
    expect(await finalSnapshotVersion(href)).toBe(50);
    expect(await s.statusCounts()).toEqual({ processed: fired });
  });

  it('keeps every key in the hash slot of QUEUE_PREFIX, on one master, and none in the standalone Redis', async () => {
    const slot = await prefixSlot();
    const owner = await ownerOf(slot);
    const byNode = await keysByNode(`${s.prefix}:*`);
    for (const [port, keys] of byNode) if (port !== owner.port) expect(keys, `keys on node ${port}`).toEqual([]);

    const keys = byNode.get(owner.port)!;
    expect(keys.some((k) => k.startsWith(`${s.prefix}:fetch:`))).toBe(true); // the fetch queue
    expect(keys.some((k) => k.startsWith(`${s.prefix}:maintenance:`))).toBe(true); // the retention queue
    expect(keys.some((k) => k.startsWith(`${s.prefix}:nonce:`))).toBe(true);
    const slots = await onNode(owner, (r) => Promise.all(keys.map((k) => r.cluster('KEYSLOT', k))));
    expect(new Set(slots)).toEqual(new Set([slot]));

    const standalone = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await standalone.connect();
      expect(await scanAll(standalone, `${s.prefix}*`)).toEqual([]);
    } finally {
      standalone.disconnect();
    }
  });

  it('reports a master outage on /readyz, and re-queues at once when any master restarted (never before)', async () => {
    // A row left `queued` whose job Redis lost: only the relay's restart check re-queues it this soon
    // (its stale-row scan waits 60 s). Its href is new, so no job of an earlier test can claim it; the
    // simulator answers 404 for it, which ends the row `processed` (outcome `gone`).
    const { rows } = await s.sql.query<{ id: string; href: string }>(
      `INSERT INTO notifications (company_id, webhook_id, resource_id, type, href, body, authenticated_by, status)
       SELECT company_id, webhook_id, 'orphan', type, regexp_replace(href, '[^/]+$', 'orphan'), body, authenticated_by, 'queued'
       FROM notifications WHERE status = 'processed' ORDER BY id LIMIT 1 RETURNING id, href`,
    );
    const orphan = rows[0]!;
    fired += 1;
    const orphanStatus = async () => (await s.sql.query<{ status: string }>('SELECT status FROM notifications WHERE id = $1', [orphan.id])).rows[0]!.status;

    // Ten relay rounds (200 ms) with no restart: a check that asked one random node would see its run_id
    // change nearly every round and re-queue the row.
    await new Promise((r) => setTimeout(r, 2000));
    expect(await orphanStatus()).toBe('queued');

    // A master that holds none of Skyhook's keys: its restart is still seen.
    const owner = await ownerOf(await prefixSlot());
    const other = cluster.nodes.find((n) => n !== owner)!;
    await other.stop();
    await eventually(async () => (await readyz()).status === 503, '/readyz 503 while a master is down', 20_000);
    expect((await readyz()).body).toMatchObject({ database: true, redis: false });

    await other.start();
    await cluster.waitUntilOk();
    await eventually(async () => (await readyz()).status === 200, '/readyz 200 once the cluster is ok again', 20_000);
    await eventually(async () => (await orphanStatus()) === 'processed', 'the orphaned row processed after the restart', 20_000);
    expect(s.fetchesOf(orphan.href)).toHaveLength(1);
    expect(await s.statusCounts()).toEqual({ processed: fired });
  });
});

describe('REDIS_CLUSTER_NODES', () => {
  it('is a list of seed addresses, and a bad one stops start-up with one line naming the variable', () => {
    expect(loadConfig({}).redisClusterNodes).toBeUndefined();
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'redis-1:6379, 10.0.0.2:7000,[::1]:7001' }).redisClusterNodes).toEqual([
      { host: 'redis-1', port: 6379 },
      { host: '10.0.0.2', port: 7000 },
      { host: '::1', port: 7001 },
    ]);
    for (const bad of ['redis-1', 'redis-1:0', 'redis://redis-1:6379', ' , ']) {
      expect(() => loadConfig({ REDIS_CLUSTER_NODES: bad })).toThrow(/^invalid configuration: REDIS_CLUSTER_NODES must be comma-separated host:port seed nodes/);
    }
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'redis-1:6379', REDIS_URL: 'redis://redis-1:6379/2' })).toThrow(/REDIS_URL must not select a database other than 0/);
  });
});
