/**
 * Stamping generated documents against the site on disk: a document whose content (all but
 * generatedAt) equals the file's keeps the file's bytes and timestamp, so a rebuild with no input
 * change changes no byte. One document at a time (stampMade), or a document that lists every mod
 * made entry by entry (ListDocument): each entry is kept as its text as the document carries it
 * (never as objects), checked against the document's schema entry by entry, and the document is
 * compared with the file on disk in chunks, so a build over an unchanged site never holds such a
 * document whole (at 50,000 mods x 5 catalog.json is 73.6 MB of text, several times that as
 * objects). Its bytes are exactly serializeDocument's of the whole document
 * (test/catalog/site-render-work.test.ts holds them to it).
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from "node:fs";
import { SvcError } from "../errors.ts";
import { join } from "node:path";
import {
  formatIssues,
  type SchemaIssue,
  type SchemaName,
  type SchemaRegistry,
} from "../contracts/schemas.ts";

/** Placeholder swapped for a real timestamp only in documents whose content changed. */
export const PENDING_TIMESTAMP = "1970-01-01T00:00:00.000Z";

export function serializeDocument(document: unknown): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}

/** The top-level generatedAt of a document as serializeDocument writes it (two-space indented keys). */
export const TOP_LEVEL_STAMP = /^ {2}"generatedAt": "([^"\\]*)"/m;

/** How serializeDocument ends a document whose last key is an empty `mods` list. */
const EMPTY_LIST_TAIL = '"mods": []\n}\n';
const LIST_CLOSE = "\n  ]\n}\n";
/** Entries sit two levels deep (the document, its mods array): each line is indented four spaces. */
const ENTRY_INDENT = "    ";

/** A document as the render makes it: unvalidated, its timestamp pending. */
export interface GeneratedDocument {
  path: string;
  schema: SchemaName;
  document: Record<string, unknown> & { generatedAt?: string };
}

function readIfExists(path: string): string | undefined {
  return existsSync(path) ? readFileSync(path, "utf8") : undefined;
}

/**
 * The bytes of one generated document, schema-checked. A document whose content (all but
 * generatedAt) equals what is already on disk keeps its old bytes, so a rebuild with no input change
 * changes no byte; otherwise it is stamped with `stamp`. `value` is the document as its text parses
 * (what the pages are rendered from), `onDisk` whether the file on disk has exactly these bytes.
 */
export function stampDocument(
  registry: SchemaRegistry,
  siteDir: string,
  path: string,
  schema: SchemaName,
  document: Record<string, unknown> & { generatedAt?: string },
  stamp: string,
): StampedDocument {
  return stampMade(registry, siteDir, () => ({ path, schema, document }), stamp);
}

export type StampedDocument =
  | { ok: true; text: string; value: unknown; onDisk: "same" | "differs" }
  | { ok: false; text: string; value: unknown; onDisk: "same" | "differs"; failure: string };

/**
 * stampDocument of a document made by `make`, which it lets go (and the file it read) before it
 * parses the text: a document that lists every mod is never held as an object twice.
 */
export function stampMade(
  registry: SchemaRegistry,
  siteDir: string,
  make: () => GeneratedDocument,
  stamp: string,
): StampedDocument & { path: string } {
  let made: GeneratedDocument | undefined = make();
  const { path, schema } = made;
  let existing = readIfExists(join(siteDir, path));
  let text: string | undefined;
  if (existing !== undefined) {
    // The common case first: the file is as this code writes it, so the document with the file's
    // timestamp either is its bytes or differs in content. One serialization, no parse.
    const kept = TOP_LEVEL_STAMP.exec(existing)?.[1];
    if (kept !== undefined) {
      const candidate = serializeDocument({ ...made.document, generatedAt: kept });
      if (candidate === existing) text = existing;
    }
    // Otherwise compare content as parsed (a file formatted by hand keeps its timestamp if its
    // content is the same).
    if (text === undefined) text = keptTimestampText(existing, made.document);
  }
  text ??= serializeDocument({ ...made.document, generatedAt: stamp });
  made = undefined;
  const onDisk = text === existing ? "same" : "differs";
  existing = undefined;
  const value = JSON.parse(text) as unknown;
  const result = registry.validate(schema, value);
  if (!result.ok)
    return {
      ok: false,
      path,
      text,
      value,
      onDisk,
      failure: `${path} (${schema}):\n${formatIssues(result.issues)}`,
    };
  return { ok: true, path, text, value, onDisk };
}

/** The document's text with the existing file's timestamp when their content is the same, else undefined. */
function keptTimestampText(
  existing: string,
  document: Record<string, unknown> & { generatedAt?: string },
): string | undefined {
  try {
    const parsed = JSON.parse(existing) as { generatedAt?: unknown };
    if (
      typeof parsed.generatedAt === "string" &&
      serializeDocument({ ...parsed, generatedAt: PENDING_TIMESTAMP }) ===
        serializeDocument({ ...document, generatedAt: PENDING_TIMESTAMP })
    ) {
      return serializeDocument({ ...document, generatedAt: parsed.generatedAt });
    }
  } catch {
    // An unparseable file is simply replaced.
  }
  return undefined;
}

