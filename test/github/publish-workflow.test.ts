/**
 * What publish.yml and sync.yml really do, read with GitHub's own workflow parser: the commit path
 * is the actions' (TypeScript, tested in publish-reconcile.test.ts), never a shell step; the
 * workflow token only reads; the app's key comes from the `publish` environment; publication runs on
 * push, on a schedule and on a plain dispatch, in one never-cancelled concurrency group.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type Plain, readWorkflow } from "../support/workflow-file.ts";
import { runJob } from "../support/workflow-job.ts";

function workflow(name: string): Plain {
  const { doc, errors } = readWorkflow(name);
  expect(errors).toEqual([]);
  return doc;
}

/** An expression as the parser renders it: `${{ expr }}` (built, so no string looks like a template). */
const expression = (expr: string) => ["$", "{{ ", expr, " }}"].join("");

const steps = (job: Plain): Plain[] => job.steps ?? [];

/**
 * Everything `svc build` reads: the records, the config, the schemas (the validators and the
 * published schema documents), the code that renders (src/, bin/, the action bundles and their
 * action.yml) and the dependencies it runs on. The site's cache key hashes exactly these.
 */
const SITE_INPUTS =
  "hashFiles('records/**', 'portal.config.json', 'schemas/**', 'src/**', 'bin/**', 'actions/*/action.yml', 'actions/*/dist/**', 'package.json', 'package-lock.json')";
/** Entries are saved as `site-<inputs>-<run>-<attempt>`: the restore key matches them as a prefix. */
const EXACT =
  "startsWith(steps.site.outputs.cache-matched-key, format('{0}-', steps.site.outputs.cache-primary-key))";

