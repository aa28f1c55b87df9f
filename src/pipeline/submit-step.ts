/**
 * The submit action's step, run in a mod's own repository: pack the mod (or take a built ZIP), run
 * every validation check `svc validate` runs, attach the ZIP to the modder's release, exchange the
 * job's OIDC token for an upload credential (trusted publishing) and submit the release.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { basename, resolve } from "node:path";
import { packageFileName } from "../contracts/package-file-name.ts";
import type { ValidationContract } from "../contracts/validation-contract.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { createClamscanScanner } from "../validation/antivirus/clamscan.ts";
import { SIDECAR_JSON_LIMITS } from "../validation/documents.ts";
import { packFolder } from "../validation/pack.ts";
import { runValidation } from "../validation/runner.ts";
import type { ValidationReport } from "../validation/types.ts";
import { type ActionOutcome, outcome, type StepEnv } from "./action-step.ts";

const ANTIVIRUS = "antivirus_scan";

interface Prepared {
  bytes: Buffer;
  fileName: string;
  sidecar: Record<string, unknown>;
}

async function portalJson<T>(portal: string, path: string): Promise<T | null> {
  const response = await fetch(`${portal}${path}`, { headers: { accept: "application/json" } });
  if (response.status === 404) return null;
  if (!response.ok) throw new Error(`${portal}${path} answered ${response.status}`);
  return (await response.json()) as T;
}

/** The release's descriptive fields (svc new --release writes them), with the manifest's identity filled in. */
function readMetadata(path: string): Record<string, unknown> {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch {
    throw new Error(
      `metadata ${path} is missing: write it with \`npx svc new --release\` (summary, authors, description, tags, links)`,
    );
  }
  const parsed = parseUntrustedJson(bytes, SIDECAR_JSON_LIMITS);
  if (!parsed.ok || typeof parsed.value !== "object" || parsed.value === null || Array.isArray(parsed.value))
    throw new Error(`metadata ${path} is not a JSON object${parsed.ok ? "" : `: ${parsed.message}`}`);
  return parsed.value as Record<string, unknown>;
}

export async function preparePackage(
  env: StepEnv,
  policy: ValidationContract,
  releaseBody: string,
): Promise<Prepared> {
  const workspace = env.context.workspace;
  const metadata = readMetadata(resolve(workspace, env.input("metadata") || "svc-release.json"));
  const built = env.input("package");
  let bytes: Buffer;
  let fileName: string;
  let fromManifest: Record<string, unknown> = {};
  if (built) {
    bytes = readFileSync(resolve(workspace, built));
    fileName = basename(built);
  } else {
    const packed = await packFolder(resolve(workspace, env.input("path") || "."), policy);
    if (!packed.ok)
      throw new Error(
        `the mod folder is not a valid package: ${packed.problems.map((p) => `${p.check ? `${p.check}: ` : ""}${p.code} (${p.log.join("; ")})`).join(", ")}`,
      );
    const m = packed.manifest;
    bytes = packed.bytes;
    fileName = `${m.id}-${m.version}.zip`;
    fromManifest = {
      modId: m.id,
      name: m.name,
      version: m.version,
      targetGameBuild: m.targetGameBuild,
      dependencies: m.dependencies,
      entrypoints: m.entrypoints,
      ...(m.modConfig !== undefined ? { modConfig: m.modConfig } : {}),
    };
  }
  const sidecar: Record<string, unknown> = {
    schema: "svc.mod-release-submission.v1",
    ...fromManifest,
    ...metadata,
    ...(metadata.releaseNotes === undefined && releaseBody.trim()
      ? { releaseNotes: releaseBody.trim() }
      : {}),
    package: {
      fileName,
      sha256: createHash("sha256").update(bytes).digest("hex"),
      sizeBytes: bytes.length,
    },
  };
  // The asset becomes the package's public URL: named by the portal's convention, {modId}-{version}.zip,
  // not after the build's file (dist/my-mod-1.2.0-rc2.zip). Without an identity validation says so.
  if (typeof sidecar.modId === "string" && typeof sidecar.version === "string") {
    fileName = packageFileName(sidecar.modId, sidecar.version);
    sidecar.package = { ...(sidecar.package as Record<string, unknown>), fileName };
  }
  return { bytes, fileName, sidecar };
}

