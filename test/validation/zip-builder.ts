import * as zlib from "node:zlib";
import { crc32 } from "../../src/validation/zip/crc32.ts";

/**
 * A small ZIP writer for test fixtures. Good archives by default; every field can be overridden so
 * tests can produce each malformed structure the reader must refuse. Fixtures are made at test time,
 * never committed.
 */
export interface FixtureEntry {
  name: string | Buffer;
  data?: Buffer | string;
  /** 0 stored, 8 deflate (default for non-empty data), or anything else (data is then stored raw). */
  method?: number;
  flags?: number;
  /** Unix mode for external attributes (made-by Unix); default regular file 0644 or folder 0755. */
  unixMode?: number;
  /** Replace the compressed bytes written. */
  compressed?: Buffer;
  crc?: number;
  compressedSize?: number;
  uncompressedSize?: number;
  extra?: Buffer;
  /** Overrides applied to the local header only. */
  local?: Partial<{
    name: string | Buffer;
    method: number;
    flags: number;
    crc: number;
    compressedSize: number;
    uncompressedSize: number;
    versionNeeded: number;
  }>;
  /** Point the central record at another entry's local header (by index): an overlap. */
  shareLocalOf?: number;
  /** "Version needed to extract" in both headers (default 20); `local.versionNeeded` overrides the local one. */
  versionNeeded?: number;
  /** "Version made by" in the central record (default Unix, 2.0: 0x0314). */
  madeBy?: number;
  /** Write a data descriptor after the data (sets flag bit 3, zeroes the local CRC/sizes). */
  dataDescriptor?: boolean;
  /** Bytes written after this entry's data. */
  gapAfter?: Buffer;
}

export interface FixtureOptions {
  prefix?: Buffer;
  /** Bytes between the central directory and the end record. */
  beforeEnd?: Buffer;
  trailing?: Buffer;
  comment?: Buffer;
  eocd?: Partial<{
    totalEntries: number;
    entriesOnDisk: number;
    cdSize: number;
    cdOffset: number;
    disk: number;
    commentLength: number;
  }>;
  zip64Locator?: boolean;
  /** Cut this many bytes from the end of the result. */
  truncate?: number;
}

function centralRecord(
  name: Buffer,
  flags: number,
  method: number,
  crc: number,
  csize: number,
  usize: number,
  extra: Buffer,
  mode: number,
  localOffset: number,
  versions: { madeBy?: number; needed?: number } = {},
): Buffer {
  const c = Buffer.alloc(46);
  c.writeUInt32LE(0x02014b50, 0);
  c.writeUInt16LE(versions.madeBy ?? (3 << 8) | 20, 4);
  c.writeUInt16LE(versions.needed ?? 20, 6);
  c.writeUInt16LE(flags, 8);
  c.writeUInt16LE(method, 10);
  c.writeUInt16LE(0, 12);
  c.writeUInt16LE(0x21, 14);
  c.writeUInt32LE(crc, 16);
  c.writeUInt32LE(csize, 20);
  c.writeUInt32LE(usize, 24);
  c.writeUInt16LE(name.length, 28);
  c.writeUInt16LE(extra.length, 30);
  c.writeUInt32LE(((mode & 0xffff) << 16) >>> 0, 38);
  c.writeUInt32LE(localOffset, 42);
  return Buffer.concat([c, name, extra]);
}

function toBuffer(value: string | Buffer): Buffer {
  return typeof value === "string" ? Buffer.from(value, "utf8") : value;
}

