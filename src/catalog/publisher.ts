import type { Sidecar } from "../validation/types.ts";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import * as semver from "../contracts/semver.ts";
import type { PortalConfig } from "../config/portal-config.ts";
import { formatIssues, schemaRegistry } from "../contracts/schemas.ts";
import { SvcError } from "../errors.ts";
import { type ArtifactStore, artifactExistsError, type PromotedArtifact } from "./artifact-store.ts";
import { sha256Hex } from "../lib/hash.ts";
import {
  type CommitOptions,
  commitFiles,
  type FileContent,
  type FileDigest,
  FileExistsError,
  recoverPending,
  withPublishLock,
} from "./atomic-files.ts";
import {
  assertCanSign,
  resolveSigning,
  type SiteSigning,
  signAfterCommit,
} from "../distribution/tuf-repository.ts";
import { targetPathOfCommitted } from "../distribution/tuf-layout.ts";
import { visibleMods } from "../contracts/catalog.ts";
import { carryForward, lastPublished } from "../contracts/carry-forward.ts";
import type { SmokeSummary } from "../contracts/readiness.ts";
import { SITE_PATHS } from "../contracts/urls.ts";
import {
  appendChange,
  type ChangeKind,
  type ChangesPage,
  serializeChangesPage,
} from "../contracts/changes.ts";
import { checkContractRules, type RuleFailure } from "./contract-rules.ts";
import { clearOwedSigning, owedSigningError, owingSignature, settleOwedSigning } from "./owed-signing.ts";
import { renderModChange } from "./mod-change.ts";
import { warmCommitHelper } from "./spliced-content.ts";
import { recordsAtBase } from "./portal-base.ts";
import {
  findReleaseRecord,
  loadModRecords,
  loadOptionalJson,
  loadOwnership,
  modRecordsText,
  ownershipWrite,
} from "./records.ts";
import {
  claimOwnership,
  describePrincipal,
  type Identity,
  type ModOwnership,
  maySubmit,
  type Principal,
  type RepositoryRef,
} from "../contracts/ownership.ts";
import { RECORD_PATHS, type ReleaseFile, type ReleaseRecord } from "../contracts/records.ts";
import { listGeneratedFiles, loadSiteInputs, renderSite, serializeDocument } from "./site.ts";

/** The sidecar (svc.mod-release-submission.v1) as the schema allows it: the validation engine's type. */
export type ReleaseSubmission = Sidecar;

/** One check as the validation runner reports it (the upload-submission checkResult shape). */
export interface ValidationCheckResult {
  id: string;
  required: boolean;
  status: "pending" | "running" | "passed" | "failed" | "skipped";
  reasonCode: string | null;
  log: string[];
}

export interface ValidationReport {
  passed: boolean;
  checks: ValidationCheckResult[];
  /**
   * Every file the package installs with its size and sha256, measured by the validator in the
   * pass that inflated each entry (validatePackage); a passed report without it is not published.
   */
  files?: ReleaseFile[] | null;
}

/** What the publisher hands the validation runner: the exact bytes it will promote. */
export interface ValidationRequest {
  packageBytes: Uint8Array;
  /** The sidecar as received (the runner's sidecar_schema check judges it). */
  sidecar: unknown;
  config: PortalConfig;
  /** The artifact URL the release would get (semantic_version: never reuse an immutable URL). */
  artifactUrl: string;
}

export type PackageValidator = (request: ValidationRequest) => Promise<ValidationReport>;

export interface PublisherOptions {
  /** The project root: every path of a publication transaction is relative to it. */
  root: string;
  recordsDir: string;
  siteDir: string;
  config: PortalConfig;
  store: ArtifactStore;
  validate: PackageValidator;
  now?: () => Date;
  /** How long to wait for another publisher (default 60 s). */
  lockTimeoutMs?: number;
  /** Test hooks of the transaction (injected failures before its commit point). */
  commit?: CommitOptions;
  /**
   * incremental (default): read and render only the affected mod's records and files, patch the
   * index documents (catalog, mods index, changes feed, catalog page) in place; full: re-render every
   * mod from every record (what `svc build` does).
   */
  render?: "incremental" | "full";
  /**
   * Online signing keys (local portal): every publication signs the site under the publish lock after
   * its commit. Unset on GitHub, where the publish job's own step signs with the live timestamp.
   */
  signing?: SiteSigning | null;
}

