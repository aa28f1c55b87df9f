/**
 * What a release changes against the mod's last published version: files added, removed and
 * changed (by path and sha256), native binaries called out, the size change, manifest changes
 * (entry points, dependencies, config options) and a short risk summary derived from them. Pure:
 * the caller supplies both sides and the validation policy's rules for what is native. The review
 * page and upload_status show it; renderReleaseDiffMarkdown is the same diff for a pull request
 * comment (the bot's status comment can call it as it stands).
 */
import type { Dependency, Entrypoint, ReleaseRecord } from "./records.ts";
import { formatBytes } from "../lib/format-bytes.ts";

/** One file of a package, as the validator measured it; the signature only where it was sniffed. */
export interface DiffFile {
  path: string;
  sizeBytes: number;
  sha256: string;
  /** The content signature the validator detected (pe, png, text, ...); records do not keep it. */
  signature?: string | null;
}

interface ConfigOption {
  key: string;
  type?: string;
  default?: unknown;
  options?: unknown;
  label?: string;
}

/** One side of the comparison: the submission, or the published version it is compared with. */
export interface ReleaseSide {
  version: string;
  packageSizeBytes: number;
  /** null when the list is unknown: a record published before per-file hashes were kept. */
  files: readonly DiffFile[] | null;
  entrypoints: readonly Entrypoint[];
  dependencies: readonly Dependency[];
  modConfig?: { file?: string; settings?: readonly ConfigOption[] } | null;
}

/**
 * The version a release is compared with: the mod's last published version (published or
 * superseded, newest publication; a hidden one is not offered to players) other than `version`.
 */
export function lastPublishedRecord(
  records: readonly ReleaseRecord[],
  version: string,
): ReleaseRecord | null {
  const visible = records.filter(
    (r) => r.version !== version && (r.status === "published" || r.status === "superseded"),
  );
  return (
    visible.sort((a, b) => (a.publishedAt < b.publishedAt ? 1 : a.publishedAt > b.publishedAt ? -1 : 0))[0] ??
    null
  );
}

/** A release record as the baseline side of a diff. */
export function recordSide(record: ReleaseRecord): ReleaseSide {
  return {
    version: record.version,
    packageSizeBytes: record.packageSizeBytes,
    files: record.files ?? null,
    entrypoints: record.entrypoints,
    dependencies: record.dependencies,
    modConfig: (record.modConfig ?? null) as ReleaseSide["modConfig"],
  };
}

/** What the validation contract says is native (content.nativeBinaryExtensions and friends). */
export interface NativeRules {
  nativeBinaryExtensions: readonly string[];
  nativeBinaryDirectory: string;
  scriptExtensions: readonly string[];
}

export interface DiffEntry {
  path: string;
  sizeBytes: number;
  sha256: string;
  signature: string | null;
  /** A native binary by extension or by content signature (PE, ELF, Mach-O). */
  native: boolean;
}

export interface ChangedEntry extends DiffEntry {
  before: { sizeBytes: number; sha256: string };
}

export type RiskCode =
  | "adds_native_binary"
  | "changes_native_binary"
  | "native_binary_outside_directory"
  | "adds_native_entrypoint"
  | "removes_every_previous_file"
  | "adds_script"
  | "changes_script"
  | "package_size_jump"
  | "adds_dependency"
  | "changes_config_options"
  | "removes_native_binary"
  | "first_release"
  | "baseline_files_unknown"
  | "no_file_changes";

export interface Risk {
  code: RiskCode;
  /** high: a moderator should look at the named files before approving; notice: worth a glance; info: context. */
  severity: "high" | "notice" | "info";
  message: string;
  paths?: string[];
}

