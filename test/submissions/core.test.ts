import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { loadSiteInputs, renderSite, writeSite } from "../../src/catalog/site.ts";
import { schemaRegistry } from "../../src/contracts/schemas.ts";
import { createPgliteStore, MIGRATIONS, migrate, type Store } from "../../src/store/index.ts";
import {
  applySubmissionAction,
  createSubmission,
  loadSubmission,
  newSubmissionId,
  type SubmissionDeps,
  submissionView,
} from "../../src/submissions/service.ts";
import { listSubmissions } from "../../src/submissions/submission-lists.ts";
import { removeStaged, stagePackage } from "../../src/submissions/staging.ts";
import { runNextValidationJob, type WorkerDeps } from "../../src/submissions/worker.ts";
import { createClamdScanner } from "../../src/validation/antivirus/clamd.ts";
import { createClamscanScanner } from "../../src/validation/antivirus/clamscan.ts";
import type { Sidecar } from "../../src/validation/types.ts";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { recoverSubmissionsAtStart } from "../../src/submissions/recovery.ts";
import { catalogProject, modRelease, publisherOptions } from "../support/catalog-project.ts";
import { writeZip } from "../support/zip.ts";
import { clamscanPath, eicar, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";
import { tempProject } from "../support/temp-project.ts";

const skip = shouldSkip(clamscanPath, "clamscan");
let project: ReturnType<typeof tempProject>;
let store: Store;
let storageRoot: string;
let database: string;
let clock = new Date("2026-11-21T10:00:00.000Z");
let counter = 0;
const random = (size: number) => createHash("sha256").update(`seed-${counter++}`).digest().subarray(0, size);

beforeAll(() => {
  project = tempProject();
  writeSite(
    project.site(""),
    renderSite(loadSiteInputs(project.config, `${project.root}/records`), project.site("")),
  );
  storageRoot = mkdtempSync(join(tmpdir(), "svc-storage-"));
  database = makeSignatureDatabase(mkdtempSync(join(tmpdir(), "svc-clamdb-")));
});
afterAll(() => {
  project.cleanup();
  rmSync(storageRoot, { recursive: true, force: true });
});

beforeEach(async () => {
  store = await createPgliteStore(null);
  await migrate(store, MIGRATIONS);
  for (const [id, roles] of [
    ["acct_modder", ["player", "modder"]],
    ["acct_mod", ["player", "moderator"]],
    ["acct_other", ["player", "modder"]],
  ] as const) {
    await store.query(
      `INSERT INTO accounts (id, email, email_normalized, display_name, roles, created_at, verified_at, updated_at)
       VALUES ($1, $2, $2, $1, $3, $4, $4, $4)`,
      [id, `${id}@example.test`, roles, clock.toISOString()],
    );
  }
});

const deps = (): SubmissionDeps => ({ store, config: project.config, now: () => clock, random });
const workerDeps = (scanner: WorkerDeps["scanner"]): WorkerDeps => ({
  ...deps(),
  siteDir: project.site(""),
  storageRoot,
  scanner,
  backoffMs: () => 60_000,
  maxAttempts: 3,
});
const clamscan = () => createClamscanScanner(clamscanPath!, { database });

async function submit(bytes: Buffer, sidecar: Sidecar, owner = "acct_modder") {
  const id = newSubmissionId(random);
  const staged = await stagePackage(Readable.from([bytes]), {
    root: storageRoot,
    submissionId: id,
    fileName: sidecar.package.fileName,
    maxBytes: project.config.limits.maxPackageBytes,
  });
  staged.commit();
  return createSubmission(deps(), {
    id,
    ownerAccountId: owner,
    sidecar,
    metadataSha256: createHash("sha256").update(JSON.stringify(sidecar)).digest("hex"),
    contentType: "application/zip",
    staged,
  });
}

async function audit(): Promise<string[]> {
  const rows = await store.query<{ action: string }>(
    "SELECT action FROM audit_events ORDER BY created_at, id",
  );
  return rows.rows.map((r) => r.action);
}

describe.skipIf(skip)("submissions core", () => {
  it("stages, validates with the real runner and ClamAV, queues for review, and the view matches its schema", async () => {
    const { packageBytes, sidecar } = modRelease();
    const row = await submit(packageBytes, sidecar as Sidecar);
    expect(row.state).toBe("uploaded");
    expect(existsSync(join(storageRoot, `uploads/staging/${row.id}/better-hud-1.0.0.zip`))).toBe(true);
    const outcome = await runNextValidationJob(workerDeps(clamscan));
    expect(outcome).toMatchObject({ submissionId: row.id, outcome: "pending_review" });
    const view = await submissionView(store, (await loadSubmission(store, row.id))!, project.config, clock);
    expect(view.state).toBe("pending_review");
    expect(view.validationChecks.map((c) => c.status)).toEqual(Array(15).fill("passed"));
    expect(view.review).toMatchObject({ state: "pending", queuePosition: 1, medianWaitSeconds: null });
    expect(view.detailPage.satisfied).toBe(true);
    const valid = schemaRegistry(project.config.baseUrl).validate("upload-submission", view);
    expect(valid.ok ? [] : valid.issues).toEqual([]);
    expect((await audit()).sort()).toEqual(["upload.created", "validation.completed", "validation.started"]);
    expect(await runNextValidationJob(workerDeps(clamscan))).toBeNull();
  });

  it("fails validation with logs that say what to fix when the package carries EICAR", async () => {
    const { sidecar } = modRelease();
    const bytes = writeZip([
      {
        name: "svc-mod.json",
        data: JSON.stringify({
          schema: "svc.mod-manifest.v1",
          id: "better-hud",
          name: "Better HUD",
          version: "1.0.0",
          targetGameBuild: "17000000",
          dependencies: [],
          entrypoints: [{ path: "Content/Paks/BetterHud.pak", kind: "pak" }],
        }),
      },
      { name: "Content/Paks/BetterHud.pak", data: eicar().toString("latin1") },
    ]);
    const infected = {
      ...sidecar,
      package: {
        ...sidecar.package,
        sha256: createHash("sha256").update(bytes).digest("hex"),
        sizeBytes: bytes.length,
      },
    };
    const row = await submit(bytes, infected as Sidecar);
    const outcome = await runNextValidationJob(workerDeps(clamscan));
    expect(outcome).toMatchObject({ outcome: "validation_failed" });
    const view = await submissionView(store, (await loadSubmission(store, row.id))!, project.config, clock);
    const antivirus = view.validationChecks.find((c) => c.id === "antivirus_scan")!;
    expect(antivirus).toMatchObject({ status: "failed", reasonCode: "malware_detected" });
    expect(antivirus.log.join("\n")).toMatch(/Svc-Test-Eicar/);
    // The modder may cancel a failed submission; a second cancel is an illegal move that changes nothing.
    await applySubmissionAction(deps(), row.id, "cancel", { accountId: "acct_modder", kind: "modder" });
    await expect(
      applySubmissionAction(deps(), row.id, "cancel", { accountId: "acct_modder", kind: "modder" }),
    ).rejects.toMatchObject({ code: "illegal_transition" });
    expect((await loadSubmission(store, row.id))!.state).toBe("cancelled");
  });

  it("retries with backoff while the scanner is unreachable and never passes without it", async () => {
    const { packageBytes, sidecar } = modRelease();
    const row = await submit(packageBytes, sidecar as Sidecar);
    const down = () =>
      createClamdScanner({ kind: "unix", path: join(storageRoot, "no-such.sock") }, { timeoutMs: 2000 });
    expect(await runNextValidationJob(workerDeps(down))).toMatchObject({
      outcome: "retry",
      reasonCode: "scanner_unavailable",
    });
    expect((await loadSubmission(store, row.id))!.state).toBe("validating");
    expect(await runNextValidationJob(workerDeps(down))).toBeNull(); // not due yet
    clock = new Date(clock.getTime() + 61_000);
    expect(await runNextValidationJob(workerDeps(down))).toMatchObject({ outcome: "retry" });
    clock = new Date(clock.getTime() + 61_000);
    expect(await runNextValidationJob(workerDeps(down))).toMatchObject({ outcome: "validation_failed" });
    const view = await submissionView(store, (await loadSubmission(store, row.id))!, project.config, clock);
    expect(view.validationChecks.find((c) => c.id === "antivirus_scan")).toMatchObject({
      status: "failed",
      reasonCode: "scanner_unavailable",
    });
  });

  it("picks a job up again after a worker died holding its lease", async () => {
    const { packageBytes, sidecar } = modRelease();
    const row = await submit(packageBytes, sidecar as Sidecar);
    // A worker claimed the job and died: the submission is validating with a lease that runs out.
    await store.query(
      "UPDATE validation_jobs SET locked_until = $2::timestamptz, attempts = 1 WHERE submission_id = $1",
      [row.id, new Date(clock.getTime() + 300_000).toISOString()],
    );
    await store.query("UPDATE submissions SET state = 'validating' WHERE id = $1", [row.id]);
    expect(await runNextValidationJob(workerDeps(clamscan))).toBeNull();
    clock = new Date(clock.getTime() + 301_000);
    expect(await runNextValidationJob(workerDeps(clamscan))).toMatchObject({
      submissionId: row.id,
      outcome: "pending_review",
    });
  });

  it("records moderation decisions with notes, refuses self-review, and computes queue position and median wait", async () => {
    const a = await submit(
      modRelease({ modId: "mod-a" }).packageBytes,
      modRelease({ modId: "mod-a" }).sidecar as Sidecar,
    );
    const b = await submit(
      modRelease({ modId: "mod-b" }).packageBytes,
      modRelease({ modId: "mod-b" }).sidecar as Sidecar,
    );
    await runNextValidationJob(workerDeps(clamscan));
    clock = new Date(clock.getTime() + 1000);
    await runNextValidationJob(workerDeps(clamscan));
    const viewB = await submissionView(store, (await loadSubmission(store, b.id))!, project.config, clock);
    expect(viewB.review.queuePosition).toBe(2);
    await expect(
      applySubmissionAction(deps(), a.id, "approve", { accountId: "acct_modder", kind: "moderator" }),
    ).rejects.toMatchObject({ code: "forbidden" });
    clock = new Date(clock.getTime() + 3600_000);
    await applySubmissionAction(
      deps(),
      a.id,
      "request_changes",
      { accountId: "acct_mod", kind: "moderator" },
      { notes: "Add a description." },
    );
    const after = await submissionView(store, (await loadSubmission(store, b.id))!, project.config, clock);
    expect(after.review.queuePosition).toBe(1);
    expect(after.review.medianWaitSeconds).toBe(3601);
    const viewA = await submissionView(store, (await loadSubmission(store, a.id))!, project.config, clock);
    expect(viewA.review.decisions).toEqual([
      expect.objectContaining({
        decision: "request_changes",
        reviewerAccountId: "acct_mod",
        notes: "Add a description.",
        fromState: "pending_review",
        toState: "changes_requested",
      }),
    ]);
    await expect(
      applySubmissionAction(deps(), a.id, "approve", { accountId: "acct_mod", kind: "moderator" }),
    ).rejects.toMatchObject({ code: "illegal_transition" });
    const queue = await listSubmissions(store, { states: ["pending_review"], limit: 10 });
    expect(queue.map((r) => r.id)).toEqual([b.id]);
  });

  it("refuses a second open submission of the same version and another account's mod", async () => {
    const { packageBytes, sidecar } = modRelease();
    await submit(packageBytes, sidecar as Sidecar);
    await expect(submit(packageBytes, sidecar as Sidecar)).rejects.toMatchObject({ code: "conflict" });
    const before = readdirSync(join(storageRoot, "uploads/staging")).length;
    removeStaged(storageRoot, "sub_nothing");
    expect(readdirSync(join(storageRoot, "uploads/staging")).length).toBe(before);
  });

  it("refuses an oversized package while streaming and leaves nothing staged", async () => {
    const id = newSubmissionId(random);
    const chunks = (function* () {
      for (let i = 0; i < 20; i++) yield Buffer.alloc(1024, i);
    })();
    await expect(
      stagePackage(Readable.from(chunks), {
        root: storageRoot,
        submissionId: id,
        fileName: "x.zip",
        maxBytes: 10 * 1024,
      }),
    ).rejects.toMatchObject({ code: "payload_too_large" });
    expect(existsSync(join(storageRoot, `uploads/staging/${id}`))).toBe(false);
  });
});

describe.skipIf(skip)("a restart after a crash", () => {
  it("resumes a validation the dead process held at once (no lease wait), and refuses a second process on the folder", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-restart-"));
    const first = await createPgliteStore(join(dataDir, "db"));
    await migrate(first, MIGRATIONS);
    // One process per data folder: a second store on it is refused, naming the holder.
    await expect(createPgliteStore(join(dataDir, "db"))).rejects.toMatchObject({
      code: "data_dir_locked",
      message: expect.stringMatching(new RegExp(`pid ${process.pid} on .* \\(PGlite data folder\\)`)),
    });
    await first.query(
      `INSERT INTO accounts (id, email, email_normalized, display_name, roles, created_at, verified_at, updated_at)
       VALUES ('acct_modder', 'm@example.test', 'm@example.test', 'M', ARRAY['modder'], $1, $1, $1)`,
      [clock.toISOString()],
    );
    store = first;
    const { packageBytes, sidecar } = modRelease({ modId: "restart-mod" });
    const row = await submit(packageBytes, sidecar as Sidecar);
    // The first process claims the job (uploaded -> validating) and dies before it reports.
    const slow = {
      ...workerDeps(clamscan),
      leaseMs: 300_000,
      scanner: () => {
        throw new Error("process killed");
      },
    };
    await expect(runNextValidationJob(slow)).rejects.toThrow("process killed");
    expect((await loadSubmission(first, row.id))!.state).toBe("validating");
    await first.close();

    const second = await createPgliteStore(join(dataDir, "db"));
    await migrate(second, MIGRATIONS);
    store = second;
    expect(await runNextValidationJob(workerDeps(clamscan))).toBeNull(); // the dead worker's lease holds
    const recovered = await recoverSubmissionsAtStart({
      ...deps(),
      storageRoot,
      exclusive: true,
      publisher: null,
    });
    expect(recovered.resumedValidations).toBe(1);
    // No clock advance: the job runs now, not when the five-minute lease would have run out.
    expect(await runNextValidationJob(workerDeps(clamscan))).toMatchObject({
      submissionId: row.id,
      outcome: "pending_review",
    });
    expect((await loadSubmission(second, row.id))!.state).toBe("pending_review");
    await second.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("removes partial uploads and staged packages no submission names; keeps the ones it names", async () => {
    // Its own storage root: the other tests' staging belongs to rows of their own (fresh) stores.
    const shared = storageRoot;
    storageRoot = mkdtempSync(join(tmpdir(), "svc-orphans-"));
    onTestFinished(() => {
      rmSync(storageRoot, { recursive: true, force: true });
      storageRoot = shared;
    });
    const { packageBytes, sidecar } = modRelease({ modId: "orphan-mod" });
    const row = await submit(packageBytes, sidecar as Sidecar);
    const staging = join(storageRoot, "uploads/staging");
    const { writeFileSync, mkdirSync } = await import("node:fs");
    // A crash mid-stream (a partial file), between staging and the row (a complete package with no
    // row), and an old revision the row no longer names.
    writeFileSync(join(staging, row.id, ".partial-0123456789ab"), "cut off");
    writeFileSync(join(staging, row.id, "orphan-mod-0.9.0.zip"), "old revision");
    mkdirSync(join(staging, "sub_0000000000000000000000000"), { recursive: true });
    writeFileSync(join(staging, "sub_0000000000000000000000000", "x.zip"), "no row");
    mkdirSync(join(staging, "sub_1111111111111111111111111"), { recursive: true });
    writeFileSync(join(staging, "sub_1111111111111111111111111", ".partial-ffffffffffff"), "cut off");
    const recovered = await recoverSubmissionsAtStart({
      ...deps(),
      storageRoot,
      exclusive: true,
      publisher: null,
    });
    expect(recovered).toMatchObject({ partialFiles: 2, orphanedPackages: 2 });
    expect(readdirSync(staging).sort()).toContain(row.id);
    expect(readdirSync(staging)).not.toContain("sub_0000000000000000000000000");
    expect(readdirSync(staging)).not.toContain("sub_1111111111111111111111111");
    expect(readdirSync(join(staging, row.id))).toEqual(["orphan-mod-1.0.0.zip"]);
    // Without the exclusive lock (PostgreSQL, another process may be mid-upload), fresh files stay.
    writeFileSync(join(staging, row.id, ".partial-000000000000"), "being written");
    const foreign = await recoverSubmissionsAtStart({
      ...deps(),
      storageRoot,
      exclusive: false,
      publisher: null,
    });
    expect(foreign).toMatchObject({ partialFiles: 0, orphanedPackages: 0, resumedValidations: 0 });
    expect(readdirSync(join(staging, row.id)).sort()).toEqual([
      ".partial-000000000000",
      "orphan-mod-1.0.0.zip",
    ]);
    removeStaged(storageRoot, row.id);
  });

  it("completes an approved submission whose exact release a crash left in the catalog (row, one audit event, staging)", async () => {
    const catalog = catalogProject();
    try {
      const { packageBytes, sidecar } = modRelease({ modId: "stranded-mod" });
      const row = await submit(packageBytes, sidecar as Sidecar);
      await runNextValidationJob(workerDeps(clamscan));
      await applySubmissionAction(deps(), row.id, "approve", { accountId: "acct_mod", kind: "moderator" });
      // The publisher committed the files, then the process died before the row moved.
      await publishRelease(publisherOptions(catalog), {
        packageBytes,
        sidecar,
        source: { kind: "upload", submissionId: row.id },
      });
      const other = modRelease({ modId: "stranded-mod", version: "2.0.0" });
      const notPublished = await submit(other.packageBytes, other.sidecar as Sidecar);
      await runNextValidationJob(workerDeps(clamscan));
      await applySubmissionAction(deps(), notPublished.id, "approve", {
        accountId: "acct_mod",
        kind: "moderator",
      });
      const recovered = await recoverSubmissionsAtStart({
        ...deps(),
        storageRoot,
        exclusive: true,
        publisher: { recordsDir: catalog.recordsDir },
      });
      expect(recovered.completedPublications).toEqual([row.id]);
      const done = (await loadSubmission(store, row.id))!;
      expect(done.state).toBe("published");
      expect(done.publication).toMatchObject({
        packageUrl: expect.stringMatching(/stranded-mod-1\.0\.0\.zip$/),
      });
      expect((await audit()).filter((a) => a === "catalog.published")).toHaveLength(1);
      expect(existsSync(join(storageRoot, "uploads/staging", row.id))).toBe(false);
      // Approved but not in the catalog: left for the admin to publish.
      expect((await loadSubmission(store, notPublished.id))!.state).toBe("approved");
      // A second start finds nothing more to do.
      const again = await recoverSubmissionsAtStart({
        ...deps(),
        storageRoot,
        exclusive: true,
        publisher: { recordsDir: catalog.recordsDir },
      });
      expect(again.completedPublications).toEqual([]);
      expect((await audit()).filter((a) => a === "catalog.published")).toHaveLength(1);
      removeStaged(storageRoot, notPublished.id);
    } finally {
      catalog.cleanup();
    }
  });
});