/** How many entries are checked with the schema at once (the head's own checks paid once per batch). */
const CHECK_BATCH = 256;

/**
 * A document of the form { ...head, mods: [entries] } (mods its last key), made entry by entry.
 * Each added entry is serialized once and parsed back (the value a page is rendered from is the very
 * text written); the entries are checked with the document's schema a batch at a time, as the mods
 * of a document with a valid head, and the real head once, when the document is stamped.
 */
export class ListDocument {
  readonly path: string;
  readonly schema: SchemaName;
  private readonly registry: SchemaRegistry;
  /** Each entry's text as the document carries it (indented), in order. */
  private readonly items: string[] = [];
  private readonly issues: SchemaIssue[] = [];
  /** A valid head the entries are checked inside. */
  private readonly probeHead: Record<string, unknown>;
  /** Parsed entries not checked yet, and the index of the first. */
  private batch: unknown[] = [];
  private batchStart = 0;

  constructor(
    registry: SchemaRegistry,
    path: string,
    schema: SchemaName,
    probeHead: Record<string, unknown>,
  ) {
    this.registry = registry;
    this.path = path;
    this.schema = schema;
    this.probeHead = probeHead;
  }

  get length(): number {
    return this.items.length;
  }

  /**
   * Adds one entry; its value as its text parses. Whether it passes the schema is known when the
   * document is stamped (a page made from a failing entry is never written: the render throws).
   */
  add(entry: unknown): unknown {
    const text = `${ENTRY_INDENT}${JSON.stringify(entry, null, 2).replaceAll("\n", `\n${ENTRY_INDENT}`)}`;
    this.items.push(text);
    const value = JSON.parse(text) as unknown;
    this.batch.push(value);
    if (this.batch.length >= CHECK_BATCH) this.check();
    return value;
  }

  /** Checks the entries of the batch; their issues, renumbered to their place in the list. */
  private check(): void {
    if (this.batch.length === 0) return;
    const result = this.registry.validate(this.schema, { ...this.probeHead, mods: this.batch });
    if (!result.ok)
      for (const issue of result.issues) {
        // Only the entries' own issues (the probe head is valid).
        const match = /^\/mods\/(\d+)(\/.*)?$/.exec(issue.path);
        if (match)
          this.issues.push({
            ...issue,
            path: `/mods/${this.batchStart + Number(match[1])}${match[2] ?? ""}`,
          });
      }
    this.batchStart += this.batch.length;
    this.batch = [];
  }

  /** Calls `fn` with the document's text in order, piece by piece, with `head` stamped `generatedAt`. */
  private forEachPiece(head: Record<string, unknown>, generatedAt: string, fn: (piece: string) => void) {
    const headText = serializeDocument({ ...head, generatedAt, mods: [] });
    if (!headText.endsWith(EMPTY_LIST_TAIL))
      throw new SvcError("internal_error", `${this.path}: mods must be the document's last key`);
    if (this.items.length === 0) {
      fn(headText);
      return;
    }
    fn(`${headText.slice(0, -EMPTY_LIST_TAIL.length)}"mods": [\n`);
    this.items.forEach((item, i) => {
      if (i > 0) fn(",\n");
      fn(item);
    });
    fn(LIST_CLOSE);
  }

  /** The whole text (what a write needs). */
  text(head: Record<string, unknown>, generatedAt: string): string {
    const pieces: string[] = [];
    this.forEachPiece(head, generatedAt, (piece) => pieces.push(piece));
    return pieces.join("");
  }

  /**
   * stampDocument for this document: the existing file's timestamp kept when its content is the
   * same (found without a parse when the file is as this code writes it: a chunked comparison),
   * else `stamp`. `text` is undefined when the file on disk has exactly these bytes and `needText`
   * is false. The schema failure names every failing entry (with the head's own issues first).
   */
  stamp(
    full: string,
    head: Record<string, unknown>,
    stamp: string,
    needText: boolean,
  ): { text: string | undefined; onDisk: "same" | "differs"; failure: string | undefined } {
    this.check();
    let generatedAt = stamp;
    let onDisk: "same" | "differs" = "differs";
    if (existsSync(full)) {
      // One open: the timestamp from the file's first bytes, then the chunked comparison.
      const kept = withFile(full, (fd, size) => {
        const found = keptStamp(fd, size, full);
        return found !== undefined && sameAsPieces(fd, size, (fn) => this.forEachPiece(head, found, fn))
          ? found
          : undefined;
      });
      if (kept !== undefined) {
        generatedAt = kept;
        onDisk = "same";
      } else {
        const parsedStamp = this.sameContentStamp(full, head);
        if (parsedStamp !== undefined) {
          generatedAt = parsedStamp;
          const each = (fn: (piece: string) => void) => this.forEachPiece(head, parsedStamp, fn);
          if (withFile(full, (fd, size) => sameAsPieces(fd, size, each))) onDisk = "same";
        }
      }
    }
    const headResult = this.registry.validate(
      this.schema,
      JSON.parse(serializeDocument({ ...head, generatedAt, mods: [] })),
    );
    const issues = [...(headResult.ok ? [] : headResult.issues), ...this.issues];
    return {
      text: onDisk === "same" && !needText ? undefined : this.text(head, generatedAt),
      onDisk,
      failure: issues.length > 0 ? `${this.path} (${this.schema}):\n${formatIssues(issues)}` : undefined,
    };
  }

