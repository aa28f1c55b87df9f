import * as nodeBuffer from "node:buffer";
import { type InflateFacts, inflateFacts, inflateFactsBorrowed } from "./inflate-raw.mjs";
import { ExtraFieldChecker } from "./extra-fields.ts";
import type { ZipFinding, ZipReasonCode } from "./findings.ts";

export type { ZipFinding, ZipReasonCode } from "./findings.ts";

/** Random access to the package bytes: a Buffer in memory, or positional reads from an open file. */
export interface ByteSource {
  readonly size: number;
  /** Up to `length` bytes at `offset` (fewer only at the end of the source). */
  read(offset: number, length: number): Buffer;
  /** Every byte, when the source holds them in memory: parsing then needs no window per record. */
  readonly bytes?: Buffer;
}

export function bufferSource(bytes: Buffer): ByteSource {
  return {
    size: bytes.length,
    read: (offset, length) => bytes.subarray(offset, Math.min(offset + length, bytes.length)),
    bytes,
  };
}

function outOfRange(offset: number): never {
  throw new RangeError(`read at ${offset} is outside the bytes read`);
}

/** A window of the source, addressed with absolute offsets, so parsing code reads like the spec. */
class View {
  /** One past the last absolute offset held (the buffer's length getter is no plain field read). */
  readonly end: number;
  constructor(
    readonly buf: Buffer,
    readonly base: number,
  ) {
    this.end = base + buf.length;
  }
  static of(source: ByteSource, offset: number, length: number): View {
    return new View(source.read(offset, Math.max(0, length)), offset);
  }
  has(offset: number, length: number): boolean {
    return offset >= this.base && offset + length <= this.end;
  }
  // Plain byte reads, as extra-fields.ts does: Buffer's readUInt16LE/readUInt32LE validate their
  // argument on every call, and these run about 25 times per entry, mostly before the JIT has
  // optimized the loops (a CLI run reads the directory once). Out of range stays a RangeError.
  u16(offset: number): number {
    if (offset < this.base || offset + 2 > this.end) outOfRange(offset);
    const b = this.buf;
    const i = offset - this.base;
    return b[i]! | (b[i + 1]! << 8);
  }
  u32(offset: number): number {
    if (offset < this.base || offset + 4 > this.end) outOfRange(offset);
    const b = this.buf;
    const i = offset - this.base;
    return (b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16) | (b[i + 3]! << 24)) >>> 0;
  }
  slice(start: number, end: number): Buffer {
    return this.buf.subarray(start - this.base, end - this.base);
  }
  /** Whether the `length` bytes at `offset` are exactly `other`, without a slice of their own. */
  equals(offset: number, length: number, other: Buffer): boolean {
    if (length !== other.length) return false;
    if (offset < this.base || offset + length > this.end) outOfRange(offset);
    // A loop, not Buffer.compare: names are tens of bytes, and compare checks four offsets per call.
    const b = this.buf;
    const start = offset - this.base;
    for (let i = 0; i < length; i++) if (b[start + i] !== other[i]) return false;
    return true;
  }
}

/**
 * A minimal ZIP reader for untrusted packages (DESIGN decision 8). It parses the central directory
 * first, applies every cap before a byte is inflated, compares each local header with its central
 * record and accounts for every byte of the file: a valid package is exactly
 * [local entries back to back][central directory][end record]. Anything else is reported.
 * It never writes to disk; names are returned raw and decoded, never used as paths.
 */

export interface ZipCaps {
  maxEntries: number;
  maxNameBytes: number;
  maxPathDepth: number;
  maxEntryUncompressedBytes: number;
  maxTotalUncompressedBytes: number;
  maxCompressionRatio: number;
  /** Entries smaller than this are exempt from the per-entry ratio cap (tiny files compress absurdly well). */
  compressionRatioMinBytes: number;
}

export interface ZipEntry {
  index: number;
  rawName: Buffer;
  /** Decoded name (UTF-8, or ASCII without the flag); null when it could not be decoded safely. */
  name: string;
  nameDecoded: boolean;
  utf8Flag: boolean;
  flags: number;
  method: number;
  crc32: number;
  compressedSize: number;
  uncompressedSize: number;
  localHeaderOffset: number;
  /** First byte of the entry's compressed data (after the local header). */
  dataOffset: number;
  /** One past the entry's last byte, including any data descriptor. */
  endOffset: number;
  versionMadeBy: number;
  externalAttributes: number;
  /** Unix st_mode when the entry was made on Unix, else null. */
  unixMode: number | null;
  isDirectory: boolean;
  /**
   * The name an Info-ZIP Unicode Path extra field (0x7075) of either header gives the entry, when
   * it is not the header name byte for byte (the central record's first); null otherwise.
   */
  unicodePathName: string | null;
}