export interface ReleaseDiff {
  version: string;
  /** The version compared with; null for a first release (nothing of the mod is published). */
  baseline: { version: string; packageSizeBytes: number; fileCount: number | null } | null;
  firstRelease: boolean;
  /**
   * By path, sorted. A first release lists every file as added. null when the baseline's list is
   * unknown (then only the size and the manifest are compared).
   */
  files: { added: DiffEntry[]; removed: DiffEntry[]; changed: ChangedEntry[]; unchangedCount: number } | null;
  /** Paths of native binaries among the added, changed and removed files. */
  nativeBinaries: { added: string[]; changed: string[]; removed: string[] };
  size: {
    packageBytes: { before: number | null; after: number; delta: number | null };
    installedBytes: { before: number | null; after: number; delta: number | null };
  };
  manifest: {
    entrypoints: { added: Entrypoint[]; removed: Entrypoint[] };
    dependencies: {
      added: Dependency[];
      removed: Dependency[];
      changed: Array<{ modId: string; before: Dependency; after: Dependency }>;
    };
    configOptions: { added: string[]; removed: string[]; changed: string[] };
    configFile: { before: string | null; after: string | null } | null;
  };
  /** Highest severity first; each names what it is about. */
  risks: Risk[];
}

const NATIVE_SIGNATURES = new Set(["pe", "elf", "macho"]);

/** A package that grows past this many times its size, by at least 1 MiB, is called out. */
const SIZE_JUMP_FACTOR = 2;
const SIZE_JUMP_MIN_BYTES = 1024 * 1024;

function extensionOf(path: string): string {
  const name = path.slice(path.lastIndexOf("/") + 1);
  const dot = name.lastIndexOf(".");
  return dot <= 0 ? "" : name.slice(dot).toLowerCase();
}

/** A native binary by the policy's extensions or by its content signature (PE, ELF, Mach-O). */
export function isNativeFile(file: Pick<DiffFile, "path" | "signature">, rules: NativeRules): boolean {
  const native = rules.nativeBinaryExtensions.some((ext) => ext.toLowerCase() === extensionOf(file.path));
  return native || NATIVE_SIGNATURES.has(file.signature ?? "");
}

function isScript(path: string, rules: NativeRules): boolean {
  return rules.scriptExtensions.some((ext) => ext.toLowerCase() === extensionOf(path));
}

function entry(file: DiffFile, rules: NativeRules): DiffEntry {
  return {
    path: file.path,
    sizeBytes: file.sizeBytes,
    sha256: file.sha256,
    signature: file.signature ?? null,
    native: isNativeFile(file, rules),
  };
}

const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);

function compareFiles(current: readonly DiffFile[], baseline: readonly DiffFile[], rules: NativeRules) {
  const before = new Map(baseline.map((f) => [f.path, f]));
  const after = new Map(current.map((f) => [f.path, f]));
  const added: DiffEntry[] = [];
  const changed: ChangedEntry[] = [];
  let unchangedCount = 0;
  for (const file of after.values()) {
    const old = before.get(file.path);
    if (!old) added.push(entry(file, rules));
    else if (old.sha256 !== file.sha256 || old.sizeBytes !== file.sizeBytes)
      changed.push({ ...entry(file, rules), before: { sizeBytes: old.sizeBytes, sha256: old.sha256 } });
    else unchangedCount++;
  }
  const removed = [...before.values()].filter((f) => !after.has(f.path)).map((f) => entry(f, rules));
  return {
    added: added.sort(byPath),
    removed: removed.sort(byPath),
    changed: changed.sort(byPath),
    unchangedCount,
  };
}

const entrypointKey = (e: Entrypoint) => `${e.kind}:${e.path}`;