  /**
   * The file's generatedAt when its content (all but generatedAt, as parsed: a file formatted by
   * hand keeps its timestamp) is this document's; undefined otherwise or when it does not parse.
   * The slow path (the file is not as this code writes it): the file is parsed whole, entries
   * compared one at a time.
   */
  private sameContentStamp(full: string, head: Record<string, unknown>): string | undefined {
    let parsed: { generatedAt?: unknown; mods?: unknown };
    try {
      parsed = JSON.parse(readFileSync(full, "utf8")) as typeof parsed;
    } catch {
      // An unparseable file is simply replaced.
      return undefined;
    }
    if (typeof parsed !== "object" || parsed === null || typeof parsed.generatedAt !== "string")
      return undefined;
    const mods = parsed.mods;
    if (!Array.isArray(mods) || mods.length !== this.items.length) return undefined;
    const headOf = (doc: Record<string, unknown>) =>
      serializeDocument({ ...doc, generatedAt: PENDING_TIMESTAMP, mods: [] });
    if (headOf(parsed) !== headOf(head)) return undefined;
    for (let i = 0; i < mods.length; i++) {
      const text = `${ENTRY_INDENT}${JSON.stringify(mods[i], null, 2).replaceAll("\n", `\n${ENTRY_INDENT}`)}`;
      if (text !== this.items[i]) return undefined;
    }
    return parsed.generatedAt;
  }
}

/** How much of a file keptStamp reads first: the top-level timestamp is on its second line. */
const HEAD_BYTES = 64 * 1024;

/** Two reused buffers for the chunked comparison (and the first bytes keptStamp reads). */
const CHUNK = 1 << 20;
const want = Buffer.allocUnsafe(CHUNK);
const have = Buffer.allocUnsafe(CHUNK);

/** fn with the file open for reading and its size; undefined when it cannot be opened. */
function withFile<T>(full: string, fn: (fd: number, size: number) => T): T | undefined {
  let fd: number;
  try {
    fd = openSync(full, "r");
  } catch {
    return undefined;
  }
  try {
    return fn(fd, fstatSync(fd).size);
  } finally {
    closeSync(fd);
  }
}

/** Reads `length` bytes at `position` into `into` (fewer at the end of the file); how many. */
function readAt(fd: number, into: Buffer, length: number, position: number): number {
  let at = 0;
  while (at < length) {
    const n = readSync(fd, into, at, length - at, position + at);
    if (n === 0) break;
    at += n;
  }
  return at;
}

/**
 * The top-level generatedAt of the file as TOP_LEVEL_STAMP finds it in the whole text, read from its
 * first 64 KiB when it is there: a match there is the first in the file (one cut off at the end of
 * those bytes has no match after it there), and only a file without one is read whole.
 */
function keptStamp(fd: number, size: number, full: string): string | undefined {
  const length = readAt(fd, have, Math.min(HEAD_BYTES, size), 0);
  const found = TOP_LEVEL_STAMP.exec(have.toString("utf8", 0, length))?.[1];
  if (found !== undefined || size <= HEAD_BYTES) return found;
  return TOP_LEVEL_STAMP.exec(readFileSync(full, "utf8"))?.[1];
}

/**
 * Whether the open file (of `size` bytes) has exactly the bytes of the pieces `each` hands over, in
 * order: their total length against the size first, then both compared a chunk (1 MiB) at a time.
 */
export function sameAsPieces(fd: number, size: number, each: (fn: (piece: string) => void) => void): boolean {
  let total = 0;
  each((piece) => {
    total += Buffer.byteLength(piece, "utf8");
  });
  if (total !== size) return false;
  let position = 0;
  let fill = 0;
  let same = true;
  const flush = () => {
    if (!same || fill === 0) return;
    if (readAt(fd, have, fill, position) !== fill || have.compare(want, 0, fill, 0, fill) !== 0) same = false;
    position += fill;
    fill = 0;
  };
  each((piece) => {
    if (!same) return;
    const length = Buffer.byteLength(piece, "utf8");
    if (length > CHUNK - fill) flush();
    if (length <= CHUNK) {
      fill += want.write(piece, fill, "utf8");
      return;
    }
    const bytes = Buffer.from(piece, "utf8");
    for (let at = 0; at < bytes.length && same; at += CHUNK) {
      fill = bytes.copy(want, 0, at, Math.min(bytes.length, at + CHUNK));
      flush();
    }
  });
  flush();
  return same && position === size;
}