/** The check table of the job summary: every check with its status and reason code. */
function checkTable(report: ValidationReport, portalScans: boolean): string {
  const rows = report.checks.map((c) => {
    const status =
      c.id === ANTIVIRUS && portalScans ? "left to the portal" : c.status === "passed" ? "pass" : "**FAIL**";
    const why =
      c.status === "failed" && !(c.id === ANTIVIRUS && portalScans) ? c.log.slice(0, 3).join("; ") : "";
    return `| \`${c.id}\` | ${status} | ${c.reasonCode ? `\`${c.reasonCode}\`` : ""} | ${why.replaceAll("|", "\\|").slice(0, 300)} |`;
  });
  return ["| check | status | reason | log |", "|---|---|---|---|", ...rows].join("\n");
}

/** Required checks that failed; without a scanner here the antivirus check is the portal's to run. */
function failedChecks(report: ValidationReport, portalScans: boolean): string[] {
  return report.checks
    .filter((c) => c.required && c.status !== "passed" && !(c.id === ANTIVIRUS && portalScans))
    .map((c) => `${c.id}${c.reasonCode ? ` (${c.reasonCode})` : ""}`);
}

interface Release {
  id: number;
  upload_url: string;
  body?: string | null;
  html_url: string;
  assets: Array<{ id: number; name: string; size: number; browser_download_url: string }>;
}

function releaseTag(env: StepEnv): string {
  const given = env.input("release-tag");
  if (given) return given;
  const fromEvent = (env.context.payload.release as { tag_name?: string } | undefined)?.tag_name;
  if (fromEvent) return fromEvent;
  if (env.context.ref.startsWith("refs/tags/")) return env.context.ref.slice("refs/tags/".length);
  throw new Error("no release tag: run on a release or a tag push, or set the input release-tag");
}

async function portalCall(
  url: string,
  init: RequestInit,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(url, init);
  const text = await response.text();
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    body = { message: text.slice(0, 300) };
  }
  return { status: response.status, body };
}

function portalError(what: string, answer: { status: number; body: Record<string, unknown> }): Error {
  const error = new Error(`${what}: ${answer.status} ${String(answer.body.message ?? "")}`) as Error & {
    code?: string;
  };
  if (typeof answer.body.code === "string") error.code = answer.body.code;
  return error;
}

export async function submitStep(env: StepEnv): Promise<ActionOutcome> {
  const portal = env.required("portal-url").replace(/\/+$/, "");
  const audience = env.input("audience") || portal;
  const policy = await portalJson<ValidationContract>(
    portal,
    "/api/v1/publishing/game-publishing-validation.v1.json",
  );
  if (!policy)
    throw new Error(`${portal} publishes no validation contract: is portal-url the portal's address?`);
  const api = env.octokit(env.required("github-token"));
  const { owner, repo } = env.context.repo;
  const tag = releaseTag(env);
  const { data: release } = (await api.rest.repos.getReleaseByTag({ owner, repo, tag })) as { data: Release };
  const prepared = await preparePackage(env, policy, release.body ?? "");
  const portalScans = env.input("scanner") !== "clamscan";
  const report = await runValidation({
    package: { bytes: prepared.bytes },
    sidecar: prepared.sidecar,
    policy,
    catalog: await portalJson(portal, "/api/v1/catalog.json"),
    gameBuilds: await portalJson(portal, "/api/v1/game-builds/latest.json"),
    scanner: portalScans ? null : createClamscanScanner(),
  });
  const table = checkTable(report, portalScans);
  const failed = failedChecks(report, portalScans);
  const modId = String(prepared.sidecar.modId);
  const version = String(prepared.sidecar.version);
  if (failed.length > 0)
    return outcome({
      summary: `## svc submit: ${modId}@${version} did not pass validation\n\n${table}\n\nNothing was attached or submitted.`,
      failure: `validation failed: ${failed.join(", ")}`,
    });

  const asset = await attachPackage(env, api, release, prepared);
  const sidecar = { ...prepared.sidecar, package: { ...(prepared.sidecar.package as object), url: asset } };
  const token = await env.idToken(audience);
  const exchanged = await portalCall(`${portal}/api/v1/trusted-publishing/exchange`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ modId, token }),
  });
  if (exchanged.status !== 201) throw portalError("the trusted-publishing exchange was refused", exchanged);
  const credential = String(exchanged.body.credential);
  env.io.setSecret(credential);
  const submitted = await submit(portal, credential, sidecar, prepared);
  const id = String(submitted.submissionId);
  const statusUrl = `${portal}/api/v1/uploads/${id}`;
  const link = typeof submitted.pullRequestUrl === "string" ? submitted.pullRequestUrl : statusUrl;
  return outcome({
    outputs: { "submission-id": id, "status-url": statusUrl },
    summary: [
      `## svc submit: ${modId}@${version} submitted`,
      "",
      table,
      "",
      `Package: [${prepared.fileName}](${asset}) (${prepared.bytes.length} bytes, sha256 \`${(prepared.sidecar.package as { sha256: string }).sha256}\`)`,
      `Submission: [${id}](${link}), state \`${String(submitted.state)}\``,
    ].join("\n"),
    notices: [`${modId}@${version} submitted as ${id}: ${link}`],
  });
}