export interface ReleaseSource {
  kind: ReleaseRecord["source"]["kind"];
  submissionId?: string;
  pullRequestUrl?: string;
}

export interface PublishRequest {
  packageBytes: Uint8Array;
  sidecar: unknown;
  source: ReleaseSource;
  /**
   * The person behind the release. Given, the publication is refused (`forbidden`) unless they own
   * or collaborate on the mod, and an unclaimed mod id is claimed for them (claimAs becomes its one
   * owner, with the source repository intake will accept). Omitted (an operator's `svc import`), no
   * ownership is checked or claimed.
   */
  submitter?: {
    identity: Identity;
    claimAs: Principal;
    sourceRepository?: RepositoryRef | null;
  };
}

export interface PublicationResult {
  record: ReleaseRecord;
  /** Other records whose status changed (superseded, or published again on unhide). */
  changed: ReleaseRecord[];
  artifact: { url: string; sha256: string; sizeBytes: number } | null;
  /** Root-relative paths written, created and deleted by the one transaction. */
  written: string[];
  deleted: string[];
  /**
   * Length and sha256 of written and created files (root-relative paths), measured as they were
   * written, when the publication signs: its signing takes them instead of reading the files back.
   */
  digests?: ReadonlyMap<string, FileDigest>;
  report: ValidationReport | null;
  /**
   * The same release (same version, sha256 and metadata) was already published: nothing was written.
   * A retried publication (after a crash between the files and a database row, or a re-run workflow)
   * therefore succeeds instead of answering version_exists.
   */
  alreadyPublished?: true;
}

const SIDECAR_SCHEMA = "svc.mod-release-submission.v1";

function rel(root: string, path: string): string {
  const r = relative(root, path);
  if (r.startsWith(".."))
    throw new SvcError("config_invalid", `${path} must be inside the project root ${root}`);
  return r.split("\\").join("/");
}

/** Parses and schema-checks a sidecar; the error lists every issue. */
export function parseSubmission(value: unknown, config: PortalConfig): ReleaseSubmission {
  const result = schemaRegistry(config.baseUrl).validate<ReleaseSubmission>("mod-release-submission", value);
  if (!result.ok) {
    throw new SvcError(
      "invalid_payload",
      `the sidecar is not a valid ${SIDECAR_SCHEMA} document:\n${formatIssues(result.issues)}`,
      { details: result.issues },
    );
  }
  return result.value;
}

function versionExists(record: ReleaseRecord): SvcError {
  return new SvcError(
    "version_exists",
    `${record.modId}@${record.version} already exists (status ${record.status}, published ${record.publishedAt}); versions are immutable — publish a new version instead`,
    { details: { modId: record.modId, version: record.version, status: record.status } },
  );
}

/** JSON with sorted keys: equal values give equal text whatever order their keys were written in. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === "object" && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : 1)))
      : v,
  );
}

/** What a release record keeps of its sidecar: two publications are the same release when these match. */
function releaseIdentity(source: ReleaseSubmission | ReleaseRecord, sha256: string, sizeBytes: number) {
  const fileName = "package" in source ? source.package.fileName : source.fileName;
  return canonical({
    modId: source.modId,
    version: source.version,
    name: source.name,
    summary: source.summary,
    description: source.description ?? "",
    authors: source.authors,
    tags: source.tags ?? [],
    links: source.links ?? {},
    license: source.license ?? null,
    targetGameBuild: source.targetGameBuild,
    releaseNotes: source.releaseNotes,
    fileName,
    sha256,
    sizeBytes,
    dependencies: source.dependencies,
    entrypoints: source.entrypoints,
    modConfig: source.modConfig ?? null,
  });
}

/**
 * The existing record is this very release, still visible: publishing it again is a no-op. What the
 * sidecar leaves out was carried forward into the record, so only what it gives is compared.
 */
function isSameRelease(existing: ReleaseRecord, sidecar: ReleaseSubmission, sha256: string): boolean {
  return (
    existing.status !== "hidden" &&
    releaseIdentity(existing, existing.sha256, existing.packageSizeBytes) ===
      releaseIdentity(carryForward(sidecar, existing).sidecar, sha256, sidecar.package.sizeBytes)
  );
}

/**
 * The sidecar with what it leaves out of CARRIED_FIELDS taken from the mod's last published version
 * (contracts/carry-forward.ts); a mod's first release must name its authors itself.
 */
