import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // The store and browser suites start real servers; two workers fit this 2-core machine (three
    // were 10% faster but starved Chromium and clamd into timing races in two of three CI rehearsals).
    maxWorkers: 2,
    // Suites share a worker's module cache instead of re-importing the core per file (66 s of
    // imports -> 12-21 s). Suites keep their state in their own temp folders, stores and servers; a
    // suite that sets module-level state (a shared store, a fake clock) must undo it in its hooks.
    isolate: false,
    // expect.poll waits for a page or a server to reach a state; vitest's default of 1 s is less than
    // a busy 2-core machine takes to render a page and hash a file in Chromium. A wait, not a bound
    // under test: what the state must be is unchanged.
    expect: { poll: { timeout: 10_000 } },
    reporters: ["default", "./test/support/summary-reporter.ts"],
  },
});
