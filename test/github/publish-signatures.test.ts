/**
 * Issue 24, item 3: a ClamAV CDN rate limit no longer stops publication. publish.yml's jobs run as a
 * runner runs them (workflow-job.ts: GitHub's parser and expression evaluator, `run:` steps in bash,
 * the committed actions/publish bundle), with the real freshclam reaching a loopback CDN that answers
 * 429 to everything (clamav-cdn.ts), the Actions cache as a model (actions-cache.ts), the loopback
 * GitHub and git remote of the publish tests, and the real clamscan. sudo, apt-get, systemctl and npm
 * are stand-ins on PATH (the runner's image has ClamAV installed by then).
 *
 * - Signatures the scheduled refresh cached within the bound: an approved release is validated again
 *   over its exact bytes, antivirus included, and published, whatever the CDN answers.
 * - No usable signatures: the job still succeeds, the release is refused retryably
 *   (scanner_unavailable, nothing downloaded), and the receipts job says so on the pull request.
 */
import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ActionsCache } from "../support/actions-cache.ts";
import { type ClamavCdn, startRateLimitedCdn } from "../support/clamav-cdn.ts";
import { BOT_LOGIN } from "../support/github-repository.ts";
import {
  type PublishScenario,
  pushEvent,
  REPOSITORY,
  scheduleEvent,
  startPublishScenario,
  WORKFLOW_TOKEN,
} from "../support/publish-scenario.ts";
import { signatureStatus } from "../../src/pipeline/publish-signatures.ts";
import { type JobResult, runJob, stepOf } from "../support/workflow-job.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";
import { modRecordsPath, releaseIn } from "../support/records.ts";

const RUNS_TIMEOUT = 180_000;
const freshclamPath = existsSync("/usr/bin/freshclam")
  ? "/usr/bin/freshclam"
  : (() => {
      try {
        return execFileSync("sh", ["-c", "command -v freshclam"], { encoding: "utf8" }).trim() || null;
      } catch {
        return null;
      }
    })();
const skip = shouldSkip(clamscanPath, "clamscan") || shouldSkip(freshclamPath, "freshclam");

let scenario: PublishScenario | undefined;
let cdn: ClamavCdn | undefined;
let cache: ActionsCache | undefined;
const dirs: string[] = [];
afterEach(async () => {
  await scenario?.stop();
  await cdn?.stop();
  cache?.cleanup();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  scenario = undefined;
  cdn = undefined;
  cache = undefined;
});

const temp = (prefix: string) => {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
};

/**
 * Commands a hosted runner has, as stand-ins: sudo runs the command, apt-get and systemctl succeed,
 * npm ci is done. freshclam is the real one; called without a configuration of its own (as the
 * workflow used to), it reads one whose CDN is the loopback one.
 */
function runnerCommands(cdnUrl: string): Record<string, string> {
  const systemDb = temp("svc-system-clamav-");
  return {
    sudo: 'exec "$@"',
    "apt-get": 'echo "apt-get $*"',
    systemctl: 'echo "systemctl $*"',
    npm: 'echo "npm $*"',
    freshclam: [
      'for a in "$@"; do case "$a" in --config-file=*) exec ' + freshclamPath + ' "$@";; esac; done',
      'conf="$(mktemp -d)/freshclam.conf"',
      `printf 'DatabaseDirectory %s\\nDatabaseOwner %s\\nPrivateMirror %s\\nMaxAttempts 1\\n' '${systemDb}' "$(id -un)" '${cdnUrl}' > "$conf"`,
      `exec ${freshclamPath} --config-file="$conf" "$@"`,
    ].join("\n"),
  };
}

async function setUp() {
  scenario = await startPublishScenario();
  scenario.world.serveBotWrites();
  cdn = await startRateLimitedCdn();
  cache = new ActionsCache();
  return { s: scenario, cdn, cache };
}

/** One job of publish.yml on this scenario, as the runner would run it. */
async function publishJob(
  s: PublishScenario,
  job: string,
  event: { name: string; payload: Record<string, unknown> },
  options: {
    until?: string;
    runnerTemp?: string;
    needs?: Record<string, { result: string; outputs: Record<string, string> }>;
    extra?: Record<string, (inputs: Record<string, string>) => Promise<Record<string, string>>>;
  } = {},
): Promise<JobResult & { runnerTemp: string }> {
  const workspace = await s.checkout();
  const runnerTemp = options.runnerTemp ?? temp("svc-runner-temp-");
  const head = execFileSync("git", ["rev-parse", "HEAD"], { cwd: workspace, encoding: "utf8" }).trim();
  const result = await runJob({
    workflow: "publish.yml",
    job,
    ...(options.until ? { until: options.until } : {}),
    event,
    workspace,
    runnerTemp,
    token: WORKFLOW_TOKEN,
    vars: { SVC_APP_ID: "4242", SVC_BOT_LOGINS: BOT_LOGIN, SVC_CLAMAV_MIRROR: cdn!.url },
    secrets: { SVC_APP_PRIVATE_KEY: s.appPrivateKey },
    env: {
      HOME: s.dir,
      GITHUB_REPOSITORY: REPOSITORY,
      GITHUB_API_URL: s.github.url,
      GITHUB_REF: "refs/heads/main",
      GITHUB_SHA: head,
      NODE_EXTRA_CA_CERTS: s.tls.caFile,
    },
    commands: runnerCommands(cdn!.url),
    actions: {
      "actions/checkout": async () => ({}),
      "actions/setup-node": async () => ({}),
      ...cache!.standIns(),
      ...options.extra,
    },
    ...(options.needs ? { needs: options.needs } : {}),
  });
  return { ...result, runnerTemp };
}

