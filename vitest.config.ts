import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Most suites wait on real servers, child processes and a loopback GitHub with latency, so the
    // two cores are idle a fifth of the time with two workers: three keep them busy (vitest 429 s ->
    // 323 s on this 2-core machine, both with every suite passing).
    maxWorkers: 3,
    // Suites share a worker's module cache instead of re-importing the core per file (66 s of
    // imports -> 12-21 s). Suites keep their state in their own temp folders, stores and servers; a
    // suite that sets module-level state (a shared store, a fake clock) must undo it in its hooks.
    isolate: false,
    reporters: ["default", "./test/lib/summary-reporter.ts"],
  },
});