export interface ZipStructure {
  entries: ZipEntry[];
  findings: ZipFinding[];
  /**
   * True when the archive's layout or caps make inflating it unsafe or meaningless: content checks
   * are then blocked. Name problems alone do not set it (names are never used as paths).
   */
  unsafeToInflate: boolean;
  centralDirectoryOffset: number;
  centralDirectorySize: number;
  totalCompressedBytes: number;
  totalUncompressedBytes: number;
}

const SIG_LOCAL = 0x04034b50;
const SIG_CENTRAL = 0x02014b50;
const SIG_EOCD = 0x06054b50;
const SIG_ZIP64_EOCD = 0x06064b50;
const SIG_ZIP64_LOCATOR = 0x07064b50;
const SIG_DESCRIPTOR = 0x08074b50;
const EOCD_SIZE = 22;
const CENTRAL_SIZE = 46;
const LOCAL_SIZE = 30;
const MAX_COMMENT = 0xffff;

export const FLAG_ENCRYPTED = 0x0001;
export const FLAG_DATA_DESCRIPTOR = 0x0008;
export const FLAG_STRONG_ENCRYPTION = 0x0040;
export const FLAG_UTF8 = 0x0800;
export const FLAG_MASKED_HEADERS = 0x2000;
/**
 * Flag bits a stored/deflate package has no use for and extractors act on differently: 4
 * (enhanced deflating), 5 (compressed patched data: Python's zipfile refuses the entry, others
 * read the patch as the file), and the bits APPNOTE reserves (7-10, 12, 14, 15). Bits 0, 6 and 13
 * (encryption) have their own reason; 1-2 (deflate level hints), 3 (data descriptor) and 11
 * (UTF-8 names) are accepted.
 */
export const FLAGS_UNSUPPORTED = 0xd7b0;

/**
 * The highest "version needed to extract" a package may declare: 2.0, enough for stored and
 * deflated entries and folders without ZIP64. Info-ZIP's unzip skips an entry that needs more than
 * it can do (4.6 on Debian: a 5.1 entry is left out while the rest is extracted), Python's zipfile
 * refuses the whole archive above 6.3, and the upper byte names the system needed to extract it
 * (unzip asks "stored in VMS format. Extract anyway? (y/n)" of a VMS one, and skips it on "n"):
 * readers would not agree on the contents.
 */
export const MAX_VERSION_NEEDED = 20;

/**
 * "Version made by" systems whose external attributes extractors read as a Unix st_mode (unzip:
 * VMS, Unix, Atari, QDOS, Acorn, BeOS, Tandem, AtheOS; libarchive and 7-Zip: Unix; macOS tools:
 * OS X). unzip creates symbolic links for Unix, VMS, Atari, BeOS and AtheOS entries alike.
 */
const UNIX_MODE_HOSTS: ReadonlySet<number> = new Set([2, 3, 5, 12, 13, 16, 17, 19, 30]);

// ignoreBOM keeps a leading U+FEFF in the name, as extractors do: dropped, "\uFEFFa" would read as
// "a", escape the invisible-character rule and collide unseen with a real "a".
const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** buffer.isAscii where the runtime has it (Node 18.15/19.6 and later). */
const isAscii: ((input: Uint8Array) => boolean) | undefined = (
  nodeBuffer as { isAscii?: (input: Uint8Array) => boolean }
).isAscii;

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;

/** Structural findings that make the layout untrustworthy. */
export const LAYOUT_CODES: ReadonlySet<ZipReasonCode> = new Set<ZipReasonCode>([
  "not_a_zip",
  "eocd_missing",
  "eocd_invalid",
  "zip64_unsupported",
  "central_directory_invalid",
  "local_header_invalid",
  "local_header_mismatch",
  "data_before_first_entry",
  "data_between_entries",
  "data_after_central_directory",
  "overlapping_entries",
  "declared_size_mismatch",
  "encrypted_entry",
  "unsupported_compression_method",
  "zip_version_unsupported",
  "zip_flags_unsupported",
  "too_many_entries",
  "entry_too_large",
  "total_uncompressed_too_large",
  "compression_ratio_exceeded",
]);

function emptyStructure(findings: ZipFinding[]): ZipStructure {
  return {
    entries: [],
    findings,
    unsafeToInflate: true,
    centralDirectoryOffset: 0,
    centralDirectorySize: 0,
    totalCompressedBytes: 0,
    totalUncompressedBytes: 0,
  };
}

function hasNonAscii(bytes: Uint8Array): boolean {
  // One native call (Node 20+) instead of a loop per byte that runs before the JIT has warmed up.
  if (isAscii) return !isAscii(bytes);
  for (let i = 0; i < bytes.length; i++) if (bytes[i]! >= 0x80) return true;
  return false;
}

