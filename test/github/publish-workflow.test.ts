/**
 * What publish.yml and sync.yml really do, read with GitHub's own workflow parser: the commit path
 * is the actions' (TypeScript, tested in publish-reconcile.test.ts), never a shell step; the
 * workflow token only reads; the app's key comes from the `publish` environment; publication runs on
 * push, on a schedule and on a plain dispatch, in one never-cancelled concurrency group.
 */
import { describe, expect, it } from "vitest";
import { type Plain, readWorkflow } from "../support/workflow-file.ts";

function workflow(name: string): Plain {
  const { doc, errors } = readWorkflow(name);
  expect(errors).toEqual([]);
  return doc;
}

/** An expression as the parser renders it: `${{ expr }}` (built, so no string looks like a template). */
const expression = (expr: string) => ["$", "{{ ", expr, " }}"].join("");

const steps = (job: Plain): Plain[] => job.steps ?? [];
const shell = (job: Plain) =>
  steps(job)
    .map((s) => String(s.run ?? ""))
    .join("\n");

describe("publish.yml", () => {
  const doc = workflow("publish.yml");
  const publish = doc.jobs.publish;

  it("reconciles on every merge, on a schedule and on a plain dispatch whose hide/unhide inputs are optional", () => {
    expect(doc.on.push).toMatchObject({ branches: ["main"], paths: ["submissions/**"] });
    expect(doc.on.schedule).toEqual([{ cron: "*/30 * * * *" }, { cron: "41 */6 * * *" }]);
    const inputs = doc.on.workflow_dispatch.inputs;
    for (const name of ["visibility", "modId", "version", "pullRequest"])
      expect(inputs[name].required).toBe(false);
    expect(doc.concurrency).toEqual({ group: "publish", "cancel-in-progress": false });
  });

  it("commits nowhere but in actions/publish: no git add/commit/push in a shell step of any job", () => {
    for (const [name, job] of Object.entries(doc.jobs))
      expect(shell(job), name).not.toMatch(/\bgit\s+(add|commit|push)\b/);
    const step = steps(publish).find((s) => s.id === "publish");
    expect(step.uses).toBe("./actions/publish");
    expect(step.with).toMatchObject({
      "github-token": expression("github.token"),
      "app-id": expression("vars.SVC_APP_ID"),
      "app-private-key": expression("secrets.SVC_APP_PRIVATE_KEY"),
    });
  });

  it("the workflow token only reads; the app key lives in the publish environment; checkout keeps no credentials", () => {
    expect(doc.permissions).toEqual({});
    expect(publish.permissions).toEqual({ contents: "read", "pull-requests": "read", deployments: "read" });
    expect(publish.environment).toBe("publish");
    const checkout = steps(publish).find((s) => String(s.uses).startsWith("actions/checkout@"));
    expect(String(checkout.with["persist-credentials"])).toBe("false");
    expect(doc.jobs.deploy.permissions).toEqual({ pages: "write", "id-token": "write" });
    expect(doc.jobs.deploy.if).toBe("needs.publish.outputs.deploy == 'true'");
    // The receipts are written as the app (its token and seal, from the publish environment).
    expect(doc.jobs.receipts.permissions).toEqual({ contents: "read" });
    expect(doc.jobs.receipts.environment).toBe("publish");
  });

  it("installs the scanner only when a sidecar is pending, and never downloads signatures there", () => {
    const pending = steps(publish).find((s) => s.id === "pending");
    expect(pending).toMatchObject({ uses: "./actions/publish", with: { mode: "pending" } });
    const clamav = steps(publish).find((s) => String(s.run ?? "").includes("apt-get install -y -q clamav"));
    expect(clamav.if).toBe("steps.pending.outputs.pending == 'true'");
    expect(shell(publish)).not.toMatch(/freshclam(?!\.service)/);
    expect(steps(publish).find((s) => s.id === "publish").with).toMatchObject({
      "clamscan-db": expression("format('{0}/clamav-db', runner.temp)"),
      "signatures-max-age-hours": "48",
    });
  });

  it("refreshes the signature cache in one job of its own schedule, with no write permission", () => {
    const signatures = doc.jobs.signatures;
    expect(signatures.if).toBe("github.event.schedule == '41 */6 * * *'");
    expect(signatures.permissions).toEqual({ contents: "read" });
    expect(signatures.environment).toBeUndefined();
    expect(publish.needs).toBe("signatures");
    expect(publish.if).toBe(
      expression(
        "!cancelled() && !(github.event_name == 'push' && vars.SVC_BOT_LOGINS != '' && contains(vars.SVC_BOT_LOGINS, github.actor))",
      ),
    );
  });

  it("never commits site/: restores the previous deployment before publishing, saves it after signing, uploads it", () => {
    const all = steps(publish);
    const index = (predicate: (s: Plain) => boolean) => all.findIndex(predicate);
    const restore = index(
      (s) => String(s.uses).startsWith("actions/cache/restore@") && s.with.path === "site",
    );
    const save = index((s) => String(s.uses).startsWith("actions/cache/save@") && s.with.path === "site");
    const upload = index((s) => String(s.uses).startsWith("actions/upload-pages-artifact@"));
    expect(all[restore].with).toMatchObject({
      key: expression("format('site-{0}', github.sha)"),
      "restore-keys": "site-",
    });
    expect(restore).toBeLessThan(index((s) => s.id === "publish"));
    expect(save).toBeGreaterThan(index((s) => s.id === "sign"));
    expect(save).toBeLessThan(upload);
    // A key is written once: the records commit, then the run, so every save is a new entry.
    expect(String(all[save].with.key)).toContain("steps.publish.outputs.commit || github.sha");
    expect(String(all[save].with.key)).toContain("github.run_id");
    expect(all[save].if).toBe(all[upload].if);
    expect(all[upload].with.path).toBe("site");
  });
});

describe("sync.yml", () => {
  const doc = workflow("sync.yml");
  const sync = doc.jobs.sync;

  it("pushes through actions/sync with the app token (the same commit path), never from a shell step", () => {
    for (const [name, job] of Object.entries(doc.jobs))
      expect(shell(job), name).not.toMatch(/\bgit\s+(add|commit|push)\b/);
    expect(sync.permissions).toEqual({ contents: "read" });
    expect(sync.environment).toBe("publish");
    const step = steps(sync).find((s) => s.id === "sync");
    expect(step.with).toMatchObject({
      push: "true",
      "app-id": expression("vars.SVC_APP_ID"),
      "app-private-key": expression("secrets.SVC_APP_PRIVATE_KEY"),
    });
    expect(doc.concurrency).toEqual({ group: "publish", "cancel-in-progress": false });
  });

  it("restores the previous site before the sync and saves what it deploys", () => {
    const all = steps(sync);
    const restore = all.findIndex(
      (s) => String(s.uses).startsWith("actions/cache/restore@") && s.with.path === "site",
    );
    const save = all.findIndex(
      (s) => String(s.uses).startsWith("actions/cache/save@") && s.with.path === "site",
    );
    expect(restore).toBeGreaterThan(-1);
    expect(restore).toBeLessThan(all.findIndex((s) => s.id === "sync"));
    expect(save).toBeGreaterThan(all.findIndex((s) => s.id === "sync"));
    expect(String(all[save].with.key)).toContain("steps.sync.outputs.commit || github.sha");
  });
});
