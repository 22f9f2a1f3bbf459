/** The BullMQ dashboard (bull-board) at /admin/queues, behind the admin token. */
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { FastifyAdapter } from '@bull-board/fastify';
import type { Queue } from 'bullmq';
import type { FastifyInstance } from 'fastify';
import type { AuthFailureLimiter } from '../lib/auth-failure-limiter.js';
import { adminTokenCheck } from './auth.js';

const DASHBOARD_PATH = '/admin/queues';

export async function queueDashboard(app: FastifyInstance, deps: { adminToken: string; queues: Queue[]; limiter: AuthFailureLimiter }): Promise<void> {
  const serverAdapter = new FastifyAdapter();
  createBullBoard({ queues: deps.queues.map((q) => new BullMQAdapter(q)), serverAdapter });
  serverAdapter.setBasePath(DASHBOARD_PATH);
  app.addHook('onRequest', adminTokenCheck(deps.adminToken, { allowBasic: true, limiter: deps.limiter }));
  await app.register(serverAdapter.registerPlugin(), { prefix: DASHBOARD_PATH });
}
