/**
 * The lifecycle's contract (test/helpers/lifecycle-contract.ts) against its in-memory implementation,
 * test/helpers/memory-lifecycle.ts: the fast tier's stand-in must do what PostgreSQL does.
 */
import { randomUUID } from 'node:crypto';
import { createMemoryLifecycle } from '../helpers/memory-lifecycle.js';
import { lifecycleContract } from '../helpers/lifecycle-contract.js';

lifecycleContract('in memory', async () => {
  const company = { id: randomUUID(), webhookId: randomUUID(), revision: 1 };
  const paused = new Set<string>();
  const memory = createMemoryLifecycle({ paused: (id) => paused.has(id) });
  return {
    lifecycle: memory,
    company,
    age: async (ids, days) => {
      for (const id of ids) {
        const row = memory.inspect.row(id)!;
        row.receivedAt = new Date(row.receivedAt.getTime() - days * 86_400_000);
      }
    },
    read: async (id) => {
      const row = memory.inspect.row(id);
      return row && { ...row };
    },
    pause: async (companyId) => void paused.add(companyId),
    resource: async (ref) => memory.inspect.resource(ref),
  };
});
