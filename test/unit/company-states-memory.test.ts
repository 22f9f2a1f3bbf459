/**
 * A company's state's contract (test/helpers/company-states-contract.ts) against its in-memory
 * implementation, test/helpers/memory-company-states.ts: the fast tier's stand-in must do what
 * PostgreSQL and the gate do.
 */
import { createMemoryCompanyStates } from '../helpers/memory-company-states.js';
import { companyStatesContract } from '../helpers/company-states-contract.js';

companyStatesContract('in memory', async () => {
  /** A token's verdict is in its name; a refused one the marketplace takes back is remembered here. */
  const takenBack = new Set<string>();
  const requeued = new Map<string, number>();
  let n = 0;
  const states = createMemoryCompanyStates({
    verdict: (row) => {
      const token = row.apiTokenEncrypted!;
      if (token.startsWith('accepted') || takenBack.has(token)) return { status: 'accepted', error: null };
      if (token.startsWith('refused')) return { status: 'refused', error: 'marketplace answered 401' };
      return { status: 'unreachable', error: 'GET /webhooks/settings failed: ECONNREFUSED' };
    },
    queueWaiting: async (companyId) => (requeued.set(companyId, (requeued.get(companyId) ?? 0) + 1), 0),
  });
  return {
    states,
    newCompany: async (kind) => {
      const row = states.add({ apiTokenEncrypted: `${kind === 'no answer' ? 'silent' : kind}-${++n}` });
      return { id: row.id, revision: row.credentialsRevision };
    },
    credentials: (_companyId, kind) => ({ apiTokenEncrypted: `${kind}-${++n}` }),
    acceptRefused: async (companyId) => void takenBack.add(states.row(companyId)!.apiTokenEncrypted!),
    requeued: (companyId) => requeued.get(companyId) ?? 0,
    exists: async (companyId) => states.row(companyId) !== undefined,
  };
});
