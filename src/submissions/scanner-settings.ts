import { existsSync, readdirSync } from "node:fs";
import type { RuntimeSettings } from "../config/settings.ts";
import { createClamdScanner, parseClamdTarget } from "../validation/antivirus/clamd.ts";
import { createClamscanScanner } from "../validation/antivirus/clamscan.ts";
import type { AntivirusScanner } from "../validation/antivirus/scanner.ts";

const DEBIAN_CLAMD_SOCKET = "/var/run/clamav/clamd.ctl";
const DEBIAN_CLAMAV_DATABASE = "/var/lib/clamav";

/**
 * The scanner the settings name; without one, the Debian clamd socket or a clamscan with a
 * signature database when the machine has them; otherwise none, and antivirus_scan fails closed.
 */
export function scannerFromSettings(
  settings: RuntimeSettings,
  maxBytes: number,
): { describe: string; create: () => AntivirusScanner | null } {
  const { clamd, clamscan, database } = settings.antivirus;
  if (clamd) return { describe: `clamd ${clamd}`, create: () => createClamdScanner(parseClamdTarget(clamd)) };
  if (clamscan) {
    return {
      describe: `clamscan ${clamscan}${database ? ` -d ${database}` : ""}`,
      create: () => createClamscanScanner(clamscan, { ...(database ? { database } : {}), maxBytes }),
    };
  }
  if (existsSync(DEBIAN_CLAMD_SOCKET)) {
    return {
      describe: `clamd ${DEBIAN_CLAMD_SOCKET} (found)`,
      create: () => createClamdScanner({ kind: "unix", path: DEBIAN_CLAMD_SOCKET }),
    };
  }
  const hasSignatures =
    existsSync(DEBIAN_CLAMAV_DATABASE) &&
    readdirSync(DEBIAN_CLAMAV_DATABASE).some((f) => /\.(cvd|cld|ndb|hdb)$/.test(f));
  if (existsSync("/usr/bin/clamscan") && hasSignatures) {
    return {
      describe: "clamscan /usr/bin/clamscan (found)",
      create: () => createClamscanScanner("/usr/bin/clamscan", { maxBytes }),
    };
  }
  return {
    describe:
      "none: set SVC_CLAMD or SVC_CLAMSCAN; uploads fail antivirus_scan (scanner_unavailable) until then",
    create: () => null,
  };
}
