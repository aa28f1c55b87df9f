import { ANY_CHECK_REASONS, type AnyCheckReasonCode, blockedBy, type CheckReasons } from "../reasons.ts";
import type { CheckContext, CheckOutcome } from "../types.ts";
import { LAYOUT_CODES, type ZipFinding } from "../zip/reader.ts";

export function passed(id: string, log: string[] = []): CheckOutcome {
  return { id, status: "passed", reasonCode: null, log };
}

function failure(id: string, reasonCode: string, fix: string | undefined, log: string[]): CheckOutcome {
  return { id, status: "failed", reasonCode, log: fix ? [...log, `fix: ${fix}`] : log };
}

/** A failure any check may report (the runner's check_error and policy_invalid); the log ends with its fix. */
export function failed(id: string, reasonCode: AnyCheckReasonCode, log: string[]): CheckOutcome {
  return failure(id, reasonCode, ANY_CHECK_REASONS[reasonCode].fix, log);
}

/**
 * The failures of one check, with its own reason codes or those any check may report; each log
 * ends with how to fix it. A check binds them to its own reasons because checks/index.ts, which
 * joins every check's reasons, imports every check: a check cannot import the joined table.
 */
export function failuresOf<const R extends CheckReasons>(check: { id: string; reasons: R }) {
  const { id, reasons } = check;
  const fixFor = (code: string): string | undefined =>
    ((reasons as CheckReasons)[code] ?? (ANY_CHECK_REASONS as CheckReasons)[code])?.fix;
  return {
    /** A failure; the log ends with how to fix the first reason. */
    failed(reasonCode: (keyof R & string) | AnyCheckReasonCode, log: string[]): CheckOutcome {
      return failure(id, reasonCode, fixFor(reasonCode), log);
    },
    /**
     * Fail with the first finding's code, listing every finding (capped so a hostile archive cannot
     * flood the log). The findings are the check's own: each caller keeps only the codes it reports.
     */
    failedWithFindings(findings: readonly ZipFinding<string>[], limit = 50): CheckOutcome {
      const first = findings[0]!;
      const lines = findings.slice(0, limit).map((f) => `${f.code}: ${f.message}`);
      if (findings.length > limit) lines.push(`... and ${findings.length - limit} more`);
      const codes = [...new Set(findings.map((f) => f.code))];
      const fixes = codes.slice(0, 8).flatMap((code) => {
        const fix = fixFor(code);
        return fix ? [`fix (${code}): ${fix}`] : [];
      });
      return { id, status: "failed", reasonCode: first.code, log: [...lines, ...fixes] };
    },
  };
}

/** A check that could not run because an earlier one failed: a failure, never a pass. */
export function blocked(id: string, by: string, why: string): CheckOutcome {
  return {
    id,
    status: "failed",
    reasonCode: blockedBy(by),
    log: [`not run: ${why}`, `fix: make ${by} pass first; this check then runs on the next validation.`],
  };
}

/** The check that reports a reason code. */
export function ownerOf(ctx: CheckContext, code: string): string {
  return ctx.reasons[code]?.check ?? "file_signature";
}

/** Why the package's structure is not available (bytes unreadable, not a ZIP, broken end record), or null. */
export function structureBlocker(ctx: CheckContext): { check: string; why: string } | null {
  const pkg = ctx.pkg;
  if (pkg.unreadable) return { check: ownerOf(ctx, pkg.unreadable.code), why: pkg.unreadable.message };
  if (!pkg.structure) return { check: "file_signature", why: "the package was not read" };
  if (pkg.structure.entries.length === 0 && pkg.structure.findings.length > 0) {
    const f = pkg.structure.findings[0]!;
    return { check: ownerOf(ctx, f.code), why: `the ZIP structure could not be read (${f.code})` };
  }
  return null;
}

/** Why entry contents were not inspected (structure or inflate problems), or null. */
export function contentBlocker(ctx: CheckContext): { check: string; why: string } | null {
  const s = structureBlocker(ctx);
  if (s) return s;
  const pkg = ctx.pkg;
  if (pkg.contentInspected) return null;
  const f = pkg.structure?.findings.find((x) => isLayoutProblem(x.code)) ?? pkg.inflateFindings[0];
  if (f) return { check: ownerOf(ctx, f.code), why: `entry contents were not inspected (${f.code})` };
  return { check: "file_signature", why: "entry contents were not inspected" };
}

function isLayoutProblem(code: string): boolean {
  return (LAYOUT_CODES as ReadonlySet<string>).has(code);
}

/** The first of `ids` that did not pass, for checks that build on earlier ones. */
export function firstNotPassed(ctx: CheckContext, ids: string[]): string | null {
  for (const id of ids) {
    const r = ctx.results.get(id);
    if (r?.status !== "passed") return id;
  }
  return null;
}

/** Lower-case extension including the dot ('' when none) of the last path segment. */
export function extensionOf(path: string): string {
  // A dot that opens the last segment (".hidden") starts no extension.
  const dot = path.lastIndexOf(".");
  return dot > path.lastIndexOf("/") + 1 ? path.slice(dot).toLowerCase() : "";
}

export function isUnderDirectory(path: string, directory: string): boolean {
  return path.startsWith(`${directory}/`);
}

/** Canonical JSON for comparing two declarations regardless of key order. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`;
  }
  return JSON.stringify(value);
}
