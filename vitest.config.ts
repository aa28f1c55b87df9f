import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The store and browser suites start real servers; two workers fit this 2-core machine.
    maxWorkers: 2,
    reporters: ["default", "./test/lib/summary-reporter.ts"],
  },
});