/** First offset in [start, end) where the 4-byte little-endian `sig` lies whole, or -1. */
function indexOfSignature(bytes: Buffer, start: number, end: number, sig: number): number {
  // Native search: the end record's window is 64 KiB and is searched whole on every package.
  const needle = Buffer.alloc(4);
  needle.writeUInt32LE(sig, 0);
  const at = bytes.subarray(start, Math.max(start, end)).indexOf(needle);
  return at === -1 ? -1 : start + at;
}

/** Find the one end record that ends exactly at the end of the file; `tail` holds the last 64 KiB + 22 bytes. */
function locateEndRecord(tail: View, len: number, findings: ZipFinding[]): number {
  const lowest = tail.base;
  let candidate = -1;
  for (let i = len - EOCD_SIZE; i >= lowest; i--) {
    if (tail.u32(i) !== SIG_EOCD) continue;
    const commentLength = tail.u16(i + 20);
    if (i + EOCD_SIZE + commentLength === len) {
      candidate = i;
      break;
    }
    if (candidate === -1) candidate = -2 - i; // remember a record that does not end the file
  }
  if (candidate >= 0) {
    // A second end record in reach (typically inside the comment) means two tools could read two
    // different archives from the same bytes.
    if (indexOfSignature(tail.buf, 0, candidate - lowest, SIG_EOCD) !== -1) {
      findings.push({
        code: "eocd_invalid",
        message: "the file holds more than one end-of-central-directory record",
      });
      return -1;
    }
    const comment = tail.slice(candidate + EOCD_SIZE, len);
    for (const sig of [SIG_EOCD, SIG_ZIP64_EOCD, SIG_ZIP64_LOCATOR, SIG_CENTRAL, SIG_LOCAL]) {
      if (indexOfSignature(comment, 0, comment.length, sig) !== -1) {
        findings.push({
          code: "eocd_invalid",
          message:
            "the archive comment contains ZIP record signatures; different tools would read different archives",
        });
        return -1;
      }
    }
    return candidate;
  }
  if (candidate < -1) {
    const at = -2 - candidate;
    const declared = tail.u16(at + 20);
    const actual = len - at - EOCD_SIZE;
    findings.push(
      declared < actual
        ? {
            code: "data_after_central_directory",
            message: `${actual - declared} byte(s) follow the end-of-central-directory record`,
          }
        : {
            code: "eocd_missing",
            message: `the end-of-central-directory record is truncated (comment declares ${declared} bytes, ${actual} present)`,
          },
    );
    return -1;
  }
  findings.push({
    code: "eocd_missing",
    message: "no end-of-central-directory record: the file is truncated or not a ZIP",
  });
  return -1;
}

