/**
 * actions/submit from its committed bundle, as a runner runs it: INPUT_* variables, the GITHUB_*
 * context, ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN at the loopback OIDC issuer's runner endpoint. The
 * release lives on the OpenAPI-checked loopback GitHub; the submission goes to a loopback portal
 * whose worker validates it. From pulls-template/example-mod to pending_review.
 */
import { createHash } from "node:crypto";
import { cpSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { ModOwnership, TrustedPublisher } from "../../src/contracts/ownership.ts";
import { runAction } from "../support/action-runner.ts";
import { GitHubRepository } from "../support/github-repository.ts";
import { type GitHubServer, startGitHubServer } from "../support/github-server.ts";
import { type OidcIssuer, startOidcIssuer } from "../support/oidc-issuer.ts";
import { REPO_ROOT } from "../support/repo-root.ts";
import {
  type SubmissionsPortal,
  SKIP_CLAMSCAN as skip,
  startSubmissionsPortal,
  waitForState,
} from "../support/submissions-portal.ts";
import { writeOwnership as writeOwnershipRecord } from "../support/records.ts";

const MOD_REPOSITORY = "ada/example-mod";
const PUBLISHER: TrustedPublisher = {
  repository: { fullName: MOD_REPOSITORY, id: 5150 },
  workflow: "release.yml",
  environment: null,
};

let github: GitHubServer;
let issuer: OidcIssuer;
let portal: SubmissionsPortal;
let workspace: string;
let repository: GitHubRepository;

beforeEach(async () => {
  github = await startGitHubServer();
  issuer = await startOidcIssuer();
  portal = await startSubmissionsPortal();
  portal.h.app.config.trustedPublishing = { issuer: issuer.issuer, audience: portal.h.origin };
  const at = "2026-11-20T10:00:00.000Z";
  const owner = { account: portal.modder.accountId };
  const ownership: ModOwnership = {
    schema: "svc.mod-ownership.v1",
    modId: "example-mod",
    owners: [owner],
    collaborators: [],
    sourceRepository: PUBLISHER.repository,
    trustedPublishers: [PUBLISHER],
    claimedAt: at,
    updatedAt: at,
    history: [
      { at, action: "claim", by: owner },
      { at, action: "add_trusted_publisher", by: owner, trustedPublisher: PUBLISHER },
    ],
  };
  writeOwnershipRecord(portal.h.root, ownership);
  repository = new GitHubRepository(github, MOD_REPOSITORY);
  // A release asset is attached after publication here, which GitHub's immutable releases refuse.
  repository.immutable = false;
  repository.releases.push({ id: repository.newId(), tag: "v1.0.0", draft: false, assets: [] });
  repository.tags.add("v1.0.0");
  repository.serveReads().serveReleaseWrites();
  issuer.runner.claims = {
    repository: MOD_REPOSITORY,
    repository_id: "5150",
    repository_owner: "ada",
    job_workflow_ref: `${MOD_REPOSITORY}/.github/workflows/release.yml@refs/tags/v1.0.0`,
    ref: "refs/tags/v1.0.0",
    actor: "ada",
  };
  workspace = mkdtempSync(join(tmpdir(), "svc-submit-"));
  cpSync(join(REPO_ROOT, "pulls-template", "example-mod"), join(workspace, "mod"), { recursive: true });
  writeFileSync(
    join(workspace, "svc-release.json"),
    JSON.stringify({
      summary: "An example mod that shows the package layout.",
      releaseNotes: "First release, submitted by trusted publishing.",
      authors: [{ name: "Ada", github: "ada" }],
    }),
  );
});

afterEach(async () => {
  await portal?.stop();
  await issuer?.stop();
  await github?.stop();
  rmSync(workspace, { recursive: true, force: true });
});

function run(inputs: Record<string, string> = {}) {
  return runAction("submit", {
    workspace,
    eventName: "push",
    event: { ref: "refs/tags/v1.0.0" },
    inputs: { "portal-url": portal.h.origin, path: "mod", "github-token": "ghs_test_token", ...inputs },
    env: {
      GITHUB_REPOSITORY: MOD_REPOSITORY,
      GITHUB_API_URL: github.url,
      GITHUB_REF: "refs/tags/v1.0.0",
      ACTIONS_ID_TOKEN_REQUEST_URL: issuer.runner.url,
      ACTIONS_ID_TOKEN_REQUEST_TOKEN: issuer.runner.token,
    },
  });
}

describe.skipIf(skip)("actions/submit from its bundle", () => {
  it("packs the mod, validates it, attaches the ZIP to the release, exchanges the OIDC token and submits it to pending_review", async () => {
    const result = await run();
    expect(result.code, result.stdout).toBe(0);
    const id = result.outputs["submission-id"]!;
    expect(id).toMatch(/^sub_/);
    expect(result.outputs["status-url"]).toBe(`${portal.h.origin}/api/v1/uploads/${id}`);
    // The token was asked for the portal's audience, and only once.
    expect(issuer.requestedAudiences).toEqual([portal.h.origin]);

    const [asset] = repository.releases[0]!.assets;
    expect(asset?.name).toBe("example-mod-1.0.0.zip");
    const sha256 = createHash("sha256").update(asset!.bytes).digest("hex");
    expect(result.summary).toContain("| `manifest_identity` | pass |");
    expect(result.summary).toContain("| `antivirus_scan` | left to the portal |");
    expect(result.summary).toContain(sha256);
    expect(result.summary).toContain(`/api/v1/uploads/${id}`);

    const status = await waitForState(portal, portal.modder, id, ["pending_review", "validation_failed"]);
    expect(status.state).toBe("pending_review");
    expect(status).toMatchObject({
      modId: "example-mod",
      ownerAccountId: portal.modder.accountId,
      packageSha256: sha256,
    });
    github.assertDone();
  }, 120_000);

  it("fails the step with the check table when validation fails, and attaches and submits nothing", async () => {
    writeFileSync(join(workspace, "mod", "setup.bat"), "@echo off\n");
    const result = await run();
    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(/svc pack|not a valid package|validation failed/);
    expect(repository.releases[0]!.assets).toEqual([]);
    expect(issuer.requestedAudiences).toEqual([]);
    const rows = await portal.h.store.query("SELECT id FROM submissions");
    expect(rows.rows).toEqual([]);
  }, 120_000);

  it("fails the step with the check table when the sidecar does not match the package", async () => {
    writeFileSync(
      join(workspace, "svc-release.json"),
      JSON.stringify({
        summary: "An example mod.",
        releaseNotes: "Notes.",
        authors: [{ name: "Ada" }],
        version: "9.9.9",
      }),
    );
    const result = await run();
    expect(result.code).toBe(1);
    expect(result.summary).toContain("| `manifest_identity` | **FAIL** |");
    expect(result.stdout).toMatch(/validation failed: .*manifest_identity/);
    expect(repository.releases[0]!.assets).toEqual([]);
    expect(issuer.requestedAudiences).toEqual([]);
  }, 120_000);
});
