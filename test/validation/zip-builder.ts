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
  /** Extra field of both headers (default none); `local.extra` overrides the local header's. */
  extra?: Buffer;
  /** The central record's external attributes, whole (default: `unixMode` in the upper 16 bits). */
  externalAttributes?: number;
  /** The central record's file comment. */
  comment?: Buffer;
  /** Overrides applied to the local header only. */
  local?: Partial<{
    name: string | Buffer;
    extra: Buffer;
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
  attributes: { external?: number; comment?: Buffer } = {},
): Buffer {
  const comment = attributes.comment ?? Buffer.alloc(0);
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
  c.writeUInt16LE(comment.length, 32);
  c.writeUInt32LE(attributes.external ?? ((mode & 0xffff) << 16) >>> 0, 38);
  c.writeUInt32LE(localOffset, 42);
  return Buffer.concat([c, name, extra, comment]);
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
    const localExtra = l.extra ?? extra;
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
    local.writeUInt16LE(localExtra.length, 28);
    localOffsets.push(offset);
    push(local);
    push(localName);
    push(localExtra);
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
      centralRecord(
        name,
        flags,
        method,
        crc,
        csize,
        usize,
        extra,
        mode,
        localOffsets[i]!,
        {
          ...(entry.madeBy !== undefined ? { madeBy: entry.madeBy } : {}),
          ...(entry.versionNeeded !== undefined ? { needed: entry.versionNeeded } : {}),
        },
        {
          ...(entry.externalAttributes !== undefined ? { external: entry.externalAttributes } : {}),
          ...(entry.comment !== undefined ? { comment: entry.comment } : {}),
        },
      ),
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

/**
 * Extra field blocks, laid out byte by byte as APPNOTE 4.5 and Info-ZIP's extrafld.txt give them.
 * Every block is a 2-byte id and a 2-byte body size (both little-endian), then the body.
 */
export const extraBlock = {
  raw(id: number, body: Buffer): Buffer {
    const head = Buffer.alloc(4);
    head.writeUInt16LE(id, 0);
    head.writeUInt16LE(body.length, 2);
    return Buffer.concat([head, body]);
  },
  /** 0x7075 Info-ZIP Unicode Path: version (1), CRC-32 of the header's name bytes (4), the name in UTF-8. */
  unicodePath(headerName: string, text: string, options: { version?: number; crc?: number } = {}): Buffer {
    const body = Buffer.alloc(5);
    body.writeUInt8(options.version ?? 1, 0);
    body.writeUInt32LE(options.crc ?? crc32(Buffer.from(headerName, "utf8")), 1);
    return extraBlock.raw(0x7075, Buffer.concat([body, Buffer.from(text, "utf8")]));
  },
  /** 0x6375 Info-ZIP Unicode Comment: version (1), CRC-32 of the header's comment (4), the comment in UTF-8. */
  unicodeComment(headerComment: Buffer, text: string): Buffer {
    const body = Buffer.alloc(5);
    body.writeUInt8(1, 0);
    body.writeUInt32LE(crc32(headerComment), 1);
    return extraBlock.raw(0x6375, Buffer.concat([body, Buffer.from(text, "utf8")]));
  },
  /**
   * 0x756e ASi Unix: CRC-32 of what follows (4), st_mode (2), link target length (4), uid (2),
   * gid (2), link target.
   */
  asiUnix(mode: number, linkTarget: string): Buffer {
    const link = Buffer.from(linkTarget, "utf8");
    const rest = Buffer.alloc(10);
    rest.writeUInt16LE(mode, 0);
    rest.writeUInt32LE(link.length, 2);
    const fields = Buffer.concat([rest, link]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32LE(crc32(fields), 0);
    return extraBlock.raw(0x756e, Buffer.concat([crc, fields]));
  },
  /** 0x000d PKWARE Unix: atime (4), mtime (4), uid (2), gid (2), then a link target or device numbers. */
  pkwareUnix(linkTarget: string): Buffer {
    return extraBlock.raw(0x000d, Buffer.concat([Buffer.alloc(12), Buffer.from(linkTarget, "utf8")]));
  },
  /** 0x000a NTFS: reserved (4), then tags: tag (2), size (2), body; tag 1 holds mtime, atime, ctime (8 each). */
  ntfs(options: { tag?: number; tagSize?: number; mtime?: bigint } = {}): Buffer {
    const size = options.tagSize ?? 24;
    const body = Buffer.alloc(8 + size);
    body.writeUInt16LE(options.tag ?? 1, 4);
    body.writeUInt16LE(size, 6);
    if (size >= 8) body.writeBigUInt64LE(options.mtime ?? 133_500_000_000_000_000n, 8);
    return extraBlock.raw(0x000a, body);
  },
  /** 0x5455 extended timestamp "UT": flags (1: bit 0 mtime, 1 atime, 2 ctime), then the flagged times present (4 each). */
  timestamp(flags: number, times: number[]): Buffer {
    const body = Buffer.alloc(1 + 4 * times.length);
    body.writeUInt8(flags, 0);
    for (const [i, t] of times.entries()) body.writeUInt32LE(t, 1 + 4 * i);
    return extraBlock.raw(0x5455, body);
  },
  /** 0x5855 Info-ZIP Unix "UX" (old): atime (4), mtime (4), and in a local header uid (2), gid (2). */
  unixOld(atime: number, mtime: number, ids?: { uid: number; gid: number }): Buffer {
    const body = Buffer.alloc(ids ? 12 : 8);
    body.writeUInt32LE(atime, 0);
    body.writeUInt32LE(mtime, 4);
    if (ids) {
      body.writeUInt16LE(ids.uid, 8);
      body.writeUInt16LE(ids.gid, 10);
    }
    return extraBlock.raw(0x5855, body);
  },
  /** 0x7855 Info-ZIP Unix "Ux": uid (2), gid (2) in a local header; empty in the central directory. */
  unixIds(ids?: { uid: number; gid: number }): Buffer {
    const body = Buffer.alloc(ids ? 4 : 0);
    if (ids) {
      body.writeUInt16LE(ids.uid, 0);
      body.writeUInt16LE(ids.gid, 2);
    }
    return extraBlock.raw(0x7855, body);
  },
  /** 0x7875 Info-ZIP Unix "ux": version 1 (1), uid size (1), uid, gid size (1), gid (little-endian). */
  unixOwner(uid: number, gid: number, idSize = 4): Buffer {
    const body = Buffer.alloc(3 + 2 * idSize);
    body.writeUInt8(1, 0);
    body.writeUInt8(idSize, 1);
    body.writeUIntLE(uid, 2, idSize);
    body.writeUInt8(idSize, 2 + idSize);
    body.writeUIntLE(gid, 3 + idSize, idSize);
    return extraBlock.raw(0x7875, body);
  },
  /** 0x6c78 libarchive "xl": bitmap (1: bit 0 version made by (2), bit 1 internal (2), bit 2 external attributes (4)). */
  libarchive(versionMadeBy: number, externalAttributes: number): Buffer {
    const body = Buffer.alloc(7);
    body.writeUInt8(0b101, 0);
    body.writeUInt16LE(versionMadeBy, 1);
    body.writeUInt32LE(externalAttributes >>> 0, 3);
    return extraBlock.raw(0x6c78, body);
  },
};
