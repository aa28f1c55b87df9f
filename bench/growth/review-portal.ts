import { join } from "node:path";
import { defaultRandomBytes } from "../../src/accounts/secrets.ts";
import type { PortalConfig } from "../../src/config/portal-config.ts";
import { parseSettings } from "../../src/config/settings.ts";
import type { SiteSigning } from "../../src/distribution/tuf-repository.ts";
import { createAppContext } from "../../src/http/app.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import { createSubmissionsRuntime } from "../../src/pipeline/submissions-runtime.ts";
import { createStore } from "../../src/store/index.ts";
import { client, signUpAndSignIn } from "../../test/support/http-harness.ts";
import type { modRelease } from "../../test/support/catalog-project.ts";
import type { GeneratedPortal } from "../lib/generate-portal.ts";

export interface ReviewPortal {
  /** Milliseconds from the upload request's start until upload_status answers pending_review. */
  uploadUntilReview(release: ReturnType<typeof modRelease>): Promise<number>;
  stop(): Promise<void>;
}

/**
 * The local portal as `svc serve` assembles it (store, app, submissions runtime with its worker, the
 * HTTP server on loopback) over a generated portal, with a modder signed in through the real
 * accounts API. Rate limits are raised in this process's copy of the configuration only: the bench
 * uploads more often than a person would.
 */
export async function startReviewPortal(
  portal: GeneratedPortal,
  scannerEnv: Record<string, string>,
  signing: SiteSigning | null,
): Promise<ReviewPortal> {
  const config: PortalConfig = structuredClone(portal.config);
  for (const bucket of Object.keys(config.limits.rateLimits) as Array<keyof typeof config.limits.rateLimits>)
    config.limits.rateLimits[bucket] = { limit: 10_000, windowSeconds: 60 };
  const settings = parseSettings(
    { SVC_DEV_EMAIL: "return-token", SVC_LIVE_UPLOADS: "1", ...scannerEnv },
    { dataDir: join(portal.root, ".data") },
  );
  const store = await createStore(settings);
  const log = () => {};
  const app = await createAppContext({
    config,
    settings,
    siteDir: portal.siteDir,
    recordsDir: portal.recordsDir,
    store,
    log,
  });
  const pipeline = createSubmissionsRuntime({
    config,
    settings,
    store,
    root: portal.root,
    recordsDir: portal.recordsDir,
    siteDir: portal.siteDir,
    now: app.now,
    random: defaultRandomBytes,
    log,
    signing,
  });
  app.submissions = pipeline.backend;
  await pipeline.ready;
  const server = createPortalServer(app);
  const { port } = await listen(server, 0, "127.0.0.1");
  const origin = `http://127.0.0.1:${port}`;
  const call = client(origin);
  const modder = await signUpAndSignIn(call, "bench-modder@example.com", "Bench", "modder");
  return {
    async uploadUntilReview({ packageBytes, sidecar }) {
      const body = new FormData();
      body.append(
        "metadata",
        new Blob([JSON.stringify(sidecar)], { type: "application/json" }),
        "release.json",
      );
      body.append(
        "package",
        new Blob([new Uint8Array(packageBytes)], { type: "application/zip" }),
        "upload.zip",
      );
      const started = performance.now();
      const created = await fetch(`${origin}/api/v1/uploads`, {
        method: "POST",
        body,
        headers: { cookie: modder.cookie, "x-svc-csrf": modder.csrf },
      });
      const view = (await created.json()) as { submissionId?: string; code?: string; message?: string };
      if (!view.submissionId)
        throw new Error(`upload refused: ${created.status} ${view.code}: ${view.message}`);
      // Polled every 10 ms: the figure is at most that much late.
      for (;;) {
        const status = await call("GET", `/api/v1/uploads/${view.submissionId}`, { cookie: modder.cookie });
        const state = (status.json as { state?: string }).state;
        if (state === "pending_review") return performance.now() - started;
        if (state !== "uploaded" && state !== "validating")
          throw new Error(`upload ${view.submissionId} ended in ${state}: ${status.text.slice(0, 2000)}`);
        if (performance.now() - started > 120_000) throw new Error("no pending_review after 120 s");
        await new Promise((r) => setTimeout(r, 10));
      }
    },
    async stop() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await pipeline.worker.stop();
      await app.accounts?.flushPendingWrites();
      await store.close();
    },
  };
}
