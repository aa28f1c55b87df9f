import type { ZipCaps, ZipEntry, ZipFinding } from "./reader.ts";
import {
  hasOrdinaryAttributes,
  isSpecialFile,
  isSymlink,
  typeDisagreesWithName,
  UNSAFE_MODE_BITS,
} from "./reader.ts";

/**
 * Name safety: an archive name must be usable as the same relative path on Windows, macOS and Linux,
 * inside the install folder, and mean exactly one file. Names are analysed, never used as paths.
 */

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;
// Bidirectional overrides/isolates and invisible characters that disguise a name's real extension.
const BIDI_OR_INVISIBLE = /[\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/;
const WINDOWS_FORBIDDEN = /[<>"|?*]/;
// Printable ASCII without \ : < > " | ? * and not starting with a slash: none of the character
// findings apply (no control, bidi, backslash, drive, colon or forbidden character; not absolute).
const PLAIN_NAME = /^[A-Za-z0-9 !#$%&'()+,.;=@[\]^_`{}~-][A-Za-z0-9 !#$%&'()+,./;=@[\]^_`{}~-]*$/;
const RESERVED = new Set([
  "CON",
  "PRN",
  "AUX",
  "NUL",
  "CONIN$",
  "CONOUT$",
  ...Array.from({ length: 9 }, (_, i) => `COM${i + 1}`),
  ...Array.from({ length: 9 }, (_, i) => `LPT${i + 1}`),
  // Windows also reserves the superscript digits.
  "COM¹",
  "COM²",
  "COM³",
  "LPT¹",
  "LPT²",
  "LPT³",
]);

/** Whether the segment `name[start, end)` (the whole string by default) names a Windows device. */
export function isReservedDeviceName(name: string, start = 0, end = name.length): boolean {
  // Every device name starts with C, P, A, N or L (tested without a regex: this runs per segment).
  const first = name.charCodeAt(start) | 0x20;
  if (
    start >= end ||
    (first !== 0x63 && first !== 0x70 && first !== 0x61 && first !== 0x6e && first !== 0x6c)
  )
    return false;
  // The part before the first dot, without trailing spaces (it holds no dot to trim).
  let stop = name.indexOf(".", start);
  if (stop === -1 || stop > end) stop = end;
  while (stop > start && name.charCodeAt(stop - 1) === 0x20) stop--;
  // CON, COM1, CONIN$, CONOUT$: 3, 4, 6 or 7 characters.
  const length = stop - start;
  if (length < 3 || length === 5 || length > 7) return false;
  // Past three characters the fourth is a digit (COM1, LPT¹) or the I/O of CONIN$/CONOUT$: an ASCII
  // fourth character other than those rules the segment out without a slice ("Content" is 7 long,
  // as CONOUT$ is). A non-ASCII one goes on (U+0131 dotless i uppercases to I).
  if (length > 3) {
    const fourth = name.charCodeAt(start + 3);
    if (
      fourth < 0x80 &&
      !(fourth >= 0x31 && fourth <= 0x39) &&
      (fourth | 0x20) !== 0x69 &&
      (fourth | 0x20) !== 0x6f
    )
      return false;
  }
  return RESERVED.has(name.slice(start, stop).toUpperCase());
}

/** Problems with one name on its own. */
export function analyzeName(
  entry: ZipEntry,
  caps: Pick<ZipCaps, "maxNameBytes" | "maxPathDepth">,
): ZipFinding[] {
  return isCleanPlainName(entry, caps) ? [] : analyzeNameFully(entry, caps);
}

/**
 * The common case in one pass over the name, without the findings' closures or a split: a plain
 * ASCII name (PLAIN_NAME) of a file or folder, within the caps, whose segments are neither empty,
 * "." nor "..", end in no dot or space and name no Windows device. False sends the name through
 * every rule (analyzeNameFully), which then reports what this shortcut saw; the fast-paths test
 * checks the two agree.
 */
function isCleanPlainName(entry: ZipEntry, caps: Pick<ZipCaps, "maxNameBytes" | "maxPathDepth">): boolean {
  const name = entry.name;
  if (
    !entry.nameDecoded ||
    entry.unicodePathName !== null ||
    entry.rawName.length > caps.maxNameBytes ||
    name.length === 0 ||
    !hasOrdinaryAttributes(entry) ||
    !PLAIN_NAME.test(name)
  )
    return false;
  // A folder's one trailing slash ends its last segment (analyzeNameFully drops that empty segment).
  const end = entry.isDirectory && name.charCodeAt(name.length - 1) === 0x2f ? name.length - 1 : name.length;
  let depth = 0;
  for (let start = 0; ; ) {
    let slash = name.indexOf("/", start);
    if (slash === -1 || slash > end) slash = end;
    const length = slash - start;
    if (length === 0) return false;
    const first = name.charCodeAt(start);
    if (first === 0x2e && (length === 1 || (length === 2 && name.charCodeAt(start + 1) === 0x2e)))
      return false;
    const last = name.charCodeAt(slash - 1);
    if (last === 0x2e || last === 0x20) return false;
    if (isReservedDeviceName(name, start, slash)) return false;
    depth++;
    if (slash >= end) break;
    start = slash + 1;
  }
  return depth <= caps.maxPathDepth;
}

/** Every rule for one name, each problem reported (analyzeName's shortcut aside). */
export function analyzeNameFully(
  entry: ZipEntry,
  caps: Pick<ZipCaps, "maxNameBytes" | "maxPathDepth">,
): ZipFinding[] {
  const found: ZipFinding[] = [];
  const name = entry.name;
  // Built on the first finding only: most names have none, and this runs for every entry.
  let label: string | undefined;
  const add = (code: ZipFinding["code"], why: string) => {
    label ??= entry.nameDecoded
      ? JSON.stringify(name)
      : `<undecodable name ${entry.rawName.toString("hex")}>`;
    found.push({ code, entry: name, message: `${label}: ${why}` });
  };

  if (!entry.nameDecoded) {
    add(
      "non_utf8_name",
      entry.utf8Flag
        ? "name is flagged UTF-8 but is not valid UTF-8"
        : "name has non-ASCII bytes without the UTF-8 flag",
    );
  }
  if (entry.unicodePathName !== null && entry.unicodePathName !== name) {
    add("name_field_mismatch", `its Unicode Path extra field says ${JSON.stringify(entry.unicodePathName)}`);
  }
  if (entry.rawName.length > caps.maxNameBytes) {
    add("name_too_long", `name is ${entry.rawName.length} bytes; the cap is ${caps.maxNameBytes}`);
  }
  if (name.length === 0) {
    add("empty_path_segment", "name is empty");
    return found;
  }
  // A plain name (the usual case) cannot trip any of the character tests below: one regex instead of eight.
  const plain = PLAIN_NAME.test(name);
  if (!plain) {
    if (name.includes("\u0000")) add("control_character_in_name", "name contains NUL");
    else if (CONTROL.test(name)) add("control_character_in_name", "name contains a control character");
    if (BIDI_OR_INVISIBLE.test(name))
      add("bidi_character_in_name", "name contains a bidi override or invisible character");
    if (name.includes("\\")) add("backslash_in_name", "name contains a backslash");
    if (/^[/\\]{2}/.test(name)) add("absolute_path", "name is a UNC path");
    else if (/^[/\\]/.test(name)) add("absolute_path", "name is an absolute path");
    else if (/^[A-Za-z]:/.test(name)) add("absolute_path", "name starts with a drive letter");
    if (name.includes(":")) add("colon_in_name", "name contains ':' (drive or NTFS stream syntax)");
    if (WINDOWS_FORBIDDEN.test(name)) add("forbidden_character_in_name", 'name contains one of < > " | ? *');
  }

  // Backslashes are separators to Windows extractors, so traversal is judged on both.
  const segments = plain ? name.split("/") : name.split(/[/\\]/);
  if (segments.length > 1 && segments[segments.length - 1] === "" && entry.isDirectory) segments.pop();
  const startsAbsolute = /^[/\\]/.test(name);
  // One finding per code and name, however many segments share the problem.
  let seen: Set<string> | undefined;
  const once = (code: ZipFinding["code"], why: string) => {
    seen ??= new Set();
    if (seen.has(code)) return;
    seen.add(code);
    add(code, why);
  };
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i]!;
    if (segment === "") {
      if (!(startsAbsolute && i <= 1)) once("empty_path_segment", "name has an empty segment");
    } else if (segment === ".") {
      once("dot_path_segment", "name has a '.' segment");
    } else if (segment === "..") {
      once("path_traversal", "name has a '..' segment");
    } else {
      const last = segment.charCodeAt(segment.length - 1);
      if (last === 0x2e || last === 0x20) {
        once("trailing_dot_or_space", `segment ${JSON.stringify(segment)} ends with a dot or space`);
      }
      if (isReservedDeviceName(segment)) {
        once("reserved_device_name", `segment ${JSON.stringify(segment)} is a Windows device name`);
      }
    }
  }
  if (segments.length > caps.maxPathDepth) {
    add("path_too_deep", `path is ${segments.length} levels deep; the cap is ${caps.maxPathDepth}`);
  }
  // A link's own permission bits mean nothing (Linux shows every link as 0777): the link is the finding.
  const special = isSpecialFile(entry);
  if (isSymlink(entry)) add("symlink_entry", "entry is a symbolic link");
  else if (special) add("symlink_entry", "entry is a special file (device, FIFO or socket)");
  const unsafeBits = special ? 0 : (entry.unixMode ?? 0) & UNSAFE_MODE_BITS;
  if (unsafeBits) {
    const what = [
      [0o4000, "setuid"],
      [0o2000, "setgid"],
      [0o1000, "sticky"],
      [0o0002, "world-writable"],
    ] as const;
    const bits = what.filter(([bit]) => unsafeBits & bit).map(([, word]) => word);
    add("unsafe_file_mode", `mode ${entry.unixMode!.toString(8).padStart(6, "0")} is ${bits.join(", ")}`);
  }
  if (typeDisagreesWithName(entry)) {
    add(
      "entry_type_mismatch",
      name.endsWith("/")
        ? "its attributes say regular file but the name ends with '/'"
        : "its attributes say folder but the name has no trailing '/' (some extractors make a file, others a folder)",
    );
  }
  return found;
}

const ASCII_ONLY = /^[\u0000-\u007f]*$/;

/**
 * Whether an entry's name is ASCII and its raw name is that name byte for byte (no byte-order mark
 * was dropped in decoding): then it is its own latin1 form, and already in NFC.
 */
function asciiName(entry: ZipEntry): boolean {
  return entry.nameDecoded && entry.rawName.length === entry.name.length && ASCII_ONLY.test(entry.name);
}

/** Problems between names: duplicates and names that collide on some file system. */
export function analyzeCollisions(entries: ZipEntry[]): ZipFinding[] {
  for (let i = 0; i < entries.length; i++)
    if (!asciiName(entries[i]!)) return analyzeCollisionsFully(entries);
  return analyzeAsciiCollisions(entries);
}

/**
 * analyzeCollisions when every name is ASCII (the raw name is the name, NFC changes none), with one
 * map where the general path keeps two: the first name each lower-case form was seen with (or, in
 * the rare case of several, each of them). Two equal names share a lower-case form, so a name is a
 * duplicate only when its form was seen with it; the first name seen with a form is the one a later
 * name differing only in case is reported against. A file's form is listed once (two files that
 * pass with one form have one name, and the second is a duplicate), so the files are an array.
 * test/validation/fast-paths.test.ts holds it to analyzeCollisionsFully.
 */
function analyzeAsciiCollisions(entries: ZipEntry[]): ZipFinding[] {
  const found: ZipFinding[] = [];
  const seen = new Map<string, string | string[]>();
  const dirs = new Map<string, string>();
  const files: string[] = [];
  const fileBares: string[] = [];
  let lastParent = "";
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    const name = entry.name;
    const bare = name.endsWith("/") ? name.replace(/\/+$/, "") : name;
    const f = bare.toLowerCase();
    const prior = seen.get(f);
    if (prior !== undefined) {
      const names = typeof prior === "string" ? [prior] : prior;
      if (names.includes(name)) {
        found.push({
          code: "duplicate_entry_name",
          entry: name,
          message: `${JSON.stringify(name)}: appears more than once`,
        });
        continue;
      }
      if (typeof prior === "string") seen.set(f, [prior, name]);
      else prior.push(name);
      const first = names[0]!;
      const caseTwin = first.endsWith("/") ? first.replace(/\/+$/, "") : first;
      if (caseTwin !== bare) {
        found.push({
          code: "case_insensitive_collision",
          entry: name,
          message: `${JSON.stringify(name)}: differs from ${JSON.stringify(caseTwin)} only by letter case`,
        });
        continue;
      }
    } else seen.set(f, name);
    if (entry.isDirectory) dirs.set(f, bare);
    else {
      files.push(f);
      fileBares.push(bare);
    }
    // Ancestors, nearest first: once one is known, all of its ancestors are too.
    const parentEnd = f.lastIndexOf("/");
    if (parentEnd > 0 && parentEnd === lastParent.length && f.startsWith(lastParent)) continue;
    if (parentEnd > 0) lastParent = f.slice(0, parentEnd);
    for (let slash = parentEnd; slash > 0; slash = f.lastIndexOf("/", slash - 1)) {
      const dir = f.slice(0, slash);
      if (dirs.has(dir)) break;
      dirs.set(dir, dir);
    }
  }
  for (let i = 0; i < files.length; i++) {
    if (dirs.has(files[i]!)) {
      const file = fileBares[i]!;
      found.push({
        code: "file_directory_collision",
        entry: file,
        message: `${JSON.stringify(file)}: is a file and also a folder of other entries`,
      });
    }
  }
  return found;
}

