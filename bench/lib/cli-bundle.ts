import { join } from "node:path";

export const REPO_ROOT = new URL("../../", import.meta.url).pathname;
/** `svc` as users run it. */
export const SVC = join(REPO_ROOT, "bin/svc.js");

/**
 * bin/svc.js starts the esbuild bundle (dist/svc.js) while it is fresh, else the sources through
 * tsx. A bench builds the bundle first when it is missing or stale, so its figures are the shipped
 * CLI's, start-up included.
 */
export async function ensureCliBundle(): Promise<void> {
  if (await cliBundleIsFresh()) return;
  // @ts-expect-error: plain .mjs scripts without types
  const { cleanCliBuild, cliBuildOptions } = await import("../../bin/build-cli.mjs");
  const { build } = await import("esbuild");
  cleanCliBuild();
  await build(await cliBuildOptions());
  console.log("built dist/svc.js (the CLI bundle was missing or older than src/)");
}

/**
 * False when src/ changed after the bundle was built: bin/svc.js then runs the sources through tsx,
 * which is slower. Benches check it again at the end and say so, since others edit src/ meanwhile.
 */
export async function cliBundleIsFresh(): Promise<boolean> {
  // @ts-expect-error: plain .mjs scripts without types
  const { bundleIsFresh } = await import("../../bin/cli-entry.mjs");
  return bundleIsFresh(REPO_ROOT) as boolean;
}

export function staleBundleNote(fresh: boolean): string {
  return fresh
    ? ""
    : "NOTE: src/ changed during the run, so some svc runs may have gone through tsx instead of dist/svc.js (slower); run again for the bundle's figures\n";
}
