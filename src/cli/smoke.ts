import { readFileSync, writeFileSync } from "node:fs";
import { resolve } from "node:path";
import Table from "cli-table3";
import { RECORD_PATHS } from "../contracts/records.ts";
import { SvcError } from "../errors.ts";
import { commitRecordUpdates } from "../catalog/rebuild.ts";
import { runSmoke, type SmokeReport } from "../catalog/smoke.ts";
import { serializeDocument } from "../catalog/site.ts";
import { type CliIo, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./io.ts";
import { portalSigning } from "./online-keys.ts";
import { openProject, PROJECT_OPTIONS, parseFlags } from "./project.ts";

const HELP = `usage: svc smoke [--base-url URL] [--retry-for SECS] [--only MOD@VERSION,...] [--only-from receipts.json] [--out report.json] [--record] [--json] [--all]

Public smoke (required after every publication): fetches every static route of the contract with
and without its extension and validates each against its schema and the contract rules, downloads
every download-enabled artifact and verifies its size and sha256, and runs the reference manager
reader over the catalog. Exit 0 only when everything passed, 1 otherwise.

  --only LIST       download and hash only these artifacts (comma separated MOD@VERSION, or
                    framework, manager, runtime); every JSON route is still checked
  --only-from FILE  the same, for what a publish run's receipts file (publish-receipts.json)
                    published or changed: the post-publish smoke, whose cost follows the change
  --base-url URL    the deployment to smoke (default: portal.config.json's baseUrl)
  --retry-for SECS  repeat a failing smoke every 15 s for up to SECS seconds (a deployment still
                    rolling out); the last report stands
  --out FILE   write the svc.post-publish-smoke.v1 report there
  --record     store it as records/smoke/post-publish.json and rebuild the site (readiness counts a
               passing report only when its baseUrl is portal.config.json's baseUrl)
  --json       print the report as JSON instead of tables
  --all        list every route and artifact, not only failures (the default for small portals)
`;

const RETRY_INTERVAL_MS = 15_000;

function render(report: SmokeReport, all: boolean): string {
  const lines: string[] = [];
  const routes = all ? report.routes : report.routes.filter((r) => !r.ok);
  if (routes.length > 0) {
    const table = new Table({
      head: ["route", "status", "schema", "result"],
      style: { head: [], border: [] },
    });
    for (const r of routes)
      table.push([
        r.path,
        String(r.httpStatus ?? "-"),
        r.schema ?? "",
        r.ok ? "ok" : (r.errors ?? []).join("\n"),
      ]);
    lines.push(table.toString());
  }
  const artifacts = all ? report.artifacts : report.artifacts.filter((a) => !a.ok);
  if (artifacts.length > 0) {
    const table = new Table({
      head: ["artifact", "bytes", "sha256", "result"],
      style: { head: [], border: [] },
    });
    for (const a of artifacts)
      table.push([
        `${a.modId ?? ""}${a.version ? `@${a.version}` : ""}\n${a.url}`,
        String(a.actualSizeBytes ?? "-"),
        (a.actualSha256 ?? "-").slice(0, 16),
        a.ok ? "ok" : (a.errors ?? []).join("\n"),
      ]);
    lines.push(table.toString());
  }
  const m = report.managerParse;
  lines.push(
    `manager reader: ${m.ok ? "ok" : "FAILED"} (${m.mods ?? 0} mods, ${m.versions ?? 0} versions)${m.errors.length ? `\n  ${m.errors.join("\n  ")}` : ""}`,
  );
  for (const f of report.ruleFailures) lines.push(`contract ${f.rule}: ${f.message}`);
  lines.push(`signature: ${describeSignature(report.signature)}`);
  const s = report.summary;
  lines.push(
    `svc smoke ${report.baseUrl}: ${report.passed ? "PASSED" : "FAILED"} — routes ${s.routesChecked - s.routesFailed}/${s.routesChecked} ok, artifacts ${s.artifactsChecked - s.artifactsFailed}/${s.artifactsChecked} ok${s.artifactsNotDownloaded ? ` (${s.artifactsNotDownloaded} listed, not downloaded: unchanged by this run)` : ""}, ${report.ruleFailures.length} rule failure(s), signature ${report.signature?.state ?? "not checked"}, ${report.durationMs} ms`,
  );
  if (!report.passed) lines.push(...failingItems(report).map((item) => `  failed: ${item}`));
  return `${lines.join("\n")}\n`;
}

function describeSignature(signature: SmokeReport["signature"]): string {
  if (!signature) return "not checked";
  if (signature.state === "verified")
    return `verified (${signature.documents} documents, as a manager checks them)`;
  if (signature.state === "unsigned") return `unsigned (${signature.detail})`;
  return `FAILED ${signature.code}: ${signature.detail}`;
}

/** Every item that failed, each with its reason: what a FAILED line must never leave out. */
export function failingItems(report: SmokeReport): string[] {
  const items: string[] = [];
  for (const r of report.routes) if (!r.ok) items.push(`route ${r.path}: ${(r.errors ?? []).join("; ")}`);
  for (const a of report.artifacts)
    if (!a.ok)
      items.push(
        `artifact ${a.modId ?? ""}${a.version ? `@${a.version}` : ""} ${a.url}: ${(a.errors ?? []).join("; ")}`,
      );
  if (!report.managerParse.ok)
    items.push(`manager reader: ${report.managerParse.errors.join("; ") || "failed"}`);
  for (const f of report.ruleFailures) items.push(`contract ${f.rule}: ${f.message}`);
  if (report.signature?.state === "failed")
    items.push(`signature ${report.signature.code}: ${report.signature.detail}`);
  // A report that failed for a reason this list does not know still says so.
  if (items.length === 0) items.push("no single item failed, yet the report did not pass (see --json)");
  return items;
}

/**
 * The artifacts a post-publish smoke downloads: named on the command line, or read from a publish
 * run's receipts (every entry whose receipt names a mod version; a hide or unhide changes no bytes
 * but its version's listing, so it is downloaded too). null: all of them.
 */
function onlyArtifacts(
  list: string | undefined,
  receiptsPath: string | undefined,
  io: CliIo,
): Set<string> | null {
  if (list === undefined && receiptsPath === undefined) return null;
  const keys = new Set<string>();
  for (const item of (list ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean))
    keys.add(item);
  if (receiptsPath !== undefined) {
    const entries = JSON.parse(readFileSync(resolve(io.cwd, receiptsPath), "utf8")) as unknown;
    if (!Array.isArray(entries))
      throw new SvcError("invalid_payload", `${receiptsPath} is not a publish receipts file (an array)`);
    for (const entry of entries as Array<{
      receipt?: { ok?: boolean; modId?: unknown; version?: unknown };
    }>) {
      const receipt = entry?.receipt;
      if (receipt?.ok && typeof receipt.modId === "string" && typeof receipt.version === "string")
        keys.add(`${receipt.modId}@${receipt.version}`);
    }
  }
  return keys;
}

export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseFlags(args, {
    ...PROJECT_OPTIONS,
    "base-url": { type: "string" },
    out: { type: "string" },
    record: { type: "boolean" },
    json: { type: "boolean" },
    all: { type: "boolean" },
    only: { type: "string" },
    "only-from": { type: "string" },
    "retry-for": { type: "string" },
  });
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  // Without --base-url: the project's own portal (portal.config.json's baseUrl), as the publish
  // workflow smokes the catalog it just deployed.
  const baseUrl = values["base-url"] ?? openProject(values, io).config.baseUrl;
  if (!/^https?:\/\/[^\s/]+/.test(baseUrl)) {
    io.stderr.write(`svc smoke: --base-url must be an http(s) URL\n\n${HELP}`);
    return EXIT_USAGE;
  }
  const only = onlyArtifacts(values.only, values["only-from"], io);
  const retryFor = Number(values["retry-for"] ?? 0);
  if (!Number.isInteger(retryFor) || retryFor < 0 || retryFor > 3600) {
    io.stderr.write(`svc smoke: --retry-for must be whole seconds from 0 to 3600\n\n${HELP}`);
    return EXIT_USAGE;
  }
  // A deployment that is still rolling out (the catalog commit pushed, the host not serving it yet)
  // fails at first: the smoke is repeated until it passes or the window ends, and the last report stands.
  const deadline = Date.now() + retryFor * 1000;
  let report = await runSmoke({ baseUrl, ...(only ? { onlyArtifacts: only } : {}) });
  while (!report.passed && Date.now() + RETRY_INTERVAL_MS < deadline) {
    io.stderr.write(`svc smoke: not passed yet; trying again in ${RETRY_INTERVAL_MS / 1000} s\n`);
    await new Promise((resolve) => setTimeout(resolve, RETRY_INTERVAL_MS));
    report = await runSmoke({ baseUrl, ...(only ? { onlyArtifacts: only } : {}) });
  }
  const text = serializeDocument(report);
  if (values.out) writeFileSync(resolve(io.cwd, values.out), text);
  if (values.record) {
    const { paths, config } = openProject(values, io);
    await commitRecordUpdates(
      {
        root: paths.root,
        recordsDir: paths.recordsDir,
        siteDir: paths.siteDir,
        config,
        signing: portalSigning(io),
      },
      [
        {
          path: RECORD_PATHS.postPublishSmoke,
          text,
          apply: (inputs) => ({ ...inputs, postPublishSmoke: report }),
        },
      ],
    );
    if (report.baseUrl !== config.baseUrl)
      io.stderr.write(
        `svc smoke: recorded, but readiness ignores it: ${report.baseUrl} is not portal.config.json's baseUrl ${config.baseUrl}\n`,
      );
  }
  io.stdout.write(values.json ? text : render(report, values.all ?? report.routes.length <= 40));
  return report.passed ? EXIT_OK : EXIT_FAILED;
}
