import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import type { SplicedContent } from "./spliced-content.ts";

/**
 * The index documents that list every mod (catalog.json, mods/index.json), read by ranges and
 * patched as splices of the file on disk: how renderModChange changes one mod's entry without
 * reading, parsing or holding the document (73 MB and 34 MB at 50,000 mods).
 */
const MODS_ARRAY = '\n  "mods": [';
const ENTRY_PREFIX = Buffer.from('\n    {\n      "id": "');
const ENTRY_END = Buffer.from("\n    }");
const DOCUMENT_END = Buffer.from("\n  ]\n}\n");
const EMPTY_END = Buffer.from("]\n}\n");

export interface IndexLayout {
  /** The document without its mods, parsed (what a one-mod schema check needs besides the entry). */
  header: Record<string, unknown>;
  /** The text before the array's first character, as written. */
  head: string;
  /** Byte offset of the first byte inside the mods array. */
  arrayStart: number;
  /** Byte offset of the array's closing "\n  ]" (arrayStart when the array is empty). */
  arrayClose: number;
  empty: boolean;
}

/** Bytes searched per read of an index document (an entry is ~1.5 KB). */
const PROBE = 16_384;

/**
 * An index document on disk, read by ranges: it lists every mod (70 MB at 50,000 mods), and a
 * publication needs its header, the O(log mods) entries a binary search probes, and its length.
 * The rest is copied into the new file by the commit in chunks (SplicedContent), never held here.
 */
export class IndexFile {
  private constructor(
    private readonly fd: number,
    readonly path: string,
    readonly stat: { size: number; mtimeMs: number; ino: number },
  ) {}

