import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogProject, modRelease } from "../support/catalog-project.ts";
import {
  copyTree,
  type Fault,
  phasePoints,
  pool,
  publishedFolders,
  readOperations,
  readRecords,
  startServe,
  contentHashes,
  treeProblems,
} from "../support/crash.ts";
import { type Call, client, type SignedIn, signUpAndSignIn } from "../support/http-harness.ts";
import { differences } from "../support/crash-fixtures.ts";
import { runCli } from "../support/run-cli.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";

/**
 * Hide and unhide through the moderation route of a real, signed `svc serve` (SVC_TUF_ONLINE_KEYS),
 * SIGKILLed at the file operations of the decision (counted from the request on: the preload is
 * armed once the portal serves), and once more after its last file operation, where only the
 * database row is left to write. After a restart (start-up recovery) the tree is the complete old
 * or new one, a manager verifies it, every submission's row says what the catalog says (nothing
 * left approved), and the next decision is answered.
 */
const MOD = "crash-mod";
type Decision = "hide" | "unhide";

let work: string;
let NOW: string;
let published: string;
let hidden: string;
let env: Record<string, string>;
let moderator: SignedIn;
let modder: SignedIn;
const submissions: Record<string, string> = {};

async function waitForState(call: Call, who: SignedIn, id: string, state: string): Promise<void> {
  for (let i = 0; i < 600; i++) {
    const status = await call("GET", `/api/v1/uploads/${id}`, { cookie: who.cookie });
    if (status.json?.state === state) return;
    if (status.json?.state === "validation_failed") throw new Error(JSON.stringify(status.json));
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${id} never reached ${state}`);
}

async function uploadAndPublish(origin: string, version: string, admin: SignedIn): Promise<string> {
  const call = client(origin);
  const { packageBytes, sidecar } = modRelease({ modId: MOD, version });
  const body = new FormData();
  body.append("metadata", new Blob([JSON.stringify(sidecar)], { type: "application/json" }), "release.json");
  body.append("package", new Blob([new Uint8Array(packageBytes)], { type: "application/zip" }), "upload.zip");
  const created = await fetch(`${origin}/api/v1/uploads`, {
    method: "POST",
    body,
    headers: { cookie: modder.cookie, "x-svc-csrf": modder.csrf },
  });
  expect(created.status).toBe(201);
  const id = ((await created.json()) as { submissionId: string }).submissionId;
  await waitForState(call, modder, id, "pending_review");
  const approved = await call("POST", `/api/v1/moderation/releases/${id}/decision`, {
    body: { decision: "approve", notes: "Fine." },
    cookie: moderator.cookie,
    csrf: moderator.csrf,
  });
  expect(approved.json.state).toBe("approved");
  const publication = await call("POST", "/api/v1/catalog/publish", {
    cookie: admin.cookie,
    csrf: admin.csrf,
  });
  expect(publication.json).toMatchObject({ published: 1, failed: 0 });
  return id;
}

const decide = (origin: string, decision: Decision) =>
  client(origin)("POST", `/api/v1/moderation/releases/${submissions["1.1.0"]}/decision`, {
    body: { decision, notes: `${decision} it` },
    cookie: moderator.cookie,
    csrf: moderator.csrf,
  });

/**
 * A portal copied from `from`, a serve whose preload counts from the decision on (its clock fixed,
 * so every run writes the same bytes), and the decision sent.
 */
async function killDecision(
  from: string,
  decision: Decision,
  fault: Omit<Fault, "scope" | "armFile" | "now">,
) {
  const root = mkdtempSync(join(work, `${decision}-`));
  copyTree(from, root);
  const armFile = `${root}.armed`;
  const portal = await startServe(root, {
    env,
    fault: { scope: publishedFolders(root), armFile, now: NOW, ...fault },
  });
  writeFileSync(armFile, "");
  const answer = await decide(portal.origin, decision).catch((error: unknown) => error);
  return { root, portal, answer };
}

/**
 * After a restart: the tree against the old or new one and the independent checks, each row
 * against the record of its release, and that the decision the row now allows is answered (and
 * its reverse). Returns the problems.
 */
async function restartAndCheck(root: string, expected: Record<string, string>): Promise<string[]> {
  const problems: string[] = [];
  const portal = await startServe(root, { env });
  try {
    const differ = differences(contentHashes(root), expected);
    if (differ.length > 0) problems.push(`tree differs from the expected state at ${differ.join(", ")}`);
    problems.push(...(await treeProblems(root)));
    const call = client(portal.origin);
    const records = new Map(readRecords(root).map((r) => [r.version, r]));
    for (const [version, id] of Object.entries(submissions)) {
      const row = await call("GET", `/api/v1/uploads/${id}`, { cookie: modder.cookie });
      const status = records.get(version)?.status;
      if (row.json.state !== status)
        problems.push(`${version}: the row says ${row.json.state}, the catalog ${status}`);
    }
    const allowed: Decision = records.get("1.1.0")?.status === "hidden" ? "unhide" : "hide";
    for (const decision of [allowed, allowed === "hide" ? "unhide" : "hide"] as const) {
      const answer = await decide(portal.origin, decision);
      if (answer.status !== 200)
        problems.push(`${decision} after the restart: ${answer.status} ${answer.text}`);
    }
  } finally {
    const stopped = await portal.stop();
    if (stopped.code !== 0 && stopped.signal !== "SIGTERM") problems.push(`svc serve: ${portal.stderr()}`);
  }
  const check = await runCli(["check"], root, env);
  if (check.code !== 0) problems.push(`svc check: ${check.stderr}`);
  problems.push(...(await treeProblems(root)).map((p) => `after two more decisions: ${p}`));
  return problems;
}

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))("hide and unhide killed mid-decision", () => {
  const trees: Record<string, Record<string, string>> = {};
  const operations: Record<string, string[]> = {};

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "svc-crash-visibility-"));
    const project = catalogProject((config) => {
      for (const bucket of Object.keys(config.limits.rateLimits) as Array<
        keyof typeof config.limits.rateLimits
      >) {
        config.limits.rateLimits[bucket] = { limit: 10_000, windowSeconds: 60 };
      }
    });
    const keys = join(work, "keys");
    expect((await runCli(["keys", "init", "--keys", keys], project.root)).code).toBe(0);
    env = {
      SVC_DEV_EMAIL: "return-token",
      SVC_LIVE_UPLOADS: "1",
      SVC_BOOTSTRAP_ADMIN_EMAILS: "admin@example.com",
      SVC_CLAMSCAN: clamscanPath!,
      SVC_CLAMAV_DATABASE: makeSignatureDatabase(join(work, "clamav")),
      SVC_TUF_ONLINE_KEYS: join(keys, "online.keys.json"),
    };
    published = join(work, "published");
    copyTree(project.root, published);
    project.cleanup();
    // Two published versions of one mod (1.0.0 superseded by 1.1.0), on a portal stopped cleanly.
    const portal = await startServe(published, { env });
    const call = client(portal.origin);
    const admin = await signUpAndSignIn(call, "admin@example.com", "Admin");
    modder = await signUpAndSignIn(call, "modder@example.com", "Modder", "modder");
    moderator = await signUpAndSignIn(call, "moderator@example.com", "Mo");
    const granted = await call("PUT", `/api/v1/accounts/${moderator.accountId}/roles`, {
      body: { roles: ["player", "moderator"] },
      cookie: admin.cookie,
      csrf: admin.csrf,
    });
    expect(granted.status).toBe(200);
    submissions["1.0.0"] = await uploadAndPublish(portal.origin, "1.0.0", admin);
    submissions["1.1.0"] = await uploadAndPublish(portal.origin, "1.1.0", admin);
    await portal.stop();
    NOW = new Date().toISOString();
    trees.published = contentHashes(published);
    expect(await treeProblems(published)).toEqual([]);
    // The decisions run to completion, logging their operations: the new trees and the kill points.
    // The hidden tree is where unhide starts.
    for (const [decision, from] of [
      ["hide", published],
      ["unhide", join(work, "hide-reference")],
    ] as const) {
      const log = join(work, `${decision}.log`);
      const done = await killDecision(from, decision, { log });
      expect((done.answer as { status: number }).status).toBe(200);
      await done.portal.stop();
      expect(await treeProblems(done.root)).toEqual([]);
      copyTree(done.root, join(work, `${decision}-reference`));
      rmSync(done.root, { recursive: true, force: true });
      operations[decision] = readOperations(log);
    }
    hidden = join(work, "hide-reference");
    trees.hidden = contentHashes(hidden);
    trees.unhidden = contentHashes(join(work, "unhide-reference"));
    expect(readRecords(hidden).find((r) => r.version === "1.1.0")?.status).toBe("hidden");
  }, 300_000);

  afterAll(() => {
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it("a kill between the catalog and the row: after a restart the row follows the catalog, and hide and unhide are answered", async () => {
    const { root, portal, answer } = await killDecision(published, "hide", {
      killAfter: "unlink:/.svc-tmp/publish.lock",
    });
    expect(answer).toBeInstanceOf(Error);
    expect((await portal.exitedWithin()).signal, portal.stderr()).toBe("SIGKILL");
    expect(readRecords(root).find((r) => r.version === "1.1.0")?.status).toBe("hidden");
    expect(await restartAndCheck(root, trees.hidden!)).toEqual([]);
    rmSync(root, { recursive: true, force: true });
  }, 180_000);

  for (const [decision, from, to] of [
    ["hide", "published", "hidden"],
    ["unhide", "hidden", "unhidden"],
  ] as const) {
    it(`${decision}: killed at its file operations, the restart ends in the old or new tree with the rows following it`, async () => {
      const start = decision === "hide" ? published : hidden;
      const ops = operations[decision]!;
      const commitPoint = ops.findIndex((op) => / rename .*\/txn-\S+ -> .*\/commit-/.test(op)) + 1;
      expect(commitPoint).toBeGreaterThan(3);
      // Before its commit point a decision's transaction rolls back like an import's, which
      // crash-import.test.ts kills at every operation: the sample starts just before it. Hide: the
      // first and last operation of each phase from there (phasePoints). Unhide, the same code: the
      // commit point, the operation after it, the first and last of its signing. Both: 0, the kill
      // after the last operation. SVC_CRASH_POINTS=all: every operation; 12,13: those.
      const signing = ops.flatMap((op, i) => (op.includes("/site/tuf/") ? [i + 1] : []));
      const sampled =
        decision === "hide"
          ? phasePoints(ops, commitPoint - 1)
          : [commitPoint, commitPoint + 1, signing[0]!, signing.at(-1)!];
      const only = process.env.SVC_CRASH_POINTS?.split(",").map(Number);
      const points =
        process.env.SVC_CRASH_POINTS === "all"
          ? [...ops.map((_, i) => i + 1), 0]
          : only?.every(Number.isInteger)
            ? only
            : [...sampled, 0];
      const failed: string[] = [];
      await pool(points, 2, async (killAt) => {
        const op = killAt === 0 ? "after the last file operation" : `before ${ops[killAt - 1]}`;
        const what = `${decision} killed ${op} (operation ${killAt}/${ops.length}, commit point ${commitPoint})`;
        const problems: string[] = [];
        let root = "";
        try {
          const killed = await killDecision(
            start,
            decision,
            killAt === 0 ? { killAfter: "unlink:/.svc-tmp/publish.lock" } : { killAt },
          );
          root = killed.root;
          const exit = await killed.portal.exitedWithin();
          if (exit.signal !== "SIGKILL") problems.push(`not killed: ${JSON.stringify(exit)}`);
          const committed = killAt === 0 || killAt > commitPoint;
          problems.push(...(await restartAndCheck(root, committed ? trees[to]! : trees[from]!)));
        } catch (error) {
          problems.push((error as Error).message);
        }
        if (problems.length > 0) failed.push(`${what.replaceAll(root, ".")}:\n  ${problems.join("\n  ")}`);
        if (root && existsSync(root)) rmSync(root, { recursive: true, force: true });
      });
      console.log(
        `${decision}: ${points.length} kill points (${points.join(",")} of ${ops.length} operations; 0: after the last), ${failed.length} failing trees`,
      );
      expect(failed).toEqual([]);
    }, 1_200_000);
  }
});