function compareManifest(current: ReleaseSide, baseline: ReleaseSide | null): ReleaseDiff["manifest"] {
  const oldEntrypoints = new Set((baseline?.entrypoints ?? []).map(entrypointKey));
  const newEntrypoints = new Set(current.entrypoints.map(entrypointKey));
  const oldDeps = new Map((baseline?.dependencies ?? []).map((d) => [d.modId, d]));
  const newDeps = new Map(current.dependencies.map((d) => [d.modId, d]));
  const oldOptions = new Map((baseline?.modConfig?.settings ?? []).map((s) => [s.key, s]));
  const newOptions = new Map((current.modConfig?.settings ?? []).map((s) => [s.key, s]));
  const sameOption = (a: ConfigOption, b: ConfigOption) =>
    JSON.stringify([a.type, a.default, a.options]) === JSON.stringify([b.type, b.default, b.options]);
  const configBefore = baseline?.modConfig?.file ?? null;
  const configAfter = current.modConfig?.file ?? null;
  return {
    entrypoints: {
      added: current.entrypoints.filter((e) => !oldEntrypoints.has(entrypointKey(e))),
      removed: (baseline?.entrypoints ?? []).filter((e) => !newEntrypoints.has(entrypointKey(e))),
    },
    dependencies: {
      added: current.dependencies.filter((d) => !oldDeps.has(d.modId)),
      removed: (baseline?.dependencies ?? []).filter((d) => !newDeps.has(d.modId)),
      changed: current.dependencies.flatMap((after) => {
        const before = oldDeps.get(after.modId);
        return before &&
          (before.versionRange !== after.versionRange || Boolean(before.optional) !== Boolean(after.optional))
          ? [{ modId: after.modId, before, after }]
          : [];
      }),
    },
    configOptions: {
      added: [...newOptions.keys()].filter((k) => !oldOptions.has(k)).sort(),
      removed: [...oldOptions.keys()].filter((k) => !newOptions.has(k)).sort(),
      changed: [...newOptions]
        .filter(([k, option]) => oldOptions.has(k) && !sameOption(oldOptions.get(k)!, option))
        .map(([k]) => k)
        .sort(),
    },
    configFile: configBefore === configAfter ? null : { before: configBefore, after: configAfter },
  };
}

/** "a native DLL", "2 native binaries": what a person reads for a set of native files. */
function nativeNoun(paths: readonly string[]): string {
  if (paths.length !== 1) return `${paths.length} native binaries`;
  const ext = extensionOf(paths[0]!);
  return ext === ".dll" ? "a native DLL" : ext === ".exe" ? "a native executable" : "a native binary";
}

function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

function sum(files: readonly DiffFile[] | null): number | null {
  return files === null ? null : files.reduce((total, f) => total + f.sizeBytes, 0);
}

