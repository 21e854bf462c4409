import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Behaviour suites start servers; two cores are better spent on one file at a time each.
    maxWorkers: 2,
  },
});
