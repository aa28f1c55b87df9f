import { join } from "node:path";
import { vi } from "vitest";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import type { CatalogProject } from "./catalog-project.ts";

// One queue for the whole worker: suites share a worker (isolate: false) and the fake clock is the process's.
let clockHeld: Promise<unknown> = Promise.resolve();
/** Runs fn with Date frozen at iso; one at a time, since the fake clock is the whole process's. */
export function withClock<T>(iso: string, fn: () => Promise<T>): Promise<T> {
  const run = clockHeld.then(async () => {
    vi.useFakeTimers({ toFake: ["Date"], now: new Date(iso) });
    try {
      return await fn();
    } finally {
      vi.useRealTimers();
    }
  });
  clockHeld = run.catch(() => undefined);
  return run;
}

/** The fields of a catalog project publisherOptions reads, for a copied tree. */
export function asProject(root: string): CatalogProject {
  return {
    root,
    siteDir: join(root, "site"),
    recordsDir: join(root, "records"),
    config: loadPortalConfig(join(root, "portal.config.json")),
  } as CatalogProject;
}

/** Paths whose bytes differ between two trees (missing on one side included), for a readable failure. */
export function differences(actual: Record<string, string>, expected: Record<string, string>): string[] {
  const paths = new Set([...Object.keys(actual), ...Object.keys(expected)]);
  return [...paths].filter((p) => actual[p] !== expected[p]).sort();
}