function deriveRisks(diff: Omit<ReleaseDiff, "risks">, current: ReleaseSide, rules: NativeRules): Risk[] {
  const risks: Risk[] = [];
  const listed = (paths: string[]) => paths.join(", ");
  const { nativeBinaries, files, manifest, size } = diff;
  if (nativeBinaries.added.length > 0)
    risks.push({
      code: "adds_native_binary",
      severity: "high",
      message: `adds ${nativeNoun(nativeBinaries.added)}: ${listed(nativeBinaries.added)}`,
      paths: nativeBinaries.added,
    });
  if (nativeBinaries.changed.length > 0)
    risks.push({
      code: "changes_native_binary",
      severity: "high",
      message: `changes ${nativeNoun(nativeBinaries.changed)}: ${listed(nativeBinaries.changed)}`,
      paths: nativeBinaries.changed,
    });
  const directory = `${rules.nativeBinaryDirectory.replace(/\/+$/, "")}/`.toLowerCase();
  const outside = (current.files ?? [])
    .filter((f) => isNativeFile(f, rules) && !f.path.toLowerCase().startsWith(directory))
    .map((f) => f.path)
    .sort();
  if (outside.length > 0)
    risks.push({
      code: "native_binary_outside_directory",
      severity: "high",
      message: `has ${nativeNoun(outside)} outside ${rules.nativeBinaryDirectory}: ${listed(outside)}`,
      paths: outside,
    });
  const nativeEntrypoints = manifest.entrypoints.added.filter((e) => e.kind === "native").map((e) => e.path);
  if (nativeEntrypoints.length > 0)
    risks.push({
      code: "adds_native_entrypoint",
      severity: "high",
      message: `adds a native entry point: ${listed(nativeEntrypoints)}`,
      paths: nativeEntrypoints,
    });
  if (
    files &&
    !diff.firstRelease &&
    files.removed.length > 0 &&
    files.removed.length === diff.baseline?.fileCount
  )
    risks.push({
      code: "removes_every_previous_file",
      severity: "notice",
      message: `removes every previous file (${plural(files.removed.length, "file")} of ${diff.baseline.version}): the package is replaced, not updated`,
    });
  const addedScripts = (files?.added ?? []).filter((f) => isScript(f.path, rules)).map((f) => f.path);
  if (addedScripts.length > 0)
    risks.push({
      code: "adds_script",
      severity: "notice",
      message: `adds ${plural(addedScripts.length, "script")}: ${listed(addedScripts)}`,
      paths: addedScripts,
    });
  const changedScripts = (files?.changed ?? []).filter((f) => isScript(f.path, rules)).map((f) => f.path);
  if (changedScripts.length > 0)
    risks.push({
      code: "changes_script",
      severity: "notice",
      message: `changes ${plural(changedScripts.length, "script")}: ${listed(changedScripts)}`,
      paths: changedScripts,
    });
  const before = size.packageBytes.before;
  if (
    before !== null &&
    size.packageBytes.after > before * SIZE_JUMP_FACTOR &&
    size.packageBytes.after - before >= SIZE_JUMP_MIN_BYTES
  )
    risks.push({
      code: "package_size_jump",
      severity: "notice",
      message: `the package grows from ${formatBytes(before)} to ${formatBytes(size.packageBytes.after)}`,
    });
  if (nativeBinaries.removed.length > 0)
    risks.push({
      code: "removes_native_binary",
      severity: "info",
      message: `removes ${nativeNoun(nativeBinaries.removed)}: ${listed(nativeBinaries.removed)}`,
      paths: nativeBinaries.removed,
    });
  const dependencies = manifest.dependencies.added.map((d) => `${d.modId} ${d.versionRange}`);
  if (dependencies.length > 0)
    risks.push({
      code: "adds_dependency",
      severity: "info",
      message: `adds ${plural(dependencies.length, "dependency", "dependencies")}: ${listed(dependencies)}`,
    });
  const options = manifest.configOptions;
  const optionChanges = [
    options.added.length > 0 ? `adds ${listed(options.added)}` : null,
    options.changed.length > 0 ? `changes ${listed(options.changed)}` : null,
    options.removed.length > 0 ? `removes ${listed(options.removed)}` : null,
  ].filter((part): part is string => part !== null);
  if (optionChanges.length > 0 && !diff.firstRelease)
    risks.push({
      code: "changes_config_options",
      severity: "info",
      message: `config options: ${optionChanges.join("; ")}`,
    });
  if (diff.firstRelease)
    risks.push({
      code: "first_release",
      severity: "info",
      message: `first release of this mod: ${plural(files?.added.length ?? 0, "file")}, ${formatBytes(size.installedBytes.after)} installed`,
    });
  else if (files === null)
    risks.push({
      code: "baseline_files_unknown",
      severity: "info",
      message: `${diff.baseline?.version} was published before per-file hashes were kept: only the size and the manifest are compared`,
    });
  else if (files.added.length + files.removed.length + files.changed.length === 0)
    risks.push({
      code: "no_file_changes",
      severity: "info",
      message: `no file changes: the same ${plural(files.unchangedCount, "file")} as ${diff.baseline?.version}`,
    });
  const rank = { high: 0, notice: 1, info: 2 } as const;
  return risks.sort((a, b) => rank[a.severity] - rank[b.severity]);
}

/**
 * The diff of a release (its files as the validator measured them) against the mod's last
 * published version, or against nothing for a first release (every file then counts as added).
 */
