import { crc32 } from "node:zlib";
import type { ScanResult } from "./scanner.ts";

/**
 * Whether a scanner reports what lies beyond its limits instead of skipping it silently: clamd's
 * `AlertExceedsMax yes`, which the daemon does not tell over its socket. A harmless text file
 * nested in ZIPs deeper than any MaxRecursion a scanner would run with is sent once; a scanner
 * that alerts answers `Heuristics.Limits.Exceeded.MaxRecursion FOUND`, one that skips answers OK.
 *
 * Every way the probe can be wrong is the safe one: a scanner configured to recurse deeper still
 * (or with no limit) answers OK and is treated as silent, which only means more scanning.
 */
const PROBE_DEPTH = 100;

export const LIMITS_HEURISTIC = /^Heuristics\.Limits\.Exceeded\b/;

export function isLimitsVerdict(result: ScanResult): boolean {
  return result.status === "infected" && LIMITS_HEURISTIC.test(result.signature ?? "");
}

/** A one-entry ZIP (stored, no compression) holding `data` under `name`. */
function storedZip(name: string, data: Buffer): Buffer {
  const nameBytes = Buffer.from(name, "latin1");
  const crc = crc32(data) >>> 0;
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  local.writeUInt16LE(10, 4);
  local.writeUInt32LE(crc, 14);
  local.writeUInt32LE(data.length, 18);
  local.writeUInt32LE(data.length, 22);
  local.writeUInt16LE(nameBytes.length, 26);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(10, 4);
  central.writeUInt16LE(10, 6);
  central.writeUInt32LE(crc, 16);
  central.writeUInt32LE(data.length, 20);
  central.writeUInt32LE(data.length, 24);
  central.writeUInt16LE(nameBytes.length, 28);
  const localSize = local.length + nameBytes.length + data.length;
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + nameBytes.length, 12);
  end.writeUInt32LE(localSize, 16);
  return Buffer.concat([local, nameBytes, data, central, nameBytes, end]);
}

let probe: Buffer | null = null;

/** The probe input: about 10 KiB, built once. */
export function limitsProbe(): Buffer {
  if (!probe) {
    let bytes: Buffer = Buffer.from("svc limits probe: nothing to find here\n");
    let name = "probe.txt";
    for (let level = 0; level < PROBE_DEPTH; level++) {
      bytes = storedZip(name, bytes);
      name = `level${level}.zip`;
    }
    probe = bytes;
  }
  return probe;
}
