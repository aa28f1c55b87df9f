import { crc32 } from "./crc32.ts";
import type { ZipFinding, ZipReasonCode } from "./findings.ts";

/**
 * The extra fields of both headers of every entry, held to one rule: a package is safe only if every
 * common extractor (bsdtar, unzip, 7-Zip, Python) reads the same name, type, mode and owner from it.
 * An extra field is a run of blocks (id, size, body) that must fill it exactly. Each block id is
 * either accepted and checked, or refused:
 *
 * | id | block | decision |
 * |---|---|---|
 * | 0x0001 | ZIP64 | refused (`zip64_unsupported`): a package under 100 MiB never needs it |
 * | 0x000a | NTFS times | accepted in its one standard form (reserved 0, tag 1 of 24 bytes), as 7-Zip and Java write it |
 * | 0x5455 | extended timestamp "UT" | accepted when well formed (flags, then at most one time per flag); times only |
 * | 0x5855 | Info-ZIP Unix "UX" (old) | accepted at 8 bytes (times) or 12 (times, uid, gid) |
 * | 0x7855 | Info-ZIP Unix "Ux" | accepted at 0 or 4 bytes (uid, gid) |
 * | 0x7875 | Info-ZIP Unix "ux" | accepted as version 1 with a 2- or 4-byte uid and gid, the sizes every reader decodes alike |
 * | 0x7075 | Info-ZIP Unicode Path | accepted only when its text is the header name byte for byte, version 1, with the CRC-32 of that name; other text is `name_field_mismatch` (bsdtar renames the entry from either header, unzip and 7-Zip from the central one) |
 * | 0x6375 | Info-ZIP Unicode Comment | accepted in the central directory only, as the entry comment byte for byte |
 * | 0xcafe | JAR marker | accepted empty |
 * | 0x756e | ASi Unix | refused: its own mode and symbolic link target |
 * | 0x000d | PKWARE Unix | refused: a link target or device numbers |
 * | 0x6c78 | libarchive "xl" | refused: bsdtar takes the type and mode from it in the local header (a regular file in the central directory became a symbolic link) |
 * | any other | | refused |
 *
 * Where both headers carry the same accepted block, they must agree on what it says (NTFS and owner
 * blocks byte for byte, the modification time of the timestamp blocks): bsdtar and unzip -X read the
 * local header, 7-Zip the central one. The local header may carry more times than the central one
 * (Info-ZIP writes the access time there only) and blocks the central one lacks (Info-ZIP's "Ux").
 */

const ZIP64 = 0x0001;
const NTFS = 0x000a;
const PKWARE_UNIX = 0x000d;
const TIMESTAMP = 0x5455;
const UNIX_OLD = 0x5855;
const UNIX_IDS = 0x7855;
const UNIX_OWNER = 0x7875;
const UNICODE_PATH = 0x7075;
const UNICODE_COMMENT = 0x6375;
const ASI_UNIX = 0x756e;
const LIBARCHIVE = 0x6c78;
const JAR = 0xcafe;

// Plain byte reads: Buffer's readUInt16LE checks its argument on every call, and these run for
// every block of both headers of every entry.
function u16(b: Buffer, at: number): number {
  return b[at]! | (b[at + 1]! << 8);
}

function u32(b: Buffer, at: number): number {
  return (b[at]! | (b[at + 1]! << 8) | (b[at + 2]! << 16) | (b[at + 3]! << 24)) >>> 0;
}

/** Whether `a[aStart, aStart + length)` and `b[bStart, bStart + length)` hold the same bytes. */
function sameBytes(a: Buffer, aStart: number, b: Buffer, bStart: number, length: number): boolean {
  // A loop, not Buffer.compare: the fields are a few bytes long, less than a native call costs.
  for (let i = 0; i < length; i++) if (a[aStart + i] !== b[bStart + i]) return false;
  return true;
}

/** One bit per accepted block id, to find a block given twice without a set per entry. */
function acceptedBit(id: number): number {
  switch (id) {
    case NTFS:
      return 1;
    case TIMESTAMP:
      return 2;
    case UNIX_OLD:
      return 4;
    case UNIX_IDS:
      return 8;
    case UNIX_OWNER:
      return 16;
    case UNICODE_PATH:
      return 32;
    case UNICODE_COMMENT:
      return 64;
    case JAR:
      return 128;
    default:
      return 0;
  }
}

const BLOCK_NAMES: Readonly<Record<number, string>> = {
  [ZIP64]: "ZIP64",
  [NTFS]: "NTFS",
  [PKWARE_UNIX]: "PKWARE Unix",
  [TIMESTAMP]: "extended timestamp",
  [UNIX_OLD]: 'Info-ZIP Unix "UX"',
  [UNIX_IDS]: 'Info-ZIP Unix "Ux"',
  [UNIX_OWNER]: 'Info-ZIP Unix "ux"',
  [UNICODE_PATH]: "Info-ZIP Unicode Path",
  [UNICODE_COMMENT]: "Info-ZIP Unicode Comment",
  [ASI_UNIX]: "ASi Unix",
  [LIBARCHIVE]: 'libarchive "xl"',
  [JAR]: "JAR marker",
};