export function readZipStructure(input: Buffer | ByteSource, caps: ZipCaps): ZipStructure {
  const source = Buffer.isBuffer(input) ? bufferSource(input) : input;
  const findings: ZipFinding[] = [];
  const len = source.size;
  const headBytes = source.read(0, 4);
  const head = headBytes.length === 4 ? headBytes.readUInt32LE(0) : -1;
  // The end record must sit in the last 64 KiB + 22 bytes, so that window is all we search.
  const tail = View.of(
    source,
    Math.max(0, len - EOCD_SIZE - MAX_COMMENT),
    Math.min(len, EOCD_SIZE + MAX_COMMENT),
  );
  if (
    head !== SIG_LOCAL &&
    head !== SIG_EOCD &&
    indexOfSignature(tail.buf, 0, tail.buf.length, SIG_EOCD) === -1
  ) {
    findings.push({
      code: "not_a_zip",
      message: "the package does not start with a ZIP signature and has no ZIP end record",
    });
    return emptyStructure(findings);
  }
  if (len < EOCD_SIZE) {
    findings.push({
      code: "eocd_missing",
      message: `the file is only ${len} bytes; a ZIP end record alone needs 22`,
    });
    return emptyStructure(findings);
  }
  const eocd = locateEndRecord(tail, len, findings);
  if (eocd < 0) return emptyStructure(findings);
  const diskNumber = tail.u16(eocd + 4);
  const cdDisk = tail.u16(eocd + 6);
  const entriesOnDisk = tail.u16(eocd + 8);
  const totalEntries = tail.u16(eocd + 10);
  const cdSize = tail.u32(eocd + 12);
  const cdOffset = tail.u32(eocd + 16);

  if (
    totalEntries === 0xffff ||
    entriesOnDisk === 0xffff ||
    cdSize === 0xffffffff ||
    cdOffset === 0xffffffff ||
    (eocd >= 20 && source.read(eocd - 20, 4).readUInt32LE(0) === SIG_ZIP64_LOCATOR)
  ) {
    findings.push({ code: "zip64_unsupported", message: "the archive uses ZIP64 end records" });
    return emptyStructure(findings);
  }
  if (diskNumber !== 0 || cdDisk !== 0 || entriesOnDisk !== totalEntries) {
    findings.push({
      code: "eocd_invalid",
      message: "the end record describes a multi-disk (spanned) archive",
    });
    return emptyStructure(findings);
  }
  if (cdOffset + cdSize > eocd) {
    findings.push({
      code: "eocd_invalid",
      message: `the end record places the central directory at ${cdOffset}+${cdSize}, past the end record at ${eocd}`,
    });
    return emptyStructure(findings);
  }
  if (totalEntries > caps.maxEntries) {
    findings.push({
      code: "too_many_entries",
      message: `the archive declares ${totalEntries} entries; the policy allows at most ${caps.maxEntries}`,
    });
    return emptyStructure(findings);
  }
  if (cdOffset + cdSize < eocd) {
    findings.push({
      code: "data_after_central_directory",
      message: `${eocd - cdOffset - cdSize} byte(s) sit between the central directory and the end record`,
    });
  }

  const entries: ZipEntry[] = [];
  const cdEnd = cdOffset + cdSize;
  const cd = View.of(source, cdOffset, cdSize);
  const extras = new ExtraFieldChecker(cd.buf, findings, totalEntries);
  let p = cdOffset;
  let totalCompressed = 0;
  let totalUncompressed = 0;
  for (let index = 0; index < totalEntries; index++) {
    if (p + CENTRAL_SIZE > cdEnd || cd.u32(p) !== SIG_CENTRAL) {
      findings.push({
        code: p + CENTRAL_SIZE > cdEnd ? "eocd_invalid" : "central_directory_invalid",
        message: `central directory record ${index + 1} of ${totalEntries} is missing at offset ${p}`,
      });
      return { ...emptyStructure(findings), entries };
    }
    const versionMadeBy = cd.u16(p + 4);
    const versionNeeded = cd.u16(p + 6);
    const flags = cd.u16(p + 8);
    const method = cd.u16(p + 10);
    const crc = cd.u32(p + 16);
    const compressedSize = cd.u32(p + 20);
    const uncompressedSize = cd.u32(p + 24);
    const nameLength = cd.u16(p + 28);
    const extraLength = cd.u16(p + 30);
    const commentLength = cd.u16(p + 32);
    const diskStart = cd.u16(p + 34);
    const externalAttributes = cd.u32(p + 38);
    const localHeaderOffset = cd.u32(p + 42);
    const recordEnd = p + CENTRAL_SIZE + nameLength + extraLength + commentLength;
    if (recordEnd > cdEnd) {
      findings.push({
        code: "central_directory_invalid",
        message: `central directory record ${index + 1} runs past the end of the directory`,
      });
      return { ...emptyStructure(findings), entries };
    }
    // A view, not a copy: the bytes read for the directory are never reused or written to.
    const rawName = cd.slice(p + CENTRAL_SIZE, p + CENTRAL_SIZE + nameLength);
    const extraStart = p + CENTRAL_SIZE + nameLength;
    const extraEnd = extraStart + extraLength;
    p = recordEnd;

    const utf8Flag = (flags & FLAG_UTF8) !== 0;
    let name: string;
    let nameDecoded = true;
    try {
      // ASCII reads the same in every encoding (and carries no UTF-8 byte-order mark to strip).
      if (!hasNonAscii(rawName)) name = rawName.toString("latin1");
      else if (!utf8Flag) throw new Error("non-ASCII without UTF-8 flag");
      else name = utf8.decode(rawName);
    } catch {
      nameDecoded = false;
      name = rawName.toString("latin1");
    }
    const label = nameDecoded ? name : `<undecodable name ${rawName.toString("hex")}>`;

    const platform = versionMadeBy >> 8;
    // Other systems' upper attribute bits are read as a mode too when set (7-Zip marks them so, and
    // PKZip for Unix writes them under MS-DOS): judge them the way the strictest extractor would.
    const upperAttributes = (externalAttributes >>> 16) & 0xffff;
    const unixMode = UNIX_MODE_HOSTS.has(platform) || upperAttributes !== 0 ? upperAttributes : null;
    const isDirectory = name.endsWith("/") || (unixMode !== null && (unixMode & S_IFMT) === S_IFDIR);

    const unicodePathName = extras.checkCentral(
      index,
      extraStart - cd.base,
      extraEnd - cd.base,
      recordEnd - cd.base,
      rawName,
      label,
    );

    if (
      compressedSize === 0xffffffff ||
      uncompressedSize === 0xffffffff ||
      localHeaderOffset === 0xffffffff
    ) {
      findings.push({
        code: "zip64_unsupported",
        entry: label,
        message: `${label}: entry uses ZIP64 sizes or offsets`,
      });
    }
    if (diskStart !== 0) {
      findings.push({
        code: "eocd_invalid",
        entry: label,
        message: `${label}: entry starts on disk ${diskStart}`,
      });
    }
    if (flags & (FLAG_ENCRYPTED | FLAG_STRONG_ENCRYPTION | FLAG_MASKED_HEADERS)) {
      findings.push({ code: "encrypted_entry", entry: label, message: `${label}: entry is encrypted` });
    }
    const versionProblem = describeVersionNeeded(versionNeeded);
    if (versionProblem) {
      findings.push({
        code: "zip_version_unsupported",
        entry: label,
        message: `${label}: central directory ${versionProblem}`,
      });
    }
    const flagsProblem = describeUnsupportedFlags(flags, method);
    if (flagsProblem) {
      findings.push({
        code: "zip_flags_unsupported",
        entry: label,
        message: `${label}: central directory ${flagsProblem}`,
      });
    }
    if (method !== 0 && method !== 8) {
      findings.push({
        code: "unsupported_compression_method",
        entry: label,
        message: `${label}: compression method ${method} (only 0 stored and 8 deflate are accepted)`,
      });
    }
    if (method === 0 && compressedSize !== uncompressedSize) {
      findings.push({
        code: "declared_size_mismatch",
        entry: label,
        message: `${label}: stored entry declares ${compressedSize} compressed but ${uncompressedSize} uncompressed bytes`,
      });
    }
    if (isDirectory && uncompressedSize !== 0) {
      findings.push({
        code: "declared_size_mismatch",
        entry: label,
        message: `${label}: a folder entry carries data`,
      });
    }
    if (uncompressedSize > caps.maxEntryUncompressedBytes) {
      findings.push({
        code: "entry_too_large",
        entry: label,
        message: `${label}: declares ${uncompressedSize} bytes uncompressed; the cap is ${caps.maxEntryUncompressedBytes}`,
      });
    }
    if (
      uncompressedSize >= caps.compressionRatioMinBytes &&
      uncompressedSize > caps.maxCompressionRatio * Math.max(compressedSize, 1)
    ) {
      findings.push({
        code: "compression_ratio_exceeded",
        entry: label,
        message: `${label}: compression ratio ${(uncompressedSize / Math.max(compressedSize, 1)).toFixed(0)}:1 exceeds ${caps.maxCompressionRatio}:1`,
      });
    }
    totalCompressed += compressedSize;
    totalUncompressed += uncompressedSize;

    entries.push({
      index,
      rawName,
      name,
      nameDecoded,
      utf8Flag,
      flags,
      method,
      crc32: crc,
      compressedSize,
      uncompressedSize,
      localHeaderOffset,
      dataOffset: -1,
      endOffset: -1,
      versionMadeBy,
      externalAttributes,
      unixMode,
      isDirectory,
      unicodePathName,
    });
  }
  if (p !== cdEnd) {
    findings.push({
      code: "eocd_invalid",
      message: `the end record declares ${totalEntries} entries in ${cdSize} bytes, but those entries end ${cdEnd - p} byte(s) early`,
    });
  }
  if (totalUncompressed > caps.maxTotalUncompressedBytes) {
    findings.push({
      code: "total_uncompressed_too_large",
      message: `entries declare ${totalUncompressed} bytes uncompressed in total; the cap is ${caps.maxTotalUncompressedBytes}`,
    });
  }
  if (
    totalUncompressed >= caps.compressionRatioMinBytes &&
    totalUncompressed > caps.maxCompressionRatio * Math.max(totalCompressed, 1)
  ) {
    findings.push({
      code: "compression_ratio_exceeded",
      message: `the archive's overall compression ratio ${(totalUncompressed / Math.max(totalCompressed, 1)).toFixed(0)}:1 exceeds ${caps.maxCompressionRatio}:1`,
    });
  }

  checkLocalHeaders(source, entries, cdOffset, extras, findings);

  return {
    entries,
    findings,
    unsafeToInflate: findings.some((f) => LAYOUT_CODES.has(f.code)),
    centralDirectoryOffset: cdOffset,
    centralDirectorySize: cdSize,
    totalCompressedBytes: totalCompressed,
    totalUncompressedBytes: totalUncompressed,
  };
}

