import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { modRelease } from "../support/catalog-project.ts";
import { writeZip } from "../support/zip.ts";
import { signUpAndSignIn } from "../support/http-harness.ts";
import { eicar } from "../validation/clamav.ts";
import {
  form,
  type SubmissionsPortal,
  SKIP_CLAMSCAN as skip,
  startSubmissionsPortal,
  upload,
  waitForState,
} from "../support/submissions-portal.ts";

let portal: SubmissionsPortal | undefined;
afterEach(async () => {
  await portal?.stop();
  portal = undefined;
});

async function decide(p: SubmissionsPortal, id: string, decision: string, notes: string, who = p.moderator) {
  return p.call("POST", `/api/v1/moderation/releases/${id}/decision`, {
    body: { decision, notes },
    cookie: who.cookie,
    csrf: who.csrf,
  });
}

async function publish(p: SubmissionsPortal) {
  return p.call("POST", "/api/v1/catalog/publish", { cookie: p.admin.cookie, csrf: p.admin.csrf });
}

const staged = (p: SubmissionsPortal) => {
  const dir = join(p.h.root, ".data", "uploads", "staging");
  return existsSync(dir) ? readdirSync(dir) : [];
};

describe.skipIf(skip)("submissions over HTTP", () => {
  it("walks sign-up to download: upload, validate, approve, publish, fast download, every step audited", async () => {
    portal = await startSubmissionsPortal();
    const p = portal;
    const { packageBytes, sidecar } = modRelease({ modId: "quick-travel", version: "1.0.0" });
    const created = await upload(p, p.modder, form(sidecar, packageBytes));
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      state: "uploaded",
      modId: "quick-travel",
      packageSha256: sidecar.package.sha256,
    });
    const id = created.json.submissionId as string;
    const pending = await waitForState(p, p.modder, id, ["pending_review", "validation_failed"]);
    expect(pending.state).toBe("pending_review");
    expect(pending.review.queuePosition).toBe(1);
    const queue = await p.call("GET", "/api/v1/moderation/releases?state=pending_review", {
      cookie: p.moderator.cookie,
    });
    expect(queue.json.items.map((i: any) => [i.submissionId, i.queuePosition])).toEqual([[id, 1]]);
    expect((await decide(p, id, "approve", "Looks good.")).json.state).toBe("approved");
    const published = await publish(p);
    expect(published.json).toMatchObject({
      published: 1,
      failed: 0,
      results: [{ submissionId: id, outcome: "published", sha256: sidecar.package.sha256 }],
    });
    const status = await p.call("GET", `/api/v1/uploads/${id}`, { cookie: p.modder.cookie });
    expect(status.json.state).toBe("published");
    expect(status.json.publication.packageUrl).toMatch(
      /\/downloads\/mods\/quick-travel\/1\.0\.0\/quick-travel-1\.0\.0\.zip$/,
    );
    expect(staged(p)).not.toContain(id);
    const catalog = await p.call("GET", "/api/v1/catalog");
    expect(catalog.json.mods.map((m: any) => m.id)).toContain("quick-travel");
    const key = await p.call("POST", "/api/v1/auth/api-keys", {
      body: { name: "manager" },
      cookie: p.modder.cookie,
      csrf: p.modder.csrf,
    });
    const download = await fetch(
      `${p.h.origin}/api/v1/downloads/mods/quick-travel/1.0.0/quick-travel-1.0.0.zip`,
      {
        headers: { authorization: `Bearer ${key.json.secret}` },
      },
    );
    expect(download.status).toBe(200);
    const bytes = Buffer.from(await download.arrayBuffer());
    expect(createHash("sha256").update(bytes).digest("hex")).toBe(sidecar.package.sha256);
    const audit = await p.call("GET", `/api/v1/audit/events?targetId=${id}&limit=50`, {
      cookie: p.admin.cookie,
    });
    const actions = audit.json.events.map((e: any) => e.action).sort();
    expect(actions).toEqual([
      "catalog.published",
      "moderation.decided",
      "submission.publish",
      "upload.created",
      "validation.completed",
      "validation.started",
    ]);
  });

  it("completes a submission whose publication a crash cut between the files and the row when the publish is retried", async () => {
    portal = await startSubmissionsPortal();
    const p = portal;
    const { packageBytes, sidecar } = modRelease({ modId: "retried-mod", version: "1.0.0" });
    const created = await upload(p, p.modder, form(sidecar, packageBytes));
    const id = created.json.submissionId as string;
    await waitForState(p, p.modder, id, ["pending_review"]);
    expect((await decide(p, id, "approve", "Fine.")).json.state).toBe("approved");
    // What a crash leaves: the publisher committed the files (the handler's first step), the row
    // was never moved. Today's retry answered version_exists for ever.
    await publishRelease(p.publisher, {
      packageBytes,
      sidecar,
      source: { kind: "upload", submissionId: id },
    });
    expect((await p.call("GET", `/api/v1/uploads/${id}`, { cookie: p.modder.cookie })).json.state).toBe(
      "approved",
    );
    const retried = await publish(p);
    expect(retried.json).toMatchObject({
      published: 1,
      failed: 0,
      results: [
        { submissionId: id, outcome: "published", alreadyPublished: true, sha256: sidecar.package.sha256 },
      ],
    });
    const status = await p.call("GET", `/api/v1/uploads/${id}`, { cookie: p.modder.cookie });
    expect(status.json).toMatchObject({
      state: "published",
      publication: { packageUrl: expect.any(String) },
    });
    expect(staged(p)).not.toContain(id);
    const audit = await p.call("GET", `/api/v1/audit/events?targetId=${id}&limit=50`, {
      cookie: p.admin.cookie,
    });
    expect(audit.json.events.filter((e: any) => e.action === "catalog.published")).toHaveLength(1);
    // Nothing left to publish; publishing again changes nothing.
    expect((await publish(p)).json).toMatchObject({ published: 0, failed: 0, results: [] });
  });

  it("ends a bad package in validation_failed with logs that say what to fix, and lets the modder cancel", async () => {
    portal = await startSubmissionsPortal();
    const p = portal;
    const { sidecar } = modRelease({ modId: "bad-mod" });
    const bytes = writeZip([
      {
        name: "svc-mod.json",
        data: JSON.stringify({
          schema: "svc.mod-manifest.v1",
          id: "bad-mod",
          name: "Better HUD",
          version: "1.0.0",
          targetGameBuild: "17000000",
          dependencies: [],
          entrypoints: [{ path: "Content/Paks/BetterHud.pak", kind: "pak" }],
        }),
      },
      { name: "Content/Paks/BetterHud.pak", data: "pak" },
      { name: "../../evil.dll", data: eicar().toString("latin1") },
    ]);
    const bad = {
      ...sidecar,
      package: {
        ...sidecar.package,
        sha256: createHash("sha256").update(bytes).digest("hex"),
        sizeBytes: bytes.length,
      },
    };
    const created = await upload(p, p.modder, form(bad, bytes));
    expect(created.status).toBe(201);
    const failed = await waitForState(p, p.modder, created.json.submissionId, [
      "validation_failed",
      "pending_review",
    ]);
    expect(failed.state).toBe("validation_failed");
    const byId = Object.fromEntries(failed.validationChecks.map((c: any) => [c.id, c]));
    expect(byId.zip_path_safety).toMatchObject({ status: "failed" });
    expect(byId.antivirus_scan).toMatchObject({ status: "failed", reasonCode: "malware_detected" });
    expect(byId.zip_path_safety.log.join(" ")).toMatch(/\.\./);
    const cancelled = await p.call("POST", `/api/v1/uploads/${created.json.submissionId}/cancel`, {
      cookie: p.modder.cookie,
      csrf: p.modder.csrf,
    });
    expect(cancelled.json.state).toBe("cancelled");
    expect(staged(p)).toEqual([]);
  });

  it("requests changes, then takes a resubmission of the same version as a new revision", async () => {
    portal = await startSubmissionsPortal();
    const p = portal;
    const first = modRelease({ modId: "map-pins" });
    const created = await upload(p, p.modder, form(first.sidecar, first.packageBytes));
    const id = created.json.submissionId;
    await waitForState(p, p.modder, id, ["pending_review"]);
    expect((await decide(p, id, "request_changes", "Please add a description.")).json.state).toBe(
      "changes_requested",
    );
    const second = modRelease({ modId: "map-pins", extraFiles: { "README.txt": "now with docs" } });
    const again = await upload(p, p.modder, form(second.sidecar, second.packageBytes));
    expect(again.status).toBe(200);
    expect(again.json).toMatchObject({
      submissionId: id,
      state: "uploaded",
      packageSha256: second.sidecar.package.sha256,
    });
    const pending = await waitForState(p, p.modder, id, ["pending_review"]);
    expect(pending.review.decisions).toEqual([
      expect.objectContaining({ decision: "request_changes", notes: "Please add a description." }),
    ]);
  });

  it("hides and unhides a published release in the public catalog, and publishes nothing twice", async () => {
    portal = await startSubmissionsPortal();
    const p = portal;
    const { packageBytes, sidecar } = modRelease({ modId: "loot-filter" });
    const id = (await upload(p, p.modder, form(sidecar, packageBytes))).json.submissionId;
    await waitForState(p, p.modder, id, ["pending_review"]);
    await decide(p, id, "approve", "ok");
    expect((await publish(p)).json.published).toBe(1);
    expect((await publish(p)).json).toEqual({ published: 0, failed: 0, results: [] });
    const inCatalog = async () =>
      (await p.call("GET", "/api/v1/catalog")).json.mods.some((m: any) => m.id === "loot-filter");
    expect(await inCatalog()).toBe(true);
    expect((await decide(p, id, "hide", "Reported crash.")).json.state).toBe("hidden");
    expect(await inCatalog()).toBe(false);
    expect((await p.call("GET", "/api/v1/mods/loot-filter")).status).toBe(404);
    expect((await decide(p, id, "unhide", "Fixed upstream.")).json.state).toBe("published");
    expect(await inCatalog()).toBe(true);
    expect((await decide(p, id, "approve", "again")).status).toBe(409);
  });

  it("refuses uploads before reading a byte when SVC_LIVE_UPLOADS is not 1", async () => {
    portal = await startSubmissionsPortal({});
    const p = portal;
    const { packageBytes, sidecar } = modRelease();
    const refused = await upload(p, p.modder, form(sidecar, packageBytes));
    expect(refused).toMatchObject({ status: 503, json: { code: "uploads_disabled" } });
    expect(staged(p)).toEqual([]);
  });

  it("holds the upload routes against the HTTP and auth threat classes", async () => {
    portal = await startSubmissionsPortal();
    const p = portal;
    const { packageBytes, sidecar } = modRelease({ modId: "safe-mod" });
    // Role, CSRF and API keys are checked before the body.
    const player = await signUpAndSignIn(p.call, "player@example.com", "Player");
    expect((await upload(p, player, form(sidecar, packageBytes))).json.code).toBe("forbidden");
    expect((await upload(p, { ...p.modder, csrf: "forged" }, form(sidecar, packageBytes))).json.code).toBe(
      "csrf_failed",
    );
    // Parts: order, type, count, schema (mass assignment), size.
    expect((await upload(p, p.modder, form(sidecar, packageBytes, { packageFirst: true }))).json.code).toBe(
      "invalid_request",
    );
    expect(
      (await upload(p, p.modder, form(sidecar, packageBytes, { packageType: "application/x-msdownload" })))
        .status,
    ).toBe(415);
    const massAssigned = await upload(p, p.modder, form({ ...sidecar, state: "published" }, packageBytes));
    expect(massAssigned).toMatchObject({ status: 400, json: { code: "invalid_payload" } });
    const three = form(sidecar, packageBytes);
    three.append("extra", "x");
    expect((await upload(p, p.modder, three)).status).toBe(400);
    const json = await fetch(`${p.h.origin}/api/v1/uploads`, {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json", cookie: p.modder.cookie, "x-svc-csrf": p.modder.csrf },
    });
    expect(json.status).toBe(415);
    expect(staged(p)).toEqual([]);
    // Another modder's submission does not exist for them; a moderator cannot approve their own.
    const created = await upload(p, p.modder, form(sidecar, packageBytes));
    const id = created.json.submissionId;
    const stranger = await signUpAndSignIn(p.call, "stranger@example.com", "Stranger", "modder");
    expect((await p.call("GET", `/api/v1/uploads/${id}`, { cookie: stranger.cookie })).status).toBe(404);
    expect(
      (await p.call("POST", `/api/v1/uploads/${id}/cancel`, { cookie: stranger.cookie, csrf: stranger.csrf }))
        .status,
    ).toBe(404);
    await waitForState(p, p.modder, id, ["pending_review"]);
    await p.call("PUT", `/api/v1/accounts/${p.modder.accountId}/roles`, {
      body: { roles: ["modder", "moderator"] },
      cookie: p.admin.cookie,
      csrf: p.admin.csrf,
    });
    expect((await decide(p, id, "approve", "mine", p.modder)).json.code).toBe("forbidden");
    expect((await decide(p, "sub_doesnotexist0000000000", "approve", "x")).status).toBe(404);
    expect(
      (
        await p.call("POST", `/api/v1/moderation/releases/${id}/decision`, {
          body: { decision: "approve" },
          cookie: p.moderator.cookie,
          csrf: p.moderator.csrf,
        })
      ).json.code,
    ).toBe("invalid_payload");
  });

  it("refuses a package one byte over the cap while streaming and keeps nothing", async () => {
    portal = await startSubmissionsPortal();
    const p = portal;
    const { sidecar } = modRelease({ modId: "huge-mod" });
    const cap = p.h.app.config.limits.maxPackageBytes;
    const big = Buffer.alloc(cap + 1, 1);
    const response = await upload(
      p,
      p.modder,
      form({ ...sidecar, package: { ...sidecar.package, sizeBytes: 1000 } }, big),
    );
    expect(response).toMatchObject({ status: 413, json: { code: "payload_too_large" } });
    expect(staged(p)).toEqual([]);
    const rows = await p.h.store.query("SELECT id FROM submissions");
    expect(rows.rows).toEqual([]);
    expect(readFileSync(join(p.h.root, "site/api/v1/catalog.json"), "utf8")).not.toContain("huge-mod");
  });
});
