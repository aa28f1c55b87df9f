import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { client, type SignedIn, signUpAndSignIn } from "../support/http-harness.ts";
import { catalogProject, modRelease } from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";
import { copyTree, pool, publishedFolders, startServe } from "../support/crash.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";
import { modRecordsPath } from "../support/records.ts";

/**
 * `POST /api/v1/catalog/publish` on a real `svc serve` process, SIGKILLed between the files and the
 * database row (kills at every file operation, then a serve start around the commit point, are in
 * crash-import.test.ts; the retried route itself in test/submissions/http-flow.test.ts). After a restart (which recovers the
 * tree and completes what the files already say) and a retried publish, the submission is published
 * with exactly one catalog.published audit event, its staged bytes are gone, and svc check passes.
 */
const MOD = { modId: "crash-mod", version: "1.0.0" };
/** The mod's records file: crash-mod's first version, so it exists exactly when the record does. */
const RECORD = modRecordsPath(MOD.modId);

let work: string;
let base: string;
let env: Record<string, string>;
let submissionId: string;
let admin: SignedIn;
let modder: SignedIn;

const api = (origin: string) => client(origin);

async function waitForState(origin: string, who: SignedIn, id: string, state: string): Promise<void> {
  const call = api(origin);
  for (let i = 0; i < 600; i++) {
    const status = await call("GET", `/api/v1/uploads/${id}`, { cookie: who.cookie });
    if (status.json?.state === state) return;
    if (status.json?.state === "validation_failed") throw new Error(JSON.stringify(status.json));
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${id} never reached ${state}`);
}

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))("the publish route killed mid-publication", () => {
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "svc-crash-api-"));
    env = {
      SVC_DEV_EMAIL: "return-token",
      SVC_LIVE_UPLOADS: "1",
      SVC_BOOTSTRAP_ADMIN_EMAILS: "admin@example.com",
      SVC_CLAMSCAN: clamscanPath!,
      SVC_CLAMAV_DATABASE: makeSignatureDatabase(join(work, "clamav")),
    };
    const project = catalogProject((config) => {
      for (const bucket of Object.keys(config.limits.rateLimits) as Array<
        keyof typeof config.limits.rateLimits
      >) {
        config.limits.rateLimits[bucket] = { limit: 10_000, windowSeconds: 60 };
      }
    });
    base = join(work, "base");
    copyTree(project.root, base);
    project.cleanup();
    // An approved upload, on a portal that is then stopped cleanly.
    const portal = await startServe(base, { env });
    const call = api(portal.origin);
    admin = await signUpAndSignIn(call, "admin@example.com", "Admin");
    modder = await signUpAndSignIn(call, "modder@example.com", "Modder", "modder");
    const moderator = await signUpAndSignIn(call, "moderator@example.com", "Mo");
    const granted = await call("PUT", `/api/v1/accounts/${moderator.accountId}/roles`, {
      body: { roles: ["player", "moderator"] },
      cookie: admin.cookie,
      csrf: admin.csrf,
    });
    expect(granted.status).toBe(200);
    const { packageBytes, sidecar } = modRelease(MOD);
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
    const created = await fetch(`${portal.origin}/api/v1/uploads`, {
      method: "POST",
      body,
      headers: { cookie: modder.cookie, "x-svc-csrf": modder.csrf },
    });
    expect(created.status).toBe(201);
    submissionId = ((await created.json()) as { submissionId: string }).submissionId;
    await waitForState(portal.origin, modder, submissionId, "pending_review");
    const approved = await call("POST", `/api/v1/moderation/releases/${submissionId}/decision`, {
      body: { decision: "approve", notes: "Fine." },
      cookie: moderator.cookie,
      csrf: moderator.csrf,
    });
    expect(approved.json.state).toBe("approved");
    await portal.stop();
  }, 180_000);

  afterAll(() => rmSync(work, { recursive: true, force: true }));

  it("a restart and a retried publish complete the submission once", async () => {
    // Just before the commit point and just after it, the restart is what crash-import.test.ts
    // checks for svc serve; here the publish route dies where only the database step is missing.
    const scenarios: Array<{ name: string; killBefore?: string; killAfter?: string; filesKept: boolean }> = [
      {
        name: "between the files and the database row",
        killAfter: "rename:/commit-,unlink:publish.lock",
        filesKept: true,
      },
    ];
    await pool(scenarios, 2, async (scenario) => {
      const root = mkdtempSync(join(work, "run-"));
      copyTree(base, root);
      const what = `killed ${scenario.name}`;
      const doomed = await startServe(root, {
        env,
        fault: {
          scope: publishedFolders(root),
          ...(scenario.killBefore ? { killBefore: scenario.killBefore } : {}),
          ...(scenario.killAfter ? { killAfter: scenario.killAfter } : {}),
        },
      });
      const answer = await api(doomed.origin)("POST", "/api/v1/catalog/publish", {
        cookie: admin.cookie,
        csrf: admin.csrf,
      }).catch((error: unknown) => error);
      expect(answer, what).toBeInstanceOf(Error); // the connection died with the process
      expect((await doomed.exitedWithin()).signal, `${what}\n${doomed.stderr()}`).toBe("SIGKILL");

      const portal = await startServe(root, { env });
      const call = api(portal.origin);
      // The restart finished the transaction: files there exactly when the commit point was passed,
      // and then the submission is already completed by the start-up reconciliation.
      expect(existsSync(join(root, RECORD)), what).toBe(scenario.filesKept);
      const before = await call("GET", `/api/v1/uploads/${submissionId}`, { cookie: modder.cookie });
      expect(before.json.state, what).toBe(scenario.filesKept ? "published" : "approved");
      const retried = await call("POST", "/api/v1/catalog/publish", {
        cookie: admin.cookie,
        csrf: admin.csrf,
      });
      expect(retried.json, what).toMatchObject({ failed: 0, published: scenario.filesKept ? 0 : 1 });
      const status = await call("GET", `/api/v1/uploads/${submissionId}`, { cookie: modder.cookie });
      expect(status.json, what).toMatchObject({
        state: "published",
        publication: { packageUrl: expect.any(String) },
      });
      const audit = await call("GET", `/api/v1/audit/events?targetId=${submissionId}&limit=50`, {
        cookie: admin.cookie,
      });
      const published = audit.json.events.filter((e: { action: string }) => e.action === "catalog.published");
      expect(published, what).toHaveLength(1);
      expect(existsSync(join(root, ".data/uploads/staging", submissionId)), what).toBe(false);
      const stopped = await portal.stop();
      expect(stopped.code === 0 || stopped.signal === "SIGTERM", `${what}\n${portal.stderr()}`).toBe(true);
      const check = await runCli(["check"], root);
      expect(check.code, `${what}\n${check.stderr}`).toBe(0);
      expect(existsSync(join(root, RECORD)), what).toBe(true);
      rmSync(root, { recursive: true, force: true });
    });
  }, 300_000);
});