export function computeReleaseDiff(
  current: ReleaseSide & { files: readonly DiffFile[] },
  baseline: ReleaseSide | null,
  rules: NativeRules,
): ReleaseDiff {
  const files =
    baseline === null
      ? { ...compareFiles(current.files, [], rules) }
      : baseline.files === null
        ? null
        : compareFiles(current.files, baseline.files, rules);
  const natives = (list: DiffEntry[] | undefined) => (list ?? []).filter((f) => f.native).map((f) => f.path);
  const installedBefore = baseline === null ? null : sum(baseline.files);
  const installedAfter = sum(current.files)!;
  const diff: Omit<ReleaseDiff, "risks"> = {
    version: current.version,
    baseline:
      baseline === null
        ? null
        : {
            version: baseline.version,
            packageSizeBytes: baseline.packageSizeBytes,
            fileCount: baseline.files?.length ?? null,
          },
    firstRelease: baseline === null,
    files,
    nativeBinaries: {
      added: natives(files?.added),
      changed: natives(files?.changed),
      removed: natives(files?.removed),
    },
    size: {
      packageBytes: {
        before: baseline?.packageSizeBytes ?? null,
        after: current.packageSizeBytes,
        delta: baseline === null ? null : current.packageSizeBytes - baseline.packageSizeBytes,
      },
      installedBytes: {
        before: installedBefore,
        after: installedAfter,
        delta: installedBefore === null ? null : installedAfter - installedBefore,
      },
    },
    manifest: compareManifest(current, baseline),
  };
  return { ...diff, risks: deriveRisks(diff, current, rules) };
}

function signed(bytes: number): string {
  return bytes > 0 ? `+${formatBytes(bytes)}` : bytes === 0 ? "no change" : formatBytes(bytes);
}

/**
 * Untrusted text as a Markdown code span: no mention, link, emphasis or HTML can render from it,
 * and a table cell cannot be split by it (GFM reads `|` as a cell border even inside code).
 */
