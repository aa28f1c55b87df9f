import { isLimitsVerdict } from "../antivirus/limits-probe.ts";
import { publicScannerText } from "../antivirus/scanner.ts";
import type { CheckContext, CheckOutcome, PackageCheck } from "../types.ts";
import { blocked, contentBlocker, failuresOf, passed } from "./common.ts";

const ID = "antivirus_scan";

export const antivirusScan = {
  id: ID,
  scope: "package",
  required: true,
  pack: null,
  description:
    "The ZIP and every entry pass the deployed antivirus scanner before review or publication; an unavailable scanner fails the check.",
  reasons: {
    malware_detected: {
      meaning: "The antivirus scanner reported a signature in the package or one of its entries.",
      fix: "Remove the infected file; if you believe it is a false positive, contact the moderators.",
    },
    scanner_unavailable: {
      meaning: "No antivirus scanner was reachable; validation fails closed.",
      fix: "Run clamd (or install clamscan) and pass --clamd or --clamscan; the portal never passes unscanned packages.",
    },
    scanner_timeout: {
      meaning: "The scanner did not answer in time; validation fails closed.",
      fix: "Retry; if it persists, check the scanner's load and limits.",
    },
    scanner_error: {
      meaning: "The scanner answered with an error (for example a size limit); validation fails closed.",
      fix: "See the log line; raise clamd StreamMaxLength/MaxScanSize/MaxFileSize to the package cap.",
    },
    antivirus_disabled: {
      meaning: "Scanning was turned off (--no-antivirus), so the package cannot pass.",
      fix: "Run again with a scanner (--clamd or --clamscan).",
    },
  },
  run: checkAntivirusScan,
} as const satisfies PackageCheck;

const { failed } = failuresOf(antivirusScan);

export function checkAntivirusScan(ctx: CheckContext): CheckOutcome {
  const scan = ctx.pkg.scan;
  // These lines reach the modder: no socket path, database folder or scanner address in them.
  const scanner = scan.state === "ran" ? publicScannerText(scan.scanner) : "";
  if (scan.state === "disabled") {
    return failed("antivirus_disabled", [
      "antivirus scanning was turned off; an unscanned package never passes",
    ]);
  }
  if (scan.state === "not_configured") {
    return failed("scanner_unavailable", ["no antivirus scanner is configured; the check fails closed"]);
  }
  if (scan.state !== "ran") {
    const blocker = contentBlocker(ctx);
    return blocked(
      ID,
      blocker?.check ?? "file_signature",
      blocker?.why ?? "the package could not be scanned",
    );
  }
  // A limits finding (Heuristics.Limits.Exceeded.*) is no malware: part of the input went unscanned.
  const infected = scan.verdicts.filter((v) => v.result.status === "infected" && !isLimitsVerdict(v.result));
  if (infected.length > 0) {
    return failed(
      "malware_detected",
      infected
        .slice(0, 50)
        .map((v) => `${v.target}: ${v.result.signature ?? "unknown signature"} (${scanner})`),
    );
  }
  const errors = scan.verdicts.filter((v) => v.result.status !== "clean");
  if (errors.length > 0) {
    const first = errors[0]!.result;
    const code =
      first.errorKind === "timeout"
        ? "scanner_timeout"
        : first.errorKind === "unreachable"
          ? "scanner_unavailable"
          : "scanner_error";
    return failed(
      code,
      errors
        .slice(0, 20)
        .map((v) =>
          isLimitsVerdict(v.result)
            ? `${v.target}: ${v.result.signature}: it goes beyond the scanner's limits, so part of it was not scanned; raise clamd MaxFiles, MaxFileSize, MaxScanSize or MaxRecursion to cover the package (${scanner})`
            : `${v.target}: ${publicScannerText(v.result.message ?? "no clean answer")} (${scanner})`,
        ),
    );
  }
  if (!scan.complete) {
    const blocker = contentBlocker(ctx);
    return blocked(
      ID,
      blocker?.check ?? "file_signature",
      `the package itself scanned clean, but its entries could not be inflated and scanned one by one (${blocker?.why ?? "unknown"})`,
    );
  }
  if (scan.entryCoverage === "package") {
    const files = ctx.pkg.entries.filter((e) => !e.entry.isDirectory).length;
    return passed(ID, [
      `${scanner}: the package scanned clean, its ${files} entries looked at inside it (the scanner reports what exceeds its limits, so none was skipped)`,
    ]);
  }
  return passed(ID, [
    `${scanner}: the package and its ${scan.verdicts.length - 1} inflated entries scanned clean`,
  ]);
}