function completeSubmission(
  sidecar: ReleaseSubmission,
  modRecords: readonly ReleaseRecord[],
): ReleaseSubmission & { authors: NonNullable<ReleaseSubmission["authors"]> } {
  const { sidecar: complete } = carryForward(
    sidecar,
    lastPublished(modRecords, sidecar.modId, sidecar.version),
  );
  const authors = complete.authors;
  if (!authors || authors.length === 0) {
    throw new SvcError(
      "invalid_payload",
      `the sidecar names no authors and ${sidecar.modId} has no published version to take them from: a mod's first release names at least one author`,
      { details: { field: "authors", modId: sidecar.modId } },
    );
  }
  return { ...complete, authors };
}

function failedChecks(report: ValidationReport): ValidationCheckResult[] {
  return report.checks.filter((c) => c.status === "failed" || (c.required && c.status !== "passed"));
}

/**
 * Status rules, one mod at a time, settled after every publication, hide and unhide: the newest
 * visible version is `published`, every other visible version is `superseded` (still listed and
 * downloadable); hidden versions keep statusBeforeHidden (what they were when hidden; unhide settles
 * again). Publishing an older version (a backport) therefore lists it as superseded at once, and
 * hiding the newest version makes the next visible one `published`.
 */
function settleStatuses(records: ReleaseRecord[], modId: string, at: string): ReleaseRecord[] {
  const visible = records
    .filter((r) => r.modId === modId && r.status !== "hidden")
    .sort((a, b) => semver.rcompare(a.version, b.version));
  const changed: ReleaseRecord[] = [];
  visible.forEach((record, i) => {
    const status = i === 0 ? "published" : "superseded";
    if (record.status !== status) {
      const next = { ...record, status, updatedAt: at } as ReleaseRecord;
      records[records.indexOf(record)] = next;
      changed.push(next);
    }
  });
  return changed;
}

interface Plan {
  modId: string;
  /** Every record of the mod (any status) after the change. */
  modRecords: ReleaseRecord[];
  /** The mod's ownership after the change; `claimed`: this change writes it (the first accepted submission). */
  ownership: ModOwnership | null;
  claimed?: boolean;
  /** Records whose files change. */
  touched: ReleaseRecord[];
  change: { version: string; kind: ChangeKind; at: string };
}

/**
 * The one case where a single mod's change moves a global document: the first release through the
 * backend path after a passed post-publish smoke lifts readiness' manual_fallback_active blocker.
 * That rare publication re-renders the whole site.
 */
function movesReadiness(options: PublisherOptions, plan: Plan): boolean {
  const record = plan.touched[0];
  if (plan.change.kind !== "publish" || !record || record.source.kind === "import") return false;
  const smoke = loadOptionalJson<SmokeSummary>(options.recordsDir, RECORD_PATHS.postPublishSmoke);
  if (!smoke?.passed) return false;
  const readiness = join(options.siteDir, SITE_PATHS.readiness);
  return !existsSync(readiness) || readFileSync(readiness, "utf8").includes('"manual_fallback_active"');
}

interface RenderedPlan {
  files: Map<string, FileContent>;
  /** Files known to differ from the ones on disk (read under the lock): the commit skips comparing them. */
  changed?: Set<string>;
  stale: string[];
  changesPage: ChangesPage;
  failures: RuleFailure[];
}

/** Every file from every record: `svc build`'s render, with the plan's records and change in place. */
function renderFull(options: PublisherOptions, plan: Plan, now: () => Date): RenderedPlan {
  const inputs = loadSiteInputs(options.config, options.recordsDir);
  const records = [...inputs.records.filter((r) => r.modId !== plan.modId), ...plan.modRecords];
  const ownerships = new Map(inputs.ownerships);
  if (plan.ownership) ownerships.set(plan.modId, plan.ownership);
  const changes = inputs.changes ?? [];
  const changesPage = appendChange(changes.at(-1) ?? null, {
    modId: plan.modId,
    version: plan.change.version,
    kind: plan.change.kind,
    latestVersion: visibleMods(plan.modRecords)[0]?.newest.version ?? null,
    at: plan.change.at,
  });
  const nextChanges = [...changes.filter((p) => p.page !== changesPage.page), changesPage];
  const files = renderSite({ ...inputs, records, changes: nextChanges, ownerships }, options.siteDir, now);
  const stale = listGeneratedFiles(options.siteDir).filter((p) => !files.has(p));
  return { files, stale, changesPage, failures: checkContractRules(files) };
}