/** Every collision rule on any names (analyzeCollisions' general path; exported for its test). */
export function analyzeCollisionsFully(entries: ZipEntry[]): ZipFinding[] {
  const found: ZipFinding[] = [];
  const exact = new Map<string, string>();
  const nfc = new Map<string, string>();
  const folded = new Map<string, string>();
  const files = new Map<string, string>();
  const dirs = new Map<string, string>();
  // latin1 maps bytes to code units one to one: an exact key for the raw name. An ASCII name as
  // long as its raw bytes (no byte-order mark was dropped in decoding) is its own latin1 form,
  // and no other raw name's, and is already in NFC.
  const ascii = entries.map(asciiName);
  // NFC is the identity on ASCII: when every name is ASCII no two differ only in normalization, and
  // the NFC map is skipped. One non-ASCII name keeps it for all (U+212A KELVIN SIGN is "K" in NFC).
  const normalizationMatters = ascii.includes(false);
  // The last parent folder recorded: siblings usually follow each other, and theirs is known.
  let lastParent = "";
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i]!;
    const name = entry.name;
    const isAscii = ascii[i]!;
    const raw = isAscii ? name : entry.rawName.toString("latin1");
    const bare = name.endsWith("/") ? name.replace(/\/+$/, "") : name;
    const prior = exact.get(raw);
    if (prior !== undefined) {
      found.push({
        code: "duplicate_entry_name",
        entry: name,
        message: `${JSON.stringify(name)}: appears more than once`,
      });
      continue;
    }
    exact.set(raw, name);
    const n = isAscii ? bare : bare.normalize("NFC");
    if (normalizationMatters) {
      const nfcTwin = nfc.get(n);
      if (nfcTwin !== undefined && nfcTwin !== bare) {
        found.push({
          code: "unicode_normalization_collision",
          entry: name,
          message: `${JSON.stringify(name)}: same name as ${JSON.stringify(nfcTwin)} after Unicode NFC normalization`,
        });
        continue;
      }
      nfc.set(n, bare);
    }
    // Case folding is on the NFC form, as file systems that ignore case compare names.
    const f = n.toLowerCase();
    const caseTwin = folded.get(f);
    if (caseTwin !== undefined && caseTwin !== bare) {
      found.push({
        code: "case_insensitive_collision",
        entry: name,
        message: `${JSON.stringify(name)}: differs from ${JSON.stringify(caseTwin)} only by letter case`,
      });
      continue;
    }
    folded.set(f, bare);
    if (entry.isDirectory) dirs.set(f, bare);
    else files.set(f, bare);
    // Ancestors, nearest first: once one is known, all of its ancestors are too.
    const parentEnd = f.lastIndexOf("/");
    if (parentEnd > 0 && parentEnd === lastParent.length && f.startsWith(lastParent)) continue;
    if (parentEnd > 0) lastParent = f.slice(0, parentEnd);
    for (let slash = parentEnd; slash > 0; slash = f.lastIndexOf("/", slash - 1)) {
      const dir = f.slice(0, slash);
      if (dirs.has(dir)) break;
      dirs.set(dir, dir);
    }
  }
  for (const [key, file] of files) {
    if (dirs.has(key)) {
      found.push({
        code: "file_directory_collision",
        entry: file,
        message: `${JSON.stringify(file)}: is a file and also a folder of other entries`,
      });
    }
  }
  return found;
}