function checkLocalHeaders(
  source: ByteSource,
  entries: ZipEntry[],
  cdOffset: number,
  extras: ExtraFieldChecker,
  findings: ZipFinding[],
): void {
  // A source in memory is read through one view of all its bytes; otherwise a window per header.
  const whole = source.bytes ? new View(source.bytes, 0) : null;
  for (const entry of entries) {
    const label = entry.nameDecoded ? entry.name : `<entry ${entry.index + 1}>`;
    const o = entry.localHeaderOffset;
    // One read covers the header, the name and a typical extra field; a larger extra is read again.
    let bytes =
      whole ??
      View.of(source, o, Math.min(LOCAL_SIZE + entry.rawName.length + 256, Math.max(0, cdOffset - o)));
    if (o + LOCAL_SIZE > cdOffset || bytes.u32(o) !== SIG_LOCAL) {
      findings.push({
        code: "local_header_invalid",
        entry: label,
        message: `${label}: no local file header at offset ${o}`,
      });
      continue;
    }
    const localVersionNeeded = bytes.u16(o + 4);
    const flags = bytes.u16(o + 6);
    const method = bytes.u16(o + 8);
    const crc = bytes.u32(o + 14);
    const csize = bytes.u32(o + 18);
    const usize = bytes.u32(o + 22);
    const nameLength = bytes.u16(o + 26);
    const extraLength = bytes.u16(o + 28);
    const dataOffset = o + LOCAL_SIZE + nameLength + extraLength;
    if (dataOffset + entry.compressedSize > cdOffset) {
      findings.push({
        code: "local_header_invalid",
        entry: label,
        message: `${label}: the entry's data runs into the central directory`,
      });
      continue;
    }
    if (!bytes.has(o, LOCAL_SIZE + nameLength + extraLength))
      bytes = View.of(source, o, LOCAL_SIZE + nameLength + extraLength);
    const localPathName = extras.checkLocal(
      entry.index,
      bytes.buf,
      o + LOCAL_SIZE + nameLength - bytes.base,
      dataOffset - bytes.base,
      entry.rawName,
      label,
    );
    entry.unicodePathName ??= localPathName;
    // Streaming extractors read only the local header: it must pass the same rules.
    const localVersionProblem = describeVersionNeeded(localVersionNeeded);
    if (localVersionProblem) {
      findings.push({
        code: "zip_version_unsupported",
        entry: label,
        message: `${label}: local header ${localVersionProblem}`,
      });
    }
    const localFlagsProblem = describeUnsupportedFlags(flags, method);
    if (localFlagsProblem) {
      findings.push({
        code: "zip_flags_unsupported",
        entry: label,
        message: `${label}: local header ${localFlagsProblem}`,
      });
    }
    const differences: string[] = [];
    if (!bytes.equals(o + LOCAL_SIZE, nameLength, entry.rawName)) differences.push("name");
    if (method !== entry.method) differences.push("compression method");
    // Encryption, descriptor and UTF-8 bits must agree; other bits (deflate level hints) may not.
    const significant =
      FLAG_ENCRYPTED | FLAG_DATA_DESCRIPTOR | FLAG_STRONG_ENCRYPTION | FLAG_UTF8 | FLAG_MASKED_HEADERS;
    if ((flags & significant) !== (entry.flags & significant)) differences.push("flags");
    const usesDescriptor = (entry.flags & FLAG_DATA_DESCRIPTOR) !== 0;
    // With a descriptor each field may also be the placeholder 0: libarchive (bsdtar) leaves CRC and
    // compressed size 0 but writes the uncompressed size it knows.
    if (crc !== entry.crc32 && !(usesDescriptor && crc === 0)) differences.push("CRC-32");
    if (csize !== entry.compressedSize && !(usesDescriptor && csize === 0))
      differences.push("compressed size");
    if (usize !== entry.uncompressedSize && !(usesDescriptor && usize === 0))
      differences.push("uncompressed size");
    let end = dataOffset + entry.compressedSize;
    if (usesDescriptor) {
      // Optional signature, then CRC and the two 32-bit sizes.
      let d = end;
      const descriptor = View.of(source, d, Math.min(16, Math.max(0, cdOffset - d)));
      if (d + 4 <= cdOffset && descriptor.u32(d) === SIG_DESCRIPTOR) d += 4;
      if (d + 12 > cdOffset) {
        differences.push("data descriptor (missing)");
      } else {
        if (
          descriptor.u32(d) !== entry.crc32 ||
          descriptor.u32(d + 4) !== entry.compressedSize ||
          descriptor.u32(d + 8) !== entry.uncompressedSize
        ) {
          differences.push("data descriptor");
        }
        end = d + 12;
      }
    }
    if (differences.length > 0) {
      findings.push({
        code: "local_header_mismatch",
        entry: label,
        message: `${label}: local header disagrees with the central directory on ${differences.join(", ")}`,
      });
    }
    entry.dataOffset = dataOffset;
    entry.endOffset = end;
  }
  checkLayout(entries, cdOffset, findings);
}

