import { defineConfig } from 'vitest/config';

/**
 * Two projects. `unit`: test/unit, in-memory fakes only, no PostgreSQL or Redis (`npm run test:unit`,
 * seconds). `services`: every other tier against the real PostgreSQL and Redis; each file gets its own
 * database (cloned from a template migrated once per run, in globalSetup) and its own BullMQ prefix.
 * `npm run test:integration` runs `services` without the slow fault files (test/faults) and the demo;
 * `npm test` runs everything.
 */
export default defineConfig({
  test: {
    pool: 'forks',
    maxWorkers: 2,
    fileParallelism: true,
    projects: [
      { test: { name: 'unit', include: ['test/unit/**/*.test.ts'], testTimeout: 10_000 } },
      {
        test: {
          name: 'services',
          include: ['test/{integration,e2e,faults,browser}/**/*.test.ts'],
          globalSetup: ['test/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
    ],
  },
});
