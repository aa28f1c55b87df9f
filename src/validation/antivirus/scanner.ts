/**
 * The antivirus port (DESIGN decision 9). Only an explicit `clean` answer lets a package pass;
 * `error` covers an unreachable scanner, a timeout, a size limit and any answer we do not
 * understand, and fails the check closed.
 */
export type ScanStatus = "clean" | "infected" | "error";

export interface ScanResult {
  status: ScanStatus;
  /** The signature name, for `infected`. */
  signature?: string;
  /** What went wrong, for `error`; `timeout` and `unreachable` are prefixed so callers can tell. */
  message?: string;
  errorKind?: "unreachable" | "timeout" | "scanner";
}

export interface ScanItem {
  /** A label for logs only; never used as a path. */
  name: string;
  bytes: Uint8Array;
}

export interface AntivirusScanner {
  /** Short description for logs, e.g. `clamd unix:/run/clamav/clamd.ctl`. */
  readonly description: string;
  scan(name: string, bytes: Uint8Array): Promise<ScanResult>;
  /**
   * Optional streaming form for large inputs (the whole package read from disk in chunks), so the
   * package never has to sit in memory at once.
   */
  scanStream?(name: string, chunks: Iterable<Uint8Array>): Promise<ScanResult>;
  /** Optional batched form for scanners with a high per-call cost (clamscan loads its database per run). */
  scanBatch?(items: ScanItem[]): Promise<ScanResult[]>;
  /**
   * Optional: true when the scanner is seen (now) to report whatever lies beyond its limits (file
   * count, sizes, recursion) as a `Heuristics.Limits.Exceeded.*` finding instead of skipping it.
   * Only then can the scan of a package stand for the scan of every entry inside it; without it
   * (or on false) the runner also scans the entries one by one.
   */
  alertsOnLimits?(): Promise<boolean>;
}

/** Interpret one ClamAV result line (clamd reply or clamscan output), without its `name: ` prefix. */
export function parseClamResult(line: string): ScanResult {
  const text = line.replace(/\0/g, "").trim();
  if (text === "OK") return { status: "clean" };
  const found = /^(.*) FOUND$/.exec(text);
  if (found) return { status: "infected", signature: found[1]!.trim() || "unknown" };
  const error = /^(.*) ERROR$/.exec(text);
  if (error) return { status: "error", errorKind: "scanner", message: error[1]!.trim() };
  return {
    status: "error",
    errorKind: "scanner",
    message: `unexpected scanner answer: ${JSON.stringify(text.slice(0, 200))}`,
  };
}

/**
 * A scanner's description or message as a check log may show it. Check logs reach the modder (upload
 * status, the PR comment, the review page), and the deployment's socket paths, database folders,
 * binary paths and scanner addresses are none of their business: the scanner is named by its kind
 * ("clamd", "clamscan"), and every path or address in its text becomes a placeholder. The operator
 * reads the full description in the portal's start-up output.
 */
export function publicScannerText(text: string): string {
  const address = String.raw`(?:unix:[^\s:]+|tcp://(?:\[[^\]]+\]|[^\s:/]+)(?::\d+)?)`;
  return text
    .replace(
      new RegExp(String.raw`\b(clamd|clamscan)\s+(?:${address}|/[^\s:]+)(?:\s+-d\s+[^\s:]+)?`, "g"),
      "$1",
    )
    .replace(new RegExp(address, "g"), "<scanner address>")
    .replace(/(^|[\s("'=])\/[^\s,;:)"']+/g, "$1<path>")
    .replace(/\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b/g, "<scanner address>")
    .replace(/\[[0-9a-fA-F:]+\](?::\d+)?/g, "<scanner address>");
}