function versionText(version: number): string {
  return `${Math.floor(version / 10)}.${version % 10}`;
}

/** Why a "version needed to extract" value is refused, or null. */
function describeVersionNeeded(field: number): string | null {
  const version = field & 0xff;
  const system = field >> 8;
  if (system !== 0) {
    return `declares version needed to extract ${versionText(version)} on system ${system}; only MS-DOS-compatible (0) entries are read the same everywhere`;
  }
  if (version > MAX_VERSION_NEEDED) {
    return `declares version needed to extract ${versionText(version)}; stored and deflated entries need at most ${versionText(MAX_VERSION_NEEDED)}, and extractors that cannot do ${versionText(version)} skip the entry or refuse the archive`;
  }
  return null;
}

/** Why general-purpose flags are refused, or null. */
function describeUnsupportedFlags(flags: number, method: number): string | null {
  const unsupported = flags & FLAGS_UNSUPPORTED;
  if (unsupported !== 0) {
    const bits = [...Array(16).keys()].filter((bit) => unsupported & (1 << bit));
    return `sets general-purpose flag bit(s) ${bits.join(", ")}${unsupported & 0x0020 ? " (compressed patched data)" : ""}, which extractors treat differently`;
  }
  // A stored entry's length is only in the central directory; a streaming reader must guess where
  // it ends (Java's ZipInputStream refuses it, others scan for a descriptor signature its data may hold).
  if (method === 0 && flags & FLAG_DATA_DESCRIPTOR) {
    return "is stored with a data descriptor, so streaming extractors cannot tell where its data ends";
  }
  return null;
}