export function buildZip(entries: FixtureEntry[], options: FixtureOptions = {}): Buffer {
  const parts: Buffer[] = [];
  let offset = 0;
  const push = (b: Buffer) => {
    parts.push(b);
    offset += b.length;
  };
  if (options.prefix) push(options.prefix);
  const central: Buffer[] = [];
  const localOffsets: number[] = [];
  const written: Array<{ crc: number; csize: number; usize: number; method: number; flags: number }> = [];
  for (const [i, entry] of entries.entries()) {
    const name = toBuffer(entry.name);
    const target = entry.shareLocalOf;
    if (target !== undefined) {
      // An overlap: a central record pointing at another entry's local header, with that entry's fields.
      const t = written[target]!;
      written.push(t);
      localOffsets.push(localOffsets[target]!);
      central.push(
        centralRecord(
          name,
          t.flags,
          t.method,
          t.crc,
          t.csize,
          t.usize,
          Buffer.alloc(0),
          0o100644,
          localOffsets[target]!,
        ),
      );
      continue;
    }
    const data = toBuffer(entry.data ?? "");
    const isDir = name.toString("latin1").endsWith("/");
    const method = entry.method ?? (data.length > 0 ? 8 : 0);
    const compressed = entry.compressed ?? (method === 8 ? zlib.deflateRawSync(data) : data);
    const utf8 = /[^\x00-\x7f]/.test(typeof entry.name === "string" ? entry.name : "") ? 0x0800 : 0;
    let flags = entry.flags ?? utf8;
    if (entry.dataDescriptor) flags |= 0x0008;
    const crc = entry.crc ?? crc32(data);
    const csize = entry.compressedSize ?? compressed.length;
    const usize = entry.uncompressedSize ?? data.length;
    const extra = entry.extra ?? Buffer.alloc(0);
    const l = entry.local ?? {};
    const localName = l.name !== undefined ? toBuffer(l.name) : name;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(l.versionNeeded ?? entry.versionNeeded ?? 20, 4);
    local.writeUInt16LE(l.flags ?? flags, 6);
    local.writeUInt16LE(l.method ?? method, 8);
    local.writeUInt16LE(0, 10);
    local.writeUInt16LE(0x21, 12);
    const zeroed = entry.dataDescriptor;
    local.writeUInt32LE(l.crc ?? (zeroed ? 0 : crc), 14);
    local.writeUInt32LE(l.compressedSize ?? (zeroed ? 0 : csize), 18);
    local.writeUInt32LE(l.uncompressedSize ?? (zeroed ? 0 : usize), 22);
    local.writeUInt16LE(localName.length, 26);
    local.writeUInt16LE(extra.length, 28);
    localOffsets.push(offset);
    push(local);
    push(localName);
    push(extra);
    push(compressed);
    if (entry.dataDescriptor) {
      const dd = Buffer.alloc(16);
      dd.writeUInt32LE(0x08074b50, 0);
      dd.writeUInt32LE(crc, 4);
      dd.writeUInt32LE(csize, 8);
      dd.writeUInt32LE(usize, 12);
      push(dd);
    }
    if (entry.gapAfter) push(entry.gapAfter);

    written.push({ crc, csize, usize, method, flags });
    const mode = entry.unixMode ?? (isDir ? 0o040755 : 0o100644);
    central.push(
      centralRecord(name, flags, method, crc, csize, usize, extra, mode, localOffsets[i]!, {
        ...(entry.madeBy !== undefined ? { madeBy: entry.madeBy } : {}),
        ...(entry.versionNeeded !== undefined ? { needed: entry.versionNeeded } : {}),
      }),
    );
  }
  const cdOffset = offset;
  for (const c of central) push(c);
  const cdSize = offset - cdOffset;
  if (options.beforeEnd) push(options.beforeEnd);
  if (options.zip64Locator) {
    const loc = Buffer.alloc(20);
    loc.writeUInt32LE(0x07064b50, 0);
    push(loc);
  }
  const comment = options.comment ?? Buffer.alloc(0);
  const e = options.eocd ?? {};
  const eocd = Buffer.alloc(22);
  eocd.writeUInt32LE(0x06054b50, 0);
  eocd.writeUInt16LE(e.disk ?? 0, 4);
  eocd.writeUInt16LE(0, 6);
  eocd.writeUInt16LE(e.entriesOnDisk ?? e.totalEntries ?? entries.length, 8);
  eocd.writeUInt16LE(e.totalEntries ?? entries.length, 10);
  eocd.writeUInt32LE(e.cdSize ?? cdSize, 12);
  eocd.writeUInt32LE(e.cdOffset ?? cdOffset, 16);
  eocd.writeUInt16LE(e.commentLength ?? comment.length, 20);
  push(eocd);
  push(comment);
  if (options.trailing) push(options.trailing);
  const all = Buffer.concat(parts);
  return options.truncate ? all.subarray(0, all.length - options.truncate) : all;
}

/** A minimal valid PE header (MZ stub pointing at "PE\0\0"), padded to `size` bytes. */
export function fakePe(size = 512): Buffer {
  const b = Buffer.alloc(Math.max(size, 0x84));
  b.write("MZ", 0, "latin1");
  b.writeUInt32LE(0x80, 0x3c);
  b.write("PE\0\0", 0x80, "latin1");
  return b;
}

export function fakeElf(size = 256): Buffer {
  const b = Buffer.alloc(size);
  Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]).copy(b);
  return b;
}

export function fakePng(size = 128): Buffer {
  const b = Buffer.alloc(size, 7);
  Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]).copy(b);
  return b;
}