function blockName(id: number): string {
  const hex = `0x${id.toString(16).padStart(4, "0")}`;
  return BLOCK_NAMES[id] ? `${hex} (${BLOCK_NAMES[id]})` : hex;
}

/** Why a refused block id is refused. */
function refusal(id: number): string {
  switch (id) {
    case ASI_UNIX:
      return "it carries a file mode and symbolic link target of its own";
    case PKWARE_UNIX:
      return "it carries a symbolic link target or device numbers of its own";
    case LIBARCHIVE:
      return "bsdtar takes the entry's type and mode from it instead of the central directory";
    default:
      return "svc accepts only NTFS, extended timestamp, Info-ZIP Unix, Unicode Path and Comment, and JAR marker blocks";
  }
}

// ignoreBOM keeps a leading U+FEFF, as the reader does for header names.
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

type Header = "central directory" | "local header";

/**
 * Checks the extra fields of one archive: every central record's first (checkCentral, which
 * remembers where each one lies), then every local header's against it (checkLocal). Blocks are read
 * in place; nothing is allocated for an entry whose fields are sound. Each header gets at most one
 * finding, so a hostile field of 16,000 blocks cannot flood the report.
 */
export class ExtraFieldChecker {
  /** Per entry: start and end of the central record's extra field in `central`, and where its comment ends. */
  private readonly positions: Int32Array;

  constructor(
    private readonly central: Buffer,
    private readonly findings: ZipFinding[],
    entries: number,
  ) {
    this.positions = new Int32Array(entries * 3);
  }

  /** `central[start, end)` is entry `index`'s extra field, and its comment runs to `commentEnd`. */
  checkCentral(
    index: number,
    start: number,
    end: number,
    commentEnd: number,
    rawName: Buffer,
    label: string,
  ): string | null {
    this.positions[index * 3] = start;
    this.positions[index * 3 + 1] = end;
    this.positions[index * 3 + 2] = commentEnd;
    return this.check("central directory", this.central, start, end, index, rawName, label);
  }

  /** `bytes[start, end)` is the local header's extra field of entry `index`. */
  checkLocal(
    index: number,
    bytes: Buffer,
    start: number,
    end: number,
    rawName: Buffer,
    label: string,
  ): string | null {
    return this.check("local header", bytes, start, end, index, rawName, label);
  }

  /** The text of a Unicode Path block that names the entry otherwise, or null. */
  private check(
    header: Header,
    bytes: Buffer,
    start: number,
    end: number,
    index: number,
    rawName: Buffer,
    label: string,
  ): string | null {
    let otherName: string | null = null;
    let seen = 0;
    for (let e = start; e < end; ) {
      if (e + 4 > end) {
        this.refuse(
          header,
          label,
          "zip_extra_field_invalid",
          `${end - e} byte(s) after the last block, too few for a block header`,
        );
        return otherName;
      }
      const id = u16(bytes, e);
      const size = u16(bytes, e + 2);
      const body = e + 4;
      const next = body + size;
      if (next > end) {
        this.refuse(
          header,
          label,
          "zip_extra_field_invalid",
          `block ${blockName(id)} declares ${size} bytes but only ${end - body} remain (Python refuses the archive, bsdtar the entry)`,
        );
        return otherName;
      }
      e = next;
      const bit = acceptedBit(id);
      if (bit === 0) {
        if (id === ZIP64)
          this.refuse(header, label, "zip64_unsupported", "a ZIP64 block (packages never need ZIP64)");
        else
          this.refuse(header, label, "zip_extra_field_unsupported", `block ${blockName(id)}: ${refusal(id)}`);
        return otherName;
      }
      if (seen & bit) {
        this.refuse(
          header,
          label,
          "zip_extra_field_invalid",
          `two ${blockName(id)} blocks; extractors disagree on which one counts`,
        );
        return otherName;
      }
      seen |= bit;
      const problem = this.checkBlock(header, id, bytes, body, size, index, rawName);
      if (problem === NAMES_ANOTHER) {
        // Decoded only when it disagrees: an agreeing block stays bytes.
        try {
          otherName ??= utf8.decode(bytes.subarray(body + 5, next));
        } catch {
          otherName ??= "\uFFFD";
        }
      } else if (problem) {
        this.refuse(header, label, problem.code, `block ${blockName(id)} ${problem.why}`);
        return otherName;
      }
    }
    return otherName;
  }

  private refuse(header: Header, label: string, code: ZipReasonCode, why: string): void {
    this.findings.push({ code, entry: label, message: `${label}: ${header} extra field: ${why}` });
  }