/** Every byte before the central directory must belong to exactly one entry, in order. */
function checkLayout(entries: ZipEntry[], cdOffset: number, findings: ZipFinding[]): void {
  let inOrder = true;
  for (let i = 0; i < entries.length; i++) {
    if (entries[i]!.dataOffset < 0) return; // already reported as local_header_invalid
    if (i > 0 && entries[i]!.localHeaderOffset < entries[i - 1]!.localHeaderOffset) inOrder = false;
  }
  // Writers put the central records in the order of the entries: then there is nothing to sort (a
  // stable sort of sorted entries is the same list, and a comparator call per entry costs).
  const placed = inOrder ? entries : [...entries].sort((a, b) => a.localHeaderOffset - b.localHeaderOffset);
  let cursor = 0;
  for (const entry of placed) {
    const label = entry.nameDecoded ? entry.name : `<entry ${entry.index + 1}>`;
    if (entry.localHeaderOffset < cursor) {
      findings.push({
        code: "overlapping_entries",
        entry: label,
        message: `${label}: its bytes at ${entry.localHeaderOffset} overlap the previous entry (ends at ${cursor})`,
      });
    } else if (entry.localHeaderOffset > cursor) {
      findings.push(
        cursor === 0
          ? {
              code: "data_before_first_entry",
              message: `${entry.localHeaderOffset} byte(s) precede the first entry`,
            }
          : {
              code: "data_between_entries",
              entry: label,
              message: `${entry.localHeaderOffset - cursor} unaccounted byte(s) before ${label}`,
            },
      );
    }
    cursor = Math.max(cursor, entry.endOffset);
  }
  if (cursor < cdOffset) {
    findings.push(
      placed.length === 0
        ? {
            code: "data_before_first_entry",
            message: `${cdOffset} byte(s) precede the central directory of an empty archive`,
          }
        : {
            code: "data_between_entries",
            message: `${cdOffset - cursor} unaccounted byte(s) before the central directory`,
          },
    );
  }
}

export type InflateResult =
  | { ok: true; data: Buffer }
  | { ok: false; code: "declared_size_mismatch" | "corrupt_entry_data" | "crc_mismatch"; message: string };

/** The verdict on one entry's inflate facts, whichever thread inflated it (the inflate worker too). */
export type InflateVerdict =
  | { ok: true }
  | { ok: false; code: "declared_size_mismatch" | "corrupt_entry_data" | "crc_mismatch"; message: string };

/**
 * Judges what inflating an entry gave (inflate-raw.mjs's inflateFacts): a deflate stream that is
 * corrupt, ends early or late, or inflates to more or fewer bytes than declared, or a CRC-32 that
 * differs from the header's. The one place those reason codes and messages are written.
 */