function code(text: string): string {
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g, "?").replace(/\|/g, "\\|");
  const longest = Math.max(0, ...[...clean.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = "`".repeat(longest + 1);
  const pad = clean.startsWith("`") || clean.endsWith("`") ? " " : "";
  return `${fence}${pad}${clean}${pad}${fence}`;
}

const SEVERITY_WORDS = { high: "**Look closely:**", notice: "**Notice:**", info: "" } as const;

function riskLine(risk: Risk, maxPaths: number): string {
  // The risk messages name paths, which are untrusted: they are written again from the paths, as code.
  const paths = risk.paths ?? [];
  const listed = `: ${paths.join(", ")}`;
  const named = paths.length > 0 && risk.message.endsWith(listed);
  const message = named ? risk.message.slice(0, -listed.length) : risk.message;
  const more = paths.length > maxPaths ? ` and ${paths.length - maxPaths} more` : "";
  const suffix = named ? `: ${paths.slice(0, maxPaths).map(code).join(", ")}${more}` : "";
  const prefix = SEVERITY_WORDS[risk.severity];
  return `- ${prefix ? `${prefix} ` : ""}${escapeText(message)}${suffix}`;
}

/** Text that may hold a mod id or version (already restricted by their schemas) as plain Markdown. */
function escapeText(text: string): string {
  return text.replace(/[\\`*_~[\]<>|@#]/g, (c) => `\\${c}`);
}

/**
 * The diff as GitHub-flavoured Markdown for the bot's status comment: the risk summary (each risk
 * names at most maxPaths paths; the rest are counted), then a table of changed files (at most
 * maxFiles rows; the rest are counted), the size change and the manifest changes. Every path is a
 * code span, so nothing in a package's names renders as markup.
 */
export function renderReleaseDiffMarkdown(
  diff: ReleaseDiff,
  options: { maxFiles?: number; maxPaths?: number } = {},
): string {
  const maxFiles = options.maxFiles ?? 50;
  const maxPaths = options.maxPaths ?? 20;
  const lines: string[] = [];
  lines.push(
    diff.firstRelease
      ? `### First release: ${escapeText(diff.version)}`
      : `### Changes in ${escapeText(diff.version)} since ${escapeText(diff.baseline!.version)}`,
    "",
  );
  for (const risk of diff.risks) lines.push(riskLine(risk, maxPaths));
  if (diff.risks.length > 0) lines.push("");
  const rows: string[] = [];
  const files = diff.files;
  if (files) {
    const native = (f: DiffEntry) => (f.native ? " (native)" : "");
    for (const f of files.added)
      rows.push(
        `| ${diff.firstRelease ? "file" : "added"} | ${code(f.path)}${native(f)} | ${formatBytes(f.sizeBytes)} |`,
      );
    for (const f of files.changed)
      rows.push(
        `| changed | ${code(f.path)}${native(f)} | ${formatBytes(f.before.sizeBytes)} → ${formatBytes(f.sizeBytes)} |`,
      );
    for (const f of files.removed)
      rows.push(`| removed | ${code(f.path)}${native(f)} | ${formatBytes(f.sizeBytes)} |`);
  }
  if (rows.length > 0) {
    lines.push("| change | file | size |", "|---|---|---|", ...rows.slice(0, maxFiles));
    if (rows.length > maxFiles) lines.push(`| … | ${rows.length - maxFiles} more | |`);
    lines.push("");
  }
  const pkg = diff.size.packageBytes;
  const unchanged = files && !diff.firstRelease ? ` ${plural(files.unchangedCount, "file")} unchanged.` : "";
  lines.push(
    pkg.before === null || pkg.delta === null
      ? `Package: ${formatBytes(pkg.after)}.${unchanged}`
      : `Package: ${formatBytes(pkg.before)} → ${formatBytes(pkg.after)} (${signed(pkg.delta)}).${unchanged}`,
  );
  const manifest = manifestLines(diff);
  if (manifest.length > 0) lines.push("", "Manifest:", ...manifest);
  return `${lines.join("\n")}\n`;
}

function manifestLines(diff: ReleaseDiff): string[] {
  if (diff.firstRelease) return [];
  const m = diff.manifest;
  const lines: string[] = [];
  const entry = (e: Entrypoint) => `${code(e.path)} (${e.kind})`;
  const range = (d: Dependency) => `${code(d.versionRange)}${d.optional ? " (optional)" : ""}`;
  const dep = (d: Dependency) => `${code(d.modId)} ${range(d)}`;
  if (m.entrypoints.added.length > 0)
    lines.push(`- entry points added: ${m.entrypoints.added.map(entry).join(", ")}`);
  if (m.entrypoints.removed.length > 0)
    lines.push(`- entry points removed: ${m.entrypoints.removed.map(entry).join(", ")}`);
  if (m.dependencies.added.length > 0)
    lines.push(`- dependencies added: ${m.dependencies.added.map(dep).join(", ")}`);
  if (m.dependencies.removed.length > 0)
    lines.push(`- dependencies removed: ${m.dependencies.removed.map(dep).join(", ")}`);
  for (const c of m.dependencies.changed)
    lines.push(`- dependency ${code(c.modId)}: ${range(c.before)} → ${range(c.after)}`);
  const options = m.configOptions;
  if (options.added.length > 0) lines.push(`- config options added: ${options.added.map(code).join(", ")}`);
  if (options.changed.length > 0)
    lines.push(`- config options changed: ${options.changed.map(code).join(", ")}`);
  if (options.removed.length > 0)
    lines.push(`- config options removed: ${options.removed.map(code).join(", ")}`);
  if (m.configFile)
    lines.push(
      `- config file: ${m.configFile.before ? code(m.configFile.before) : "none"} → ${m.configFile.after ? code(m.configFile.after) : "none"}`,
    );
  return lines;
}