  /** What is wrong with one accepted block, NAMES_ANOTHER for a Unicode Path that names another file, or null. */
  private checkBlock(
    header: Header,
    id: number,
    bytes: Buffer,
    body: number,
    size: number,
    index: number,
    rawName: Buffer,
  ): BlockProblem | typeof NAMES_ANOTHER | null {
    const local = header === "local header";
    switch (id) {
      case UNICODE_PATH: {
        if (size < 5) return invalid(`is ${size} bytes; it needs a version and a CRC-32 before the name`);
        const text = body + 5;
        if (rawName.compare(bytes, text, body + size) !== 0) return NAMES_ANOTHER;
        if (bytes[body] !== 1 || u32(bytes, body + 1) !== crc32(rawName)) {
          return invalid(
            "repeats the name but not as version 1 with the name's CRC-32, which extractors read differently",
          );
        }
        return null;
      }
      case UNICODE_COMMENT: {
        if (local) return unsupported("in a local header, which has no comment for it to repeat");
        const commentStart = this.positions[index * 3 + 1]!;
        const comment = this.central.subarray(commentStart, this.positions[index * 3 + 2]!);
        if (
          size < 5 ||
          bytes[body] !== 1 ||
          u32(bytes, body + 1) !== crc32(comment) ||
          comment.compare(bytes, body + 5, body + size) !== 0
        ) {
          return mismatch("is not the entry comment (version 1, its CRC-32, its bytes)");
        }
        return null;
      }
      case NTFS:
        if (
          size !== 32 ||
          u32(bytes, body) !== 0 ||
          u16(bytes, body + 4) !== 1 ||
          u16(bytes, body + 6) !== 24
        ) {
          return invalid(
            "is not the standard form (4 reserved zero bytes, then tag 1 of 24 bytes: three times)",
          );
        }
        return local ? this.sameAsCentral(id, bytes, body, size, index, 0) : null;
      case TIMESTAMP: {
        const flags = size > 0 ? bytes[body]! : 0;
        const times = (size - 1) / 4;
        const flagged = (flags & 1) + ((flags >> 1) & 1) + ((flags >> 2) & 1);
        if (size === 0 || flags > 7 || !Number.isInteger(times) || times > flagged) {
          return invalid("is not a flags byte followed by at most one 4-byte time per flag set");
        }
        // The modification time comes first when flagged; the other times are the local header's own.
        return local && flags & 1 && times > 0 ? this.sameAsCentral(id, bytes, body + 1, 4, index, 1) : null;
      }
      case UNIX_OLD:
        if (size !== 8 && size !== 12)
          return invalid(`is ${size} bytes; it holds 8 (times) or 12 (times, uid, gid)`);
        return local ? this.sameAsCentral(id, bytes, body, size, index, 0) : null;
      case UNIX_IDS:
        if (size !== 0 && size !== 4) return invalid(`is ${size} bytes; it holds 0 or 4 (uid, gid)`);
        return local && size > 0 ? this.sameAsCentral(id, bytes, body, size, index, 0) : null;
      case UNIX_OWNER: {
        const uidSize = size >= 3 ? bytes[body + 1]! : 0;
        const gidSize = size >= 3 + uidSize ? bytes[body + 2 + uidSize]! : 0;
        if (
          size < 3 ||
          bytes[body] !== 1 ||
          (uidSize !== 2 && uidSize !== 4) ||
          (gidSize !== 2 && gidSize !== 4) ||
          size !== 3 + uidSize + gidSize
        ) {
          return invalid(
            "is not version 1 with a 2- or 4-byte uid and gid (other sizes are read by some extractors only)",
          );
        }
        return local ? this.sameAsCentral(id, bytes, body, size, index, 0) : null;
      }
      case JAR:
        return size === 0 ? null : invalid(`is ${size} bytes; the marker is empty`);
      default:
        return null;
    }
  }

  /**
   * Whether the central record's block `id` (when it has one) agrees with `bytes[at, at + length)`:
   * the same bytes at `skip` into its body, where the central block holds that many.
   */
  private sameAsCentral(
    id: number,
    bytes: Buffer,
    at: number,
    length: number,
    index: number,
    skip: number,
  ): BlockProblem | null {
    const central = this.central;
    const end = this.positions[index * 3 + 1]!;
    for (let e = this.positions[index * 3]!; e + 4 <= end; ) {
      const size = u16(central, e + 2);
      if (e + 4 + size > end) return null; // reported on the central record already
      if (u16(central, e) === id) {
        // A timestamp block without a modification time has none to compare.
        if (id === TIMESTAMP && (central[e + 4]! & 1) === 0) return null;
        const from = e + 4 + skip;
        // The central block may stop short (Info-ZIP's central "UX" holds no uid and gid).
        const common = Math.min(length, size - skip);
        if (common <= 0 || sameBytes(central, from, bytes, at, common)) return null;
        return mismatch(
          "says otherwise in the central directory; bsdtar and unzip read the local header, 7-Zip the central one",
        );
      }
      e += 4 + size;
    }
    return null;
  }
}

interface BlockProblem {
  code: ZipReasonCode;
  why: string;
}

const NAMES_ANOTHER = Symbol("names another file");

function invalid(why: string): BlockProblem {
  return { code: "zip_extra_field_invalid", why };
}

function unsupported(why: string): BlockProblem {
  return { code: "zip_extra_field_unsupported", why };
}

function mismatch(why: string): BlockProblem {
  return { code: "zip_extra_field_mismatch", why };
}