/**
 * One publication transaction over the project root: the mod's release records, the changes feed
 * record, site JSON (checked against contract rules 1-6 before anything is written) and create-only
 * artifact files.
 */
function commitPlan(
  options: PublisherOptions,
  plan: Plan,
  artifact: PromotedArtifact | null,
): { written: string[]; deleted: string[]; digests?: ReadonlyMap<string, FileDigest> } {
  const now = options.now ?? (() => new Date());
  // The commit's helper thread starts while the change renders (see spliced-content.ts).
  warmCommitHelper();
  const root = options.root;
  const siteRel = rel(root, options.siteDir);
  const recordsRel = rel(root, options.recordsDir);
  const incremental =
    options.render === "full" || movesReadiness(options, plan)
      ? null
      : renderModChange({
          config: options.config,
          siteDir: options.siteDir,
          recordsDir: options.recordsDir,
          modId: plan.modId,
          records: plan.modRecords,
          ownership: plan.ownership,
          change: plan.change,
          now,
        });
  const rendered: RenderedPlan = incremental
    ? { ...incremental, stale: incremental.deleted }
    : renderFull(options, plan, now);
  const failures = rendered.failures;
  if (failures.length > 0) {
    throw new SvcError(
      "invalid_payload",
      `the publication would break contract rules; nothing was written:\n${failures
        .slice(0, 20)
        .map((f) => `  ${f.rule}: ${f.message}`)
        .join("\n")}${failures.length > 20 ? `\n  ... and ${failures.length - 20} more` : ""}`,
      { details: failures },
    );
  }
  const write = new Map<string, FileContent>();
  // The mod's one records file, rewritten whole: the touched records as the plan has them, every
  // other version byte-identical to what is stored (not as this portal's base reads it).
  const registry = schemaRegistry(options.config.baseUrl);
  const touched = new Map(plan.touched.map((r) => [r.version, r]));
  const stored = loadModRecords(options.recordsDir, plan.modId, registry);
  const releases = [
    ...stored.map((r) => touched.get(r.version) ?? r),
    ...plan.touched.filter((r) => !stored.some((s) => s.version === r.version)),
  ];
  write.set(`${recordsRel}/${RECORD_PATHS.modRecords(plan.modId)}`, modRecordsText(plan.modId, releases));
  if (plan.claimed && plan.ownership) {
    const owners = ownershipWrite(options.recordsDir, plan.ownership, registry);
    write.set(`${recordsRel}/${owners.path}`, owners.text);
  }
  write.set(
    `${recordsRel}/${RECORD_PATHS.changesPage(rendered.changesPage.page)}`,
    serializeChangesPage(rendered.changesPage),
  );
  // Encoded once: the commit compares each file with the one on disk and then writes it, and the
  // index documents are megabytes (an incremental render hands them over as bytes already).
  for (const [path, text] of rendered.files)
    write.set(
      `${siteRel}/${path}`,
      typeof text === "string" && text.length > 65_536 ? Buffer.from(text) : text,
    );
  const changed = new Set([...(rendered.changed ?? [])].map((p) => `${siteRel}/${p}`));
  const create = new Map(artifact?.files ?? []);
  const signs = resolveSigning(options.signing) !== null;
  const commit = commitFiles(
    root,
    { write, changed, delete: rendered.stale.map((p) => `${siteRel}/${p}`), create },
    owingSignature({ root, siteDir: options.siteDir }, options.signing, {
      ...options.commit,
      // Only what the signing signs is measured (the home page and records are no targets).
      digests: signs && ((path) => targetPathOfCommitted(path) !== null),
      beforeCommit: (change) => {
        // The public file must be the very inode that was hashed; anything else rolls back.
        for (const [path, { stagedFile }] of create) {
          const placed = statSync(join(root, path));
          const staged = statSync(stagedFile);
          if (placed.ino !== staged.ino || placed.size !== artifact!.sizeBytes) {
            throw new SvcError("internal_error", `${path} is not the artifact that was hashed`);
          }
        }
        options.commit?.beforeCommit?.(change);
      },
    }),
  );
  const digests = commit.digests ? new Map(commit.digests) : undefined;
  // The artifact was hashed where it was staged, and beforeCommit saw that very inode land.
  if (digests && artifact && create.size === 1)
    for (const path of create.keys())
      digests.set(path, { length: artifact.sizeBytes, sha256: artifact.sha256 });
  return {
    written: [...commit.written.filter((p) => !create.has(p)), ...[...create.keys()]],
    deleted: commit.deleted,
    ...(digests ? { digests } : {}),
  };
}

