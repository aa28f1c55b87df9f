import type { Stats } from "node:fs";
import type { CatalogDocument } from "../contracts/catalog.ts";
import type { CheckDefinition } from "../contracts/checks.ts";
import type { ValidationContract } from "../contracts/validation-contract.ts";
import type { Dependency, Entrypoint } from "../contracts/records.ts";
import type { AntivirusScanner, ScanResult } from "./antivirus/scanner.ts";
import type { InflateWorker } from "./inflate-pool.ts";
import type { CheckReasons, ReasonTable } from "./reasons.ts";
import type { FileKind } from "./zip/sniff.ts";
import type { ByteSource, ZipEntry, ZipFinding, ZipStructure } from "./zip/reader.ts";

export interface ValidationProgress {
  phase: "hashing" | "inspecting" | "scanning";
  doneBytes: number;
  totalBytes: number;
}

/**
 * A package path already opened and read whole, with its inflate worker started (early-package.ts
 * openEarly: `svc validate` does so before it loads the checks).
 */
export interface EarlyPackage {
  readonly fd: number;
  /** The file's status when it was opened: validation fails if it changes before the end. */
  readonly before: Stats;
  /** Every byte, in memory the worker shares. */
  readonly bytes: Buffer;
  readonly worker: InflateWorker | null;
  /**
   * The antivirus scan of the whole package, begun at once (scan-queue.ts beginPackageScan) when
   * a scanner that takes streams was given; the runner takes it over.
   */
  readonly scan: {
    packageScan: Promise<ScanResult>;
    alertsOnLimits: Promise<boolean>;
    uploaded: Promise<void>;
  } | null;
  /** Closes the file and ends the worker; safe to call more than once. */
  close(): void;
}

export interface ValidationInput {
  /**
   * The package: a path (opened once and read with positional reads), the bytes themselves, or
   * any random-access source (what a test uses to watch every read).
   */
  package: { path: string; early?: EarlyPackage } | { bytes: Uint8Array } | { source: ByteSource };
  /** The untrusted sidecar as parsed JSON; undefined when none was supplied. */
  sidecar: unknown;
  /** Set when the caller could not parse the sidecar (invalid JSON, duplicate keys, ...). */
  sidecarParseError?: string;
  /** The framework validation contract (game-publishing-validation.v1.json). */
  policy: ValidationContract;
  /** The current catalog; null when unavailable (catalog-aware checks then fail closed). */
  catalog: CatalogDocument | null;
  /** The game-build compatibility matrix; null when unavailable. */
  gameBuilds: GameBuildsDocument | null;
  /** null: no scanner available, antivirus_scan fails closed. */
  scanner: AntivirusScanner | null;
  /** --no-antivirus: the scan is skipped and antivirus_scan fails (never passes). */
  antivirusDisabled?: boolean;
  onProgress?: (progress: ValidationProgress) => void;
  /**
   * Told how long each step took, in order, as it ends: hashing the package, reading its ZIP
   * structure, the names, inspecting the entries, and each check (`svc validate --timings`).
   */
  onStepTimed?: (step: string, milliseconds: number) => void;
  clock?: () => Date;
  /** Concurrent scanner requests (clamd); default 4. */
  scanConcurrency?: number;
  /**
   * Whether a worker thread inflates, verifies and hashes a share of the entries (inflate-pool.ts):
   * "auto" (default) for an in-memory package of many entries, "never", "always", or
   * "worker_only", where the main thread leaves every entry to the worker (tests prove each path
   * gives the same outcome).
   */
  inflateWorker?: "auto" | "never" | "always" | "worker_only";
}

export type CheckStatus = "passed" | "failed" | "skipped";

/** What one check function returns. */
export interface CheckOutcome {
  id: string;
  status: CheckStatus;
  reasonCode: string | null;
  /** Lines a person reads: what failed, where, and how to fix it. */
  log: string[];
}

/** One check in a report: the outcome plus whether the policy requires it. */
export interface CheckResult extends CheckOutcome {
  required: boolean;
}

export interface ValidationReport {
  schema: "svc.validation-report.v1";
  modId: string | null;
  version: string | null;
  packageSha256: string | null;
  packageSizeBytes: number | null;
  passed: boolean;
  checks: CheckResult[];
  startedAt: string;
  finishedAt: string;
}

export interface ModConfigSetting {
  key: string;
  label: string;
  description?: string;
  type: "select" | "boolean";
  default: string | number | boolean;
  options?: Array<{ value: string | number | boolean; label: string }>;
}

export interface ModConfig {
  file: string;
  settings: ModConfigSetting[];
}

/** The sidecar once it matched svc.mod-release-submission.v1. */
export interface Sidecar {
  schema: "svc.mod-release-submission.v1";
  modId: string;
  name: string;
  version: string;
  targetGameBuild: string;
  summary: string;
  description?: string;
  releaseNotes: string;
  package: { fileName: string; sha256: string; sizeBytes: number; url?: string };
  dependencies: Dependency[];
  entrypoints: Entrypoint[];
  modConfig?: ModConfig;
  /** Required for a mod's first release; left out, later versions take the last published one's. */
  authors?: Array<{ name: string; github?: string; url?: string }>;
  tags?: string[];
  links?: { homepage?: string; source?: string; issues?: string };
  license?: string;
}

/**
 * A valid sidecar with what it leaves out carried forward from the mod's last published version
 * (contracts/carry-forward.ts): what the checks judge and the publisher records. authors is empty
 * only for a first release that names none (detail_page then fails).
 */
export type CompleteSidecar = Sidecar & { authors: NonNullable<Sidecar["authors"]> };