export function judgeInflate(
  entry: Pick<ZipEntry, "name" | "uncompressedSize" | "crc32">,
  facts: { failure: "too_large" | { corrupt: string } } | { length: number; unread: number; crc: number },
): InflateVerdict {
  if ("failure" in facts) {
    const { failure } = facts;
    if (failure === "too_large") {
      return {
        ok: false,
        code: "declared_size_mismatch",
        message: `${entry.name}: inflates to more than its declared ${entry.uncompressedSize} bytes`,
      };
    }
    return {
      ok: false,
      code: "corrupt_entry_data",
      message: `${entry.name}: deflate data is corrupt (${failure.corrupt})`,
    };
  }
  if (facts.unread > 0) {
    return {
      ok: false,
      code: "declared_size_mismatch",
      message: `${entry.name}: ${facts.unread} byte(s) hide after the end of the deflate stream`,
    };
  }
  if (facts.length !== entry.uncompressedSize) {
    return {
      ok: false,
      code: "declared_size_mismatch",
      message: `${entry.name}: inflates to ${facts.length} bytes, not its declared ${entry.uncompressedSize}`,
    };
  }
  if (facts.crc !== entry.crc32) {
    return {
      ok: false,
      code: "crc_mismatch",
      message: `${entry.name}: CRC-32 is ${hex(facts.crc)}, the header says ${hex(entry.crc32)}`,
    };
  }
  return { ok: true };
}

/**
 * Inflate one entry whose structure passed readZipStructure. The output cap is the declared size
 * plus one byte, so a lying size is caught without ever allocating more than the cap allows.
 */
export function inflateEntry(input: Buffer | ByteSource, entry: ZipEntry): InflateResult {
  const source = Buffer.isBuffer(input) ? bufferSource(input) : input;
  const compressed = source.read(entry.dataOffset, entry.compressedSize);
  return judged(entry, inflateFacts(compressed, entry.method, entry.uncompressedSize));
}

/**
 * inflateEntry for a caller that uses the data at once: a small deflated entry's data lies in a
 * buffer the next call on this thread overwrites (inflate-raw.mjs inflateFactsBorrowed), so what is
 * kept must be copied. The runner's loop over every entry uses it; the verdict is inflateEntry's.
 */
export function inflateEntryBorrowed(source: ByteSource, entry: ZipEntry): InflateResult {
  const compressed = source.read(entry.dataOffset, entry.compressedSize);
  return judged(entry, inflateFactsBorrowed(compressed, entry.method, entry.uncompressedSize));
}

function judged(entry: ZipEntry, facts: InflateFacts): InflateResult {
  // The facts as judgeInflate reads them, without spreading the data's object into a new one.
  const verdict = judgeInflate(
    entry,
    "failure" in facts ? facts : { length: facts.data.length, unread: facts.unread, crc: facts.crc },
  );
  return verdict.ok ? { ok: true, data: (facts as { data: Buffer }).data } : verdict;
}

export { inflateOneShot, reusedInflater } from "./inflate-raw.mjs";

function hex(n: number): string {
  return n.toString(16).padStart(8, "0");
}

/** Unix st_mode type bits of an entry, when known: only regular files and folders are acceptable. */
export function isSpecialFile(entry: ZipEntry): boolean {
  if (entry.unixMode === null) return false;
  const type = entry.unixMode & S_IFMT;
  return type !== 0 && type !== S_IFREG && type !== S_IFDIR;
}

export function isSymlink(entry: ZipEntry): boolean {
  return entry.unixMode !== null && (entry.unixMode & S_IFMT) === 0o120000;
}

/**
 * Permission bits no package needs, which extractors apply as they are: setuid, setgid, sticky and
 * world-writable (bsdtar run as root restored a DLL as 04777, unzip as 0777).
 */
export const UNSAFE_MODE_BITS = 0o7002;

/** The MS-DOS "directory" attribute: 7-Zip and bsdtar make a folder of an MS-DOS entry carrying it. */
const DOS_DIRECTORY = 0x10;

/**
 * Whether the attributes make the entry another type than its name does: a folder mode or the
 * MS-DOS folder bit on a name without a trailing '/' (bsdtar and 7-Zip make a folder, unzip and
 * Python a file), or a regular-file mode on one with it (unzip makes a folder without search
 * permission).
 */
export function typeDisagreesWithName(entry: ZipEntry): boolean {
  const slash = entry.name.charCodeAt(entry.name.length - 1) === 0x2f;
  if (!slash && entry.externalAttributes & DOS_DIRECTORY) return true;
  if (entry.unixMode === null) return false;
  const type = entry.unixMode & S_IFMT;
  return slash ? type === S_IFREG : type === S_IFDIR;
}

/** The clean case of every attribute rule at once: a regular file or folder, as its name says, with no unsafe permission bit. */
export function hasOrdinaryAttributes(entry: ZipEntry): boolean {
  const mode = entry.unixMode;
  if (mode !== null) {
    const type = mode & S_IFMT;
    if ((type !== 0 && type !== S_IFREG && type !== S_IFDIR) || mode & UNSAFE_MODE_BITS) return false;
  }
  return !typeDisagreesWithName(entry);
}