/** Every record of one mod, as this portal reads them (a loopback portal follows its port). */
function loadMod(options: PublisherOptions, modId: string): ReleaseRecord[] {
  return recordsAtBase(
    loadModRecords(options.recordsDir, modId, schemaRegistry(options.config.baseUrl)),
    options.config.baseUrl,
  );
}

/**
 * Runs one change of the published tree under the publish lock, signing after its commit. Its commit
 * notes what it owes a signature (owingSignature) before the commit point; a signing a crash left
 * owed is settled first, and without the keys to settle it the change is refused.
 */
export function locked<T extends { written: readonly string[]; deleted: readonly string[] }>(
  options: PublisherOptions,
  fn: () => Promise<T>,
): Promise<T> {
  const tree = { root: options.root, siteDir: options.siteDir };
  return withPublishLock(
    tree,
    async () => {
      assertCanSign(options.siteDir, options.signing);
      if (settleOwedSigning(tree, options.signing) === "owed") throw owedSigningError(tree);
      const result = await fn();
      signAfterCommit(options.siteDir, options.signing, result);
      if (options.signing) clearOwedSigning(tree);
      return result;
    },
    { timeoutMs: options.lockTimeoutMs ?? 60_000 },
  );
}

/**
 * Publishes one release: validates the exact bytes, promotes them into the artifact store, measures
 * sha256 and size from the stored artifact, writes the release record, supersedes the previous newest
 * version, regenerates the affected site files, checks contract rules 1-6, and commits all of it as
 * one transaction. Any failure leaves every previously published file byte-identical. Publishing
 * the same release again (same version, bytes and metadata, still visible) succeeds with
 * alreadyPublished and changes nothing; a different release under a taken version is version_exists.
 */
