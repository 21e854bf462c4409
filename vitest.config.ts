import { defineConfig } from 'vitest/config';

/**
 * Two projects: `embedded` runs every test; `distributed` runs the behaviour suites again
 * against the distributed deployment (real daprd sidecars, Redis, FerretDB), started per file by
 * the harness. `npm test` runs both.
 */
export default defineConfig({
  test: {
    reporters: ['default', './test/summary-reporter.ts'],
    // The dashboard (web/dist) the api app serves, built when stale.
    globalSetup: ['./test/build-web.setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // expect.poll gives up after this (vitest's own 1 s is shorter than a busy machine takes to
    // draw a page); one that holds returns at once.
    expect: { poll: { timeout: 15_000 } },
    // Behaviour suites start servers; two cores are better spent on one file at a time each.
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: { name: 'embedded', include: ['test/unit/**/*.test.ts', 'test/behaviour/**/*.test.ts'] },
      },
      {
        extends: true,
        test: {
          name: 'distributed',
          include: ['test/behaviour/**/*.test.ts', 'test/distributed/**/*.test.ts'],
          env: { MAILROOM_TEST_MODE: 'distributed' },
          testTimeout: 120_000,
          hookTimeout: 180_000,
          expect: { poll: { timeout: 60_000 } },
        },
      },
    ],
  },
});