/** The ZIP on the release: uploaded, or the same bytes already there (a re-run job). */
async function attachPackage(
  env: StepEnv,
  api: ReturnType<StepEnv["octokit"]>,
  release: Release,
  prepared: Prepared,
): Promise<string> {
  const existing = release.assets.find((a) => a.name === prepared.fileName);
  if (existing) {
    const { data } = await api.request("GET /repos/{owner}/{repo}/releases/assets/{asset_id}", {
      ...env.context.repo,
      asset_id: existing.id,
      headers: { accept: "application/octet-stream" },
    });
    if (!Buffer.from(data as unknown as ArrayBuffer).equals(prepared.bytes))
      throw new Error(
        `the release already has ${prepared.fileName} with other bytes; release assets are immutable to the portal, publish a new version`,
      );
    return existing.browser_download_url;
  }
  const { data } = await api.request({
    method: "POST",
    url: release.upload_url,
    name: prepared.fileName,
    data: prepared.bytes as unknown as string,
    headers: { "content-type": "application/zip", "content-length": prepared.bytes.length },
  });
  return (data as { browser_download_url: string }).browser_download_url;
}

/**
 * The sidecar with package.url, as a GitHub-backed portal takes it; a portal that keeps packages
 * itself answers unsupported_media_type, and then gets the ZIP's bytes (the credential is spent
 * only by an accepted upload, so the second attempt uses the same one).
 */
async function submit(
  portal: string,
  credential: string,
  sidecar: Record<string, unknown>,
  prepared: Prepared,
): Promise<Record<string, unknown>> {
  const authorization = `Bearer ${credential}`;
  const byUrl = await portalCall(`${portal}/api/v1/uploads`, {
    method: "POST",
    headers: { authorization, "content-type": "application/json" },
    body: JSON.stringify(sidecar),
  });
  if (byUrl.status === 200 || byUrl.status === 201) return byUrl.body;
  if (byUrl.body.code !== "unsupported_media_type") throw portalError("the upload was refused", byUrl);
  // The bytes travel themselves here: the URL names the modder's copy, which this portal never reads.
  const { url: _url, ...pkg } = sidecar.package as Record<string, unknown>;
  const body = new FormData();
  body.append(
    "metadata",
    new Blob([JSON.stringify({ ...sidecar, package: pkg })], { type: "application/json" }),
    "release.json",
  );
  body.append(
    "package",
    new Blob([new Uint8Array(prepared.bytes)], { type: "application/zip" }),
    prepared.fileName,
  );
  const bytes = await portalCall(`${portal}/api/v1/uploads`, {
    method: "POST",
    headers: { authorization },
    body,
  });
  if (bytes.status === 200 || bytes.status === 201) return bytes.body;
  throw portalError("the upload was refused", bytes);
}