export async function publishRelease(
  options: PublisherOptions,
  request: PublishRequest,
): Promise<PublicationResult> {
  const now = options.now ?? (() => new Date());
  const parsed = parseSubmission(request.sidecar, options.config);
  const key = { modId: parsed.modId, version: parsed.version, fileName: parsed.package.fileName };
  const bytes = request.packageBytes;
  const sha256 = sha256Hex(bytes);
  if (sha256 !== parsed.package.sha256 || bytes.length !== parsed.package.sizeBytes) {
    throw new SvcError(
      "invalid_payload",
      `the package does not match its sidecar: sidecar says sha256 ${parsed.package.sha256}, ${parsed.package.sizeBytes} bytes; the package is sha256 ${sha256}, ${bytes.length} bytes`,
      { details: { expected: parsed.package, actual: { sha256, sizeBytes: bytes.length } } },
    );
  }
  const artifactUrl = options.store.urlFor(key);
  // Validation and the early check read the tree: a transaction a crash left is finished first.
  await recoverPending(
    { root: options.root, siteDir: options.siteDir },
    { timeoutMs: options.lockTimeoutMs ?? 60_000 },
  );
  // A cheap early answer; the authoritative check repeats under the lock on freshly loaded records.
  const existing = findReleaseRecord(options.recordsDir, key.modId, key.version);
  if (existing) {
    if (!isSameRelease(existing, parsed, sha256)) throw versionExists(existing);
    return locked(options, async () => {
      const current = findReleaseRecord(options.recordsDir, key.modId, key.version);
      if (!current || !isSameRelease(current, parsed, sha256)) throw versionExists(current ?? existing);
      return alreadyPublished(options, current);
    });
  }
  // Validation (antivirus included) runs before the lock: publishers wait only for each other's commits.
  const report = await options.validate({
    packageBytes: bytes,
    sidecar: request.sidecar,
    config: options.config,
    artifactUrl,
  });
  if (!report.passed || failedChecks(report).length > 0) {
    const failed = failedChecks(report);
    throw new SvcError(
      "invalid_payload",
      `validation failed; nothing was published: ${failed.map((c) => `${c.id}${c.reasonCode ? ` (${c.reasonCode})` : ""}`).join(", ") || "report not passed"}`,
      { details: report },
    );
  }
  const { files, ...checkedReport } = report;
  if (!files || files.length === 0) {
    throw new SvcError(
      "internal_error",
      "the validator reported no per-file hashes for a passed package; nothing was published",
    );
  }
  return locked(options, async () => {
    // Re-read under the lock: another publisher may have committed since validation. Every rule of a
    // publication (version uniqueness, status settling) needs only this mod's records.
    const modRecords = loadMod(options, key.modId);
    const taken = modRecords.find((r) => r.version === key.version);
    if (taken) {
      if (isSameRelease(taken, parsed, sha256)) return alreadyPublished(options, taken);
      throw versionExists(taken);
    }
    // What the sidecar leaves out of the page metadata comes from the last published version.
    const sidecar = completeSubmission(parsed, modRecords);
    const owned = loadOwnership(options.recordsDir, key.modId, schemaRegistry(options.config.baseUrl));
    const submitter = request.submitter;
    if (submitter && !maySubmit(owned, submitter.identity)) throw notAnOwner(key.modId, submitter.claimAs);
    // promote() refuses a taken key itself (artifact_exists), as late as possible.
    const artifact = await options.store.promote(key, bytes);
    let committed = false;
    try {
      if (artifact.sha256 !== sha256 || artifact.sizeBytes !== bytes.length) {
        throw new SvcError(
          "internal_error",
          `the stored artifact differs from the validated bytes (stored sha256 ${artifact.sha256}, ${artifact.sizeBytes} bytes)`,
        );
      }
      const at = now().toISOString();
      const record: ReleaseRecord = {
        schema: "svc.release-record.v1",
        modId: sidecar.modId,
        version: sidecar.version,
        name: sidecar.name,
        summary: sidecar.summary,
        description: sidecar.description ?? "",
        authors: sidecar.authors,
        tags: sidecar.tags ?? [],
        links: sidecar.links ?? {},
        ...(sidecar.license !== undefined ? { license: sidecar.license } : {}),
        targetGameBuild: sidecar.targetGameBuild,
        releaseNotes: sidecar.releaseNotes,
        fileName: key.fileName,
        packageUrl: artifact.url,
        sha256: artifact.sha256,
        packageSizeBytes: artifact.sizeBytes,
        dependencies: sidecar.dependencies,
        entrypoints: sidecar.entrypoints,
        ...(sidecar.modConfig !== undefined ? { modConfig: sidecar.modConfig } : {}),
        files,
        publishedAt: at,
        status: "published",
        source: {
          kind: request.source.kind,
          ...(request.source.submissionId ? { submissionId: request.source.submissionId } : {}),
          ...(request.source.pullRequestUrl ? { pullRequestUrl: request.source.pullRequestUrl } : {}),
          validationReportSha256: sha256Hex(Buffer.from(serializeDocument(checkedReport))),
        },
        updatedAt: at,
      };
      const registry = schemaRegistry(options.config.baseUrl);
      const valid = registry.validate("release-record", record);
      if (!valid.ok) throw new SvcError("invalid_payload", `release record: ${formatIssues(valid.issues)}`);
      const records = [...modRecords, record];
      const changed = settleStatuses(records, record.modId, at);
      const final = records.find((r) => r.modId === record.modId && r.version === record.version)!;
      const claimed = owned === null && submitter !== undefined;
      const plan: Plan = {
        modId: record.modId,
        modRecords: records,
        ownership: claimed
          ? claimOwnership({
              modId: record.modId,
              owner: submitter.claimAs,
              at,
              sourceRepository: submitter.sourceRepository ?? null,
              ...(request.source.submissionId ? { submissionId: request.source.submissionId } : {}),
            })
          : owned,
        claimed,
        touched: [final, ...changed.filter((r) => r !== final)],
        change: { version: record.version, kind: "publish", at },
      };
      const result = commitPlan(options, plan, artifact);
      committed = true;
      await artifact.finish();
      return {
        record: final,
        changed: changed.filter((r) => r !== final),
        artifact: { url: artifact.url, sha256: artifact.sha256, sizeBytes: artifact.sizeBytes },
        ...result,
        report,
      };
    } catch (error) {
      if (!committed) await artifact.abort();
      if (error instanceof FileExistsError) throw artifactExistsError(key, artifactUrl, error.path);
      throw error;
    }
  });
}