/** The site's restore step (id site), and the save step when there is one, checked for keys and wiring. */
function siteCache(all: Plain[]) {
  const restore = all.findIndex(
    (s) => String(s.uses).startsWith("actions/cache/restore@") && s.with.path === "site",
  );
  const save = all.findIndex(
    (s) => String(s.uses).startsWith("actions/cache/save@") && s.with.path === "site",
  );
  expect(restore).toBeGreaterThan(-1);
  expect(all[restore].id).toBe("site");
  // The primary key is the inputs' hash alone (a prefix of every entry saved from them: the newest
  // wins); restore-keys the newest entry of any inputs, which the action builds over.
  expect(all[restore].with).toMatchObject({
    key: expression(`format('site-{0}', ${SITE_INPUTS})`),
    "restore-keys": "site-",
  });
  return { restore, save };
}
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
        "!cancelled() && !(github.event_name == 'push' && vars.SVC_BOT_LOGINS != '' && (contains(format(',{0},', vars.SVC_BOT_LOGINS), format(',{0},', github.actor)) || contains(format(',{0},', vars.SVC_BOT_LOGINS), format(', {0},', github.actor))))",
      ),
    );
  });

  describe("the app's own push starts nothing; anyone else's push runs the job", () => {
    const dirs: string[] = [];
    afterAll(() => {
      for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
    });

    /**
     * The publish job's `if:` as a runner evaluates it, for a push by `login`. The checkout stand-in
     * records that the job started and then fails it, so no step after it runs: started or skipped
     * is all this asks.
     */
    async function pushBy(login: string, botLogins: string, eventName = "push") {
      const workspace = mkdtempSync(join(tmpdir(), "svc-publish-if-"));
      dirs.push(workspace);
      let started = false;
      const job = await runJob({
        workflow: "publish.yml",
        job: "publish",
        event: { name: eventName, payload: { sender: { login } } },
        workspace,
        runnerTemp: join(workspace, "temp"),
        vars: { SVC_BOT_LOGINS: botLogins },
        actions: {
          "actions/checkout": async () => {
            started = true;
            throw new Error("the job started");
          },
        },
      });
      expect(job.result).toBe(started ? "failure" : "skipped");
      return started;
    }

    it("skips a push by a login of the list, matched whole and in any letter case", async () => {
      expect(await pushBy("svc-portal[bot]", "svc-portal[bot]")).toBe(false);
      expect(await pushBy("SVC-Portal[bot]", "svc-portal[bot]")).toBe(false);
      expect(await pushBy("svc-portal[bot]", "other[bot],svc-portal[bot]")).toBe(false);
      expect(await pushBy("svc-portal[bot]", "other[bot], svc-portal[bot]")).toBe(false);
    });

    it("runs for a human whose login is part of the app's, or of any entry, and for every scheduled run", async () => {
      expect(await pushBy("svc-portal", "svc-portal[bot]")).toBe(true);
      expect(await pushBy("portal", "svc-portal[bot], other[bot]")).toBe(true);
      expect(await pushBy("svc-portal[bot]", "svc-portal[bot]x")).toBe(true);
      expect(await pushBy("octocat", "svc-portal[bot]")).toBe(true);
      // Unset, nothing is skipped; a schedule's actor is never skipped either.
      expect(await pushBy("svc-portal[bot]", "")).toBe(true);
      expect(await pushBy("svc-portal[bot]", "svc-portal[bot]", "schedule")).toBe(true);
    });
  });

  it("never commits site/: restores the previous deployment before publishing, saves it after signing, uploads it", () => {
    const all = steps(publish);
    const index = (predicate: (s: Plain) => boolean) => all.findIndex(predicate);
    const { restore, save } = siteCache(all);
    const upload = index((s) => String(s.uses).startsWith("actions/upload-pages-artifact@"));
    expect(restore).toBeLessThan(index((s) => s.id === "publish"));
    expect(save).toBeGreaterThan(index((s) => s.id === "sign"));
    expect(save).toBeLessThan(upload);
    // Saved under the inputs' hash as it is after the publication, then the run: every save is a new
    // key (entries are immutable), so a re-signed site is never shadowed by an older entry.
    expect(all[save].with.key).toBe(
      expression(`format('site-{0}-{1}-{2}', ${SITE_INPUTS}, github.run_id, github.run_attempt)`),
    );
    // A failed save costs the next run a build, never this run its deploy.
    expect(all[save]["continue-on-error"]).toBe(true);
    // Saved whenever Pages deploys, when the restored entry was not exact (the action built over
    // it), and when the run changed the inputs without a deploy (a refusal written to the ledger):
    // the next no-op run then finds an exact one.
    expect(all[save].if).toBe(
      `steps.sign.outputs.deploy == 'true' || steps.publish.outputs.deploy == 'true' || !${EXACT} || format('site-{0}', ${SITE_INPUTS}) != steps.site.outputs.cache-primary-key`,
    );
    expect(all[upload].if).toBe(
      "steps.sign.outputs.deploy == 'true' || steps.publish.outputs.deploy == 'true'",
    );
    expect(all[upload].with.path).toBe("site");
  });

  it("skips the drift check only for an entry saved from exactly these inputs", () => {
    const step = steps(publish).find((s) => s.id === "publish");
    expect(step.with["site-exact"]).toBe(expression(EXACT));
    // The pending step never reads the site.
    expect(steps(publish).find((s) => s.id === "pending").with["site-exact"]).toBeUndefined();
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
    const { restore, save } = siteCache(all);
    expect(restore).toBeLessThan(all.findIndex((s) => s.id === "sync"));
    expect(save).toBeGreaterThan(all.findIndex((s) => s.id === "sync"));
    expect(all[save].with.key).toBe(
      expression(`format('site-{0}-{1}-{2}', ${SITE_INPUTS}, github.run_id, github.run_attempt)`),
    );
    expect(all[save]["continue-on-error"]).toBe(true);
    expect(all[save].if).toBe(
      expression(
        `!cancelled() && (steps.sync.outputs.changed == 'true' || (steps.sync.outcome == 'success' && !${EXACT}))`,
      ),
    );
    expect(all.find((s) => s.id === "sync").with["site-exact"]).toBe(expression(EXACT));
  });
});

describe("validate-submission.yml", () => {
  const validate = workflow("validate-submission.yml").jobs.validate;

  it("reads the default branch's entry for the base checkout's inputs, never writes one, and skips the build only on an exact one", () => {
    const all = steps(validate);
    const { restore, save } = siteCache(all);
    expect(save).toBe(-1);
    const step = all.findIndex((s) => s.id === "validate");
    expect(restore).toBeLessThan(step);
    expect(all[step].with["site-exact"]).toBe(expression(EXACT));
    // The inputs hashed are the base branch's: the checkout is the base ref, not the pull request.
    const checkout = all.find((s) => String(s.uses).startsWith("actions/checkout@"));
    expect(checkout.with.ref).toBe(expression("github.base_ref"));
  });
});
