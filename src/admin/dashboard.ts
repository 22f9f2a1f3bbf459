/** The BullMQ dashboard (bull-board) at /admin/queues: it can retry and remove jobs, so only `admin` and `operator` keys open it (SPEC §10.1). */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import { declareAccess } from '../access/guard.js';

const DASHBOARD_PATH = '/admin/queues';

export async function queueDashboard(app: FastifyInstance, deps: { queues: Queue[] }): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  createBullBoard({ queues: deps.queues.map((q) => new BullMQAdapter(q)), serverAdapter });
  serverAdapter.setBasePath(DASHBOARD_PATH);
  // A browser is asked for Basic credentials: any user name, the key (or ADMIN_TOKEN) as the password.
  declareAccess(app, 'queues', { basic: true });
  await app.register(serverAdapter.registerPlugin(), { prefix: DASHBOARD_PATH });
}