/**
 * The record of exactly this release (version, bytes and metadata) when it is in the catalog, else
 * null: what start-up reconciliation asks about a submission a crash left approved.
 */
export function findPublishedRelease(
  options: Pick<PublisherOptions, "recordsDir">,
  sidecar: ReleaseSubmission,
  sha256: string,
): ReleaseRecord | null {
  const record = findReleaseRecord(options.recordsDir, sidecar.modId, sidecar.version);
  return record && isSameRelease(record, sidecar, sha256) ? record : null;
}

/**
 * The record of a mod version (any status) when it is in the catalog, else null: what start-up
 * recovery reads to make a submission's row follow the committed catalog.
 */
export function findRelease(
  options: Pick<PublisherOptions, "recordsDir">,
  modId: string,
  version: string,
): ReleaseRecord | null {
  return findReleaseRecord(options.recordsDir, modId, version);
}

function notAnOwner(modId: string, who: Principal): SvcError {
  return new SvcError(
    "forbidden",
    `${describePrincipal(who)} is not an owner or collaborator of ${modId}: only they may publish its releases (an owner adds collaborators; an admin transfers a mod)`,
    { details: { modId } },
  );
}

/** The answer to a publication of a release that is already there (checked under the lock). */
async function alreadyPublished(
  options: PublisherOptions,
  record: ReleaseRecord,
): Promise<PublicationResult> {
  const key = { modId: record.modId, version: record.version, fileName: record.fileName };
  if (!(await options.store.exists(key, { sha256: record.sha256, sizeBytes: record.packageSizeBytes }))) {
    throw new SvcError(
      "internal_error",
      `${record.modId}@${record.version} has a release record but its artifact ${record.packageUrl} is missing or not the recorded bytes; svc check --hashes lists it`,
    );
  }
  return {
    record,
    changed: [],
    artifact: { url: record.packageUrl, sha256: record.sha256, sizeBytes: record.packageSizeBytes },
    written: [],
    deleted: [],
    report: null,
    alreadyPublished: true,
  };
}

async function changeVisibility(
  options: PublisherOptions,
  modId: string,
  version: string,
  hide: boolean,
): Promise<PublicationResult> {
  const now = options.now ?? (() => new Date());
  return locked(options, async () => {
    const modRecords = loadMod(options, modId);
    const current = modRecords.find((r) => r.version === version);
    if (!current) throw new SvcError("not_found", `no release ${modId}@${version}`);
    if (hide === (current.status === "hidden")) {
      throw new SvcError(
        "illegal_transition",
        `${modId}@${version} is ${current.status}; ${hide ? "hide" : "unhide"} does not apply`,
        { details: { from: current.status, to: hide ? "hidden" : "published" } },
      );
    }
    const at = now().toISOString();
    const records = [...modRecords];
    const index = records.indexOf(current);
    if (hide) {
      const { statusBeforeHidden: _, ...rest } = current;
      records[index] = {
        ...rest,
        status: "hidden",
        statusBeforeHidden: current.status as "published" | "superseded",
        updatedAt: at,
      };
    } else {
      const { statusBeforeHidden, ...rest } = current;
      records[index] = { ...rest, status: statusBeforeHidden ?? "published", updatedAt: at };
    }
    // Settled after a hide as after an unhide: hiding the newest version publishes the next one.
    const changed = settleStatuses(records, modId, at);
    const record = records.find((r) => r.modId === modId && r.version === version)!;
    const touched = [record, ...changed.filter((r) => r !== record)];
    const result = commitPlan(
      options,
      {
        modId,
        modRecords: records,
        ownership: loadOwnership(options.recordsDir, modId, schemaRegistry(options.config.baseUrl)),
        touched,
        change: { version, kind: hide ? "hide" : "unhide", at },
      },
      null,
    );
    return {
      record,
      changed: changed.filter((r) => r !== record),
      artifact: null,
      ...result,
      report: null,
    };
  });
}

/** Removes a version from the public catalog (published|superseded -> hidden); its artifact stays immutable. */
export function hideRelease(
  options: PublisherOptions,
  modId: string,
  version: string,
): Promise<PublicationResult> {
  return changeVisibility(options, modId, version, true);
}

/** Restores a hidden version: published, or superseded when a newer version is visible. */
export function unhideRelease(
  options: PublisherOptions,
  modId: string,
  version: string,
): Promise<PublicationResult> {
  return changeVisibility(options, modId, version, false);
}
