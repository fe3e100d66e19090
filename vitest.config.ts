import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Rollouts start worker threads; two cores are shared between test files and agents.
    fileParallelism: true,
    maxWorkers: 2,
    // Generous: on a loaded machine (other suites, a CPU hog) starting a `silo` process and its
    // sandbox takes tens of seconds where it takes one alone. A test that hangs is still caught.
    testTimeout: 180_000,
    hookTimeout: 180_000,
  },
});
