import Table from "cli-table3";
import type { ValidationReport } from "./types.ts";

export interface RenderOptions {
  /** Terminal width; the table wraps to it. */
  columns?: number;
  /** Log lines shown per failed check before "... n more". */
  maxLogLines?: number;
}

/** Terminal-safe text: control and bidi characters from archive names are shown escaped, never interpreted. */
function safe(text: string): string {
  return text.replace(
    /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}

/** The human form of a report: a table of every check, failing log lines beneath their row, a verdict. */
export function renderReport(report: ValidationReport, options: RenderOptions = {}): string {
  const width = Math.max(60, Math.min(options.columns ?? 100, 160));
  const maxLines = options.maxLogLines ?? 12;
  const first = 24;
  const second = 8;
  const third = width - first - second - 10;
  const table = new Table({
    head: ["check", "status", "reason code"],
    colWidths: [first, second, third],
    wordWrap: true,
    wrapOnWordBoundary: true,
    style: { head: [], border: [] },
  });
  for (const check of report.checks) {
    const status = check.status === "passed" ? "pass" : check.status === "failed" ? "FAIL" : "skip";
    table.push([check.id + (check.required ? "" : " (optional)"), status, check.reasonCode ?? ""]);
    if (check.status === "failed") {
      const lines = check.log.slice(0, maxLines).map((l) => `  ${safe(l)}`);
      if (check.log.length > maxLines)
        lines.push(`  ... ${check.log.length - maxLines} more line(s) in --json`);
      table.push([{ colSpan: 3, content: lines.join("\n") }]);
    }
  }
  const who = report.modId ? `${report.modId}@${report.version ?? "?"}` : "(unknown mod)";
  const what =
    report.packageSha256 !== null
      ? `${report.packageSizeBytes} bytes, sha256 ${report.packageSha256}`
      : report.packageSizeBytes !== null
        ? `${report.packageSizeBytes} bytes`
        : "package not read";
  const failedRequired = report.checks.filter((c) => c.required && c.status !== "passed");
  const verdict = report.passed
    ? `PASSED: all ${report.checks.filter((c) => c.required).length} required checks passed`
    : `FAILED: ${failedRequired.length} required check(s) failed: ${failedRequired.map((c) => c.id).join(", ")}`;
  return `svc validate ${safe(who)} (${what})\n${table.toString()}\n${verdict}\n`;
}