const failures = (job: JobResult) =>
  job.steps
    .filter((step) => step.outcome === "failure")
    .map((step) => `${step.name}:\n${step.log}`)
    .join("\n");

/** Signatures as the scheduled refresh saved them `hoursAgo` hours ago: the EICAR test database. */
function cachedSignatures(c: ActionsCache, hoursAgo: number): string {
  const dir = makeSignatureDatabase(temp("svc-signatures-"));
  const confirmedAt = new Date(Date.now() - hoursAgo * 3_600_000).toISOString();
  writeFileSync(
    join(dir, "svc-signatures.json"),
    `${JSON.stringify({ confirmedAt, source: "database.clamav.net" })}\n`,
  );
  c.seed("clamav-db-900-1", dir);
  return confirmedAt;
}

const recordOn = (s: PublishScenario, modId: string, version: string) => {
  return releaseIn(s.remote.show(modRecordsPath(modId)), version);
};

describe.skipIf(skip)("publish.yml while ClamAV's CDN answers 429", { timeout: RUNS_TIMEOUT }, () => {
  it("publishes an approved release with signatures the scheduled refresh cached; the refresh's 429 keeps the cache and fails nothing", async () => {
    const { s, cdn, cache } = await setUp();
    const confirmedAt = cachedSignatures(cache, 3);
    const before = s.remote.head();
    const sub = s.submission(7, "better-hud", "1.0.0");
    s.world.setStatus(sub.pr, "approved");
    const merged = s.world.merge(sub.pr);

    const job = await publishJob(s, "publish", pushEvent(before, merged, [sub.path]), { until: "publish" });
    expect(job.result, failures(job)).toBe("success");
    expect(stepOf(job, "publish").outputs.published).toBe("1");
    expect(recordOn(s, "better-hud", "1.0.0")?.status).toBe("published");
    expect(s.world.published("better-hud-v1.0.0")?.assets[0]?.bytes.equals(sub.packageBytes)).toBe(true);
    // The publish job never asked the CDN for anything.
    expect(cdn.requests).toEqual([]);

    const refresh = await publishJob(s, "signatures", {
      name: "schedule",
      payload: { schedule: "41 */6 * * *" },
    });
    expect(refresh.result, failures(refresh)).toBe("success");
    expect(stepOf(refresh, "refresh").outputs).toEqual({ refreshed: "false", "confirmed-at": confirmedAt });
    expect(cdn.requests.length).toBeGreaterThan(0);
    expect(cache.entries.map((e) => e.key)).toEqual(["clamav-db-900-1"]);
    // On the 30-minute schedule the refresh does not run.
    const skipped = await publishJob(s, "signatures", scheduleEvent());
    expect(skipped.steps.every((step) => step.outcome === "skipped")).toBe(true);
  });

  it("without usable signatures the job succeeds, refuses the release retryably without downloading it, and the receipts job says so on the pull request", async () => {
    // The cache holds nothing: the refresh has never succeeded.
    const { s, cdn } = await setUp();
    const before = s.remote.head();
    const sub = s.submission(7, "better-hud", "1.0.0");
    s.world.setStatus(sub.pr, "approved");
    const merged = s.world.merge(sub.pr);

    const job = await publishJob(s, "publish", pushEvent(before, merged, [sub.path]), { until: "publish" });
    expect(job.result, failures(job)).toBe("success");
    expect(cdn.requests).toEqual([]);
    expect(s.tls.requests).toEqual([]);
    expect(recordOn(s, "better-hud", "1.0.0")).toBeNull();
    const receiptsFile = join(job.runnerTemp, "publish-receipts.json");
    const receipts = JSON.parse(readFileSync(receiptsFile, "utf8"));
    expect(receipts).toEqual([
      expect.objectContaining({
        pullRequest: 7,
        outcome: "failed",
        receipt: expect.objectContaining({
          ok: false,
          retryable: true,
          error: expect.objectContaining({ code: "scanner_unavailable" }),
        }),
      }),
    ]);
    expect(receipts[0].receipt.error.message).toContain("no ClamAV signatures in");

    const receiptsJob = await publishJob(s, "receipts", scheduleEvent(), {
      needs: {
        publish: { result: "success", outputs: { deploy: "false" } },
        deploy: { result: "skipped", outputs: {} },
      },
      extra: {
        "actions/download-artifact": async (inputs) => {
          copyFileSync(receiptsFile, join(inputs.path!, "publish-receipts.json"));
          return {};
        },
      },
    });
    expect(receiptsJob.result, failures(receiptsJob)).toBe("success");
    const comment = sub.pr.comments.at(-1)!;
    expect(comment.user.login).toBe(BOT_LOGIN);
    expect(comment.body).toContain("### svc publish failed for `better-hud@1.0.0`");
    expect(comment.body).toContain("`scanner_unavailable`");
    expect(comment.body).toContain("the publish job tries again on its next run");
    // The next run installs the scanner again for it.
    const pending = await s.run(await s.checkout(), scheduleEvent(), { inputs: { mode: "pending" } });
    expect(pending.outputs).toEqual({ pending: "true" });
  });

  it("signatures older than the bound, or without the refresh's stamp, are not usable", () => {
    const dir = makeSignatureDatabase(temp("svc-signatures-"));
    expect(signatureStatus(dir, 48).reason).toContain("carry no svc-signatures.json");
    const at = new Date("2026-11-20T00:00:00Z");
    writeFileSync(join(dir, "svc-signatures.json"), JSON.stringify({ confirmedAt: at.toISOString() }));
    expect(signatureStatus(dir, 48, new Date(at.getTime() + 47 * 3_600_000)).usable).toBe(true);
    expect(signatureStatus(dir, 48, new Date(at.getTime() + 49 * 3_600_000)).reason).toContain(
      "last confirmed current 49.0 h ago",
    );
  });
});