  static open(path: string): IndexFile | undefined {
    let fd: number;
    try {
      fd = openSync(path, "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
    const { size, mtimeMs, ino } = fstatSync(fd);
    return new IndexFile(fd, path, { size, mtimeMs, ino });
  }

  get size(): number {
    return this.stat.size;
  }

  read(start: number, end: number): Buffer {
    const from = Math.max(0, start);
    const bytes = Buffer.allocUnsafe(Math.max(0, Math.min(end, this.size) - from));
    let got = 0;
    while (got < bytes.length) {
      const n = readSync(this.fd, bytes, got, bytes.length - got, from + got);
      if (n === 0) break;
      got += n;
    }
    return bytes.subarray(0, got);
  }

  /** Offset of the first `pattern` starting in [from, limit), or -1. */
  indexOf(pattern: Buffer, from: number, limit = this.size): number {
    for (let at = from; at < limit; at += PROBE) {
      // Overlapping reads, so a match across two probes is found in the first.
      const window = this.read(at, Math.min(at + PROBE + pattern.length - 1, this.size));
      const found = window.indexOf(pattern);
      if (found !== -1) return at + found < limit ? at + found : -1;
    }
    return -1;
  }

  equalsAt(start: number, bytes: Buffer): boolean {
    return start >= 0 && this.read(start, start + bytes.length).equals(bytes);
  }

  /** The whole file (the rare paths that must parse a document). */
  readAll(): Buffer {
    return this.read(0, this.size);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/**
 * Reads the layout of an index document (catalog.json, mods/index.json) as serializeDocument writes
 * it: "mods" is the last field and each mod is an object at indent 4 whose first key is "id", in id
 * order. A newline inside a JSON string is always escaped, so "\n    {" can only start a mods entry.
 * Only the header before the array is read and decoded, and the document's last bytes.
 * null when the text has another layout (hand-edited, or written by an older version): the caller
 * re-renders the whole site then.
 */
export function readIndexLayout(file: IndexFile): IndexLayout | null {
  const at = file.indexOf(Buffer.from(MODS_ARRAY), 0);
  if (at === -1) return null;
  // The fields before the array must be exactly as serializeDocument writes them.
  const head = file.read(0, at).toString("utf8");
  let header: Record<string, unknown>;
  try {
    header = JSON.parse(`${head.replace(/,$/, "")}\n}`) as Record<string, unknown>;
    if (`${JSON.stringify(header, null, 2).slice(0, -2)},` !== head) return null;
  } catch {
    return null;
  }
  const arrayStart = at + Buffer.byteLength(MODS_ARRAY);
  const headText = file.read(0, arrayStart).toString("utf8");
  if (file.read(arrayStart, arrayStart + 1)[0] === 93 /* ] */)
    return file.size - arrayStart === EMPTY_END.length && file.equalsAt(arrayStart, EMPTY_END)
      ? { header, head: headText, arrayStart, arrayClose: arrayStart, empty: true }
      : null;
  if (
    !file.equalsAt(arrayStart, ENTRY_PREFIX) ||
    !file.equalsAt(file.size - DOCUMENT_END.length, DOCUMENT_END)
  )
    return null;
  return {
    header,
    head: headText,
    arrayStart,
    arrayClose: file.size - DOCUMENT_END.length,
    empty: false,
  };
}

function idAt(file: IndexFile, entryStart: number): string {
  const from = entryStart + ENTRY_PREFIX.length;
  // Mod ids are ASCII ([a-z0-9-]), so latin1 decoding is exact and byte order is string order.
  const end = file.indexOf(Buffer.from('"'), from);
  return file.read(from, end === -1 ? from : end).toString("latin1");
}

/**
 * Where modId's entry is, or where it would go: a binary search over byte offsets (the entries are
 * in id order), O(log mods) probes of one entry each; the document is never scanned or parsed whole.
 */
export function locateEntry(
  file: IndexFile,
  layout: IndexLayout,
  modId: string,
): { start: number; end: number; found: boolean } {
  if (layout.empty) return { start: layout.arrayStart, end: layout.arrayStart, found: false };
  const nextEntry = (from: number) => {
    const at = file.indexOf(ENTRY_PREFIX, from, layout.arrayClose);
    return at === -1 ? layout.arrayClose : at;
  };
  let lo = layout.arrayStart;
  let hi = layout.arrayClose;
  // Invariant: every entry starting before lo has an id < modId; the first entry at or after hi, >= modId.
  while (lo < hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    const at = nextEntry(mid);
    if (at >= hi) hi = mid;
    else if (idAt(file, at) < modId) lo = at + 1;
    else hi = at;
  }
  const start = nextEntry(lo);
  if (start === layout.arrayClose || idAt(file, start) !== modId) return { start, end: start, found: false };
  return { start, end: file.indexOf(ENTRY_END, start) + ENTRY_END.length, found: true };
}

function entryText(entry: unknown): string {
  return `\n    ${JSON.stringify(entry, null, 2).replaceAll("\n", "\n    ")}`;
}

/**
 * The index document with one mod's entry replaced, inserted (in id order) or removed, and
 * generatedAt (and count, when present) updated, as a splice of the file on disk: byte-identical to
 * serializing the patched document. null when the entry is the same (the file stays as it is).
 */
export function patchIndex(
  file: IndexFile,
  layout: IndexLayout,
  modId: string,
  entry: unknown | null,
  generatedAt: string,
): SplicedContent | null {
  const place = locateEntry(file, layout, modId);
  const next = entry === null ? null : Buffer.from(entryText(entry));
  if (place.found && next && file.equalsAt(place.start, next) && next.length === place.end - place.start)
    return null;
  if (!place.found && next === null) return null;
  type Part = Buffer | { start: number; end: number };
  const range = (start: number, end: number): Part[] => (end > start ? [{ start, end }] : []);
  let body: Part[];
  let countChange = 0;
  const COMMA = Buffer.from(",");
  if (place.found && next !== null) {
    body = [...range(layout.arrayStart, place.start), next, ...range(place.end, layout.arrayClose)];
  } else if (place.found) {
    countChange = -1;
    let before = { start: layout.arrayStart, end: place.start };
    let after = { start: place.end, end: layout.arrayClose };
    // Drop the entry with one of the commas around it.
    if (after.end > after.start && file.read(after.start, after.start + 1)[0] === 44 /* , */)
      after = { ...after, start: after.start + 1 };
    else if (before.end > before.start && file.read(before.end - 1, before.end)[0] === 44)
      before = { ...before, end: before.end - 1 };
    body = [...range(before.start, before.end), ...range(after.start, after.end)];
  } else {
    countChange = 1;
    const before = range(layout.arrayStart, place.start);
    const after = range(place.start, layout.arrayClose);
    body = layout.empty
      ? [next!]
      : after.length === 0
        ? [...before, COMMA, next!]
        : [...before, next!, COMMA, ...after];
  }
  let head = layout.head.replace(
    /\n {2}"generatedAt": "[^"]*"/,
    `\n  "generatedAt": ${JSON.stringify(generatedAt)}`,
  );
  if (typeof layout.header.count === "number")
    head = head.replace(/\n {2}"count": \d+,/, `\n  "count": ${layout.header.count + countChange},`);
  const empty = body.length === 0;
  return {
    splice: {
      source: file.path,
      expect: file.stat,
      parts: [Buffer.from(head), ...body, empty ? EMPTY_END : DOCUMENT_END],
    },
  };
}

/** A splice made whole (the rare paths that must parse the patched document). */
export function materialize(file: IndexFile, content: SplicedContent | null): Buffer {
  if (!content) return file.readAll();
  return Buffer.concat(
    content.splice.parts.map((part) => (part instanceof Uint8Array ? part : file.read(part.start, part.end))),
  );
}