/** svc-mod.json once it matched svc.mod-manifest.v1. */
export interface Manifest {
  schema: "svc.mod-manifest.v1";
  id: string;
  name: string;
  version: string;
  targetGameBuild: string;
  dependencies: Dependency[];
  entrypoints: Entrypoint[];
  modConfig?: ModConfig;
}

export interface GameBuildsDocument {
  schema: string;
  supportedGameBuilds: string[];
  builds?: Array<{ buildId: string; validationStatus?: string; label?: string }>;
}

export interface InspectedEntry {
  entry: ZipEntry;
  /** Content type by signature; null when the entry was not inflated. */
  kind: FileKind | null;
}

export interface ScanVerdict {
  target: string;
  result: ScanResult;
}

/**
 * One file a package installs: its path below the mod's folder (the entry name, which is where
 * the manager writes it), and the size and sha256 of its inflated bytes, hashed while the runner
 * inflated the entry for its checks (no second read of the package).
 */
export interface PackageFile {
  path: string;
  sizeBytes: number;
  sha256: string;
}

/** A file as the runner read it, with the content signature it detected (what a moderator reviews). */
export interface InventoryFile extends PackageFile {
  signature: FileKind;
}

/**
 * Every file entry that inflated, in archive order, with its detected signature; complete when
 * every entry inflated and verified. Kept with a submission's checks for the review page, also
 * for a package that failed (a partial list then).
 */
export interface PackageInventory {
  complete: boolean;
  files: InventoryFile[];
}

/** A report plus the package's files, for callers that publish (the publisher stores the list). */
export interface ValidationOutcome {
  report: ValidationReport;
  /** Every file entry, in archive order; null unless every entry inflated and verified. */
  files: PackageFile[] | null;
  /** What the entries held, signatures included; null when the package could not be read as a ZIP. */
  inventory: PackageInventory | null;
}

/** Everything the runner learned from the package bytes; the checks only read it. */
export interface PackageAnalysis {
  sizeBytes: number | null;
  sha256: string | null;
  /** Why the bytes could not be read at all (too large, unreadable); null when they were read. */
  unreadable: { code: string; message: string } | null;
  structure: ZipStructure | null;
  nameFindings: ZipFinding[];
  entries: InspectedEntry[];
  /** True once every file entry was inflated and its size and CRC verified. */
  contentInspected: boolean;
  /** Problems met while inflating (CRC, sizes, corrupt data). */
  inflateFindings: ZipFinding[];
  /** Bytes of files the checks read: the manifest and modConfig files. */
  files: Map<string, Buffer>;
  /**
   * Each file entry that inflated, with its size and sha256; complete when contentInspected.
   * Optional: analyses made outside the runner (svc pack, svc new) have no use for it.
   */
  installFiles?: PackageFile[];
  /** installFiles with each one's detected signature (optional for the same reason). */
  inventory?: InventoryFile[];
  /** The package's own signature (zip, 7z, pe, ...); null when unreadable. */
  packageKind: FileKind | null;
  /** What the antivirus did: ran (with verdicts), or why it did not. */
  scan:
    | {
        state: "ran";
        scanner: string;
        verdicts: ScanVerdict[];
        complete: boolean;
        /**
         * each: every entry was also scanned on its own; package: the package scan stands for the
         * entries (the scanner looks inside archives and was seen to alert on its limits).
         */
        entryCoverage?: "each" | "package";
      }
    | { state: "not_configured" | "disabled" | "not_run" };
}

export interface SidecarState {
  /** The raw, untrusted value; undefined when none was supplied. */
  raw: unknown;
  /** Set when the sidecar could not even be parsed (invalid JSON). */
  parseError?: string;
  /** The sidecar once it matched its schema, with authors and tags carried from the catalog's entry of the mod. */
  valid: CompleteSidecar | null;
}

export interface ManifestState {
  valid: Manifest | null;
}

/** The inputs every check function is given. Pure data: no IO happens inside a check. */
export interface CheckContext {
  policy: ValidationContract;
  sidecar: SidecarState;
  manifest: ManifestState;
  catalog: CatalogDocument | null;
  gameBuilds: GameBuildsDocument | null;
  pkg: PackageAnalysis;
  /** Base URL of the schema registry to use (the catalog's), so schemas compile once per process. */
  schemaBaseUrl: string;
  /** The injected clock's reading when the run started (ISO 8601). */
  now: string;
  /** Results of the checks that already ran, for blocking. */
  results: ReadonlyMap<string, CheckOutcome>;
  /**
   * The joined reason table (checks/index.ts): which check reports a code, so that a check blocked
   * by a package problem names the check that reports it.
   */
  reasons: ReasonTable;
}

export type CheckFunction = (ctx: CheckContext) => CheckOutcome;

/**
 * What `svc pack` runs a package check on before it writes anything: "file_list" the planned file
 * list (and then the built ZIP as well), "built_zip" only the built ZIP's bytes, null never (the
 * check needs the sidecar, the catalog, the game builds or the scanner, which pack has not).
 */
export type PackStage = "file_list" | "built_zip" | null;

/** A check over one package, as it describes itself (checks/index.ts lists every check). */
export interface PackageCheck extends CheckDefinition {
  scope: "package";
  pack: PackStage;
  /** Every reason code the check reports, with what it means and how to fix it. */
  reasons: CheckReasons;
  run: CheckFunction;
}

/** A check over the deployment (readiness.json, the post-publish smoke report), not over one package. */
export interface WorkflowCheck extends CheckDefinition {
  scope: "workflow";
  reasons: CheckReasons;
  run: (document: unknown) => CheckOutcome;
}

export type CheckDescriptor = PackageCheck | WorkflowCheck;
