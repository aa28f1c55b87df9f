// File type by content, from the first bytes only. Kinds are stable strings the validation contract
// refers to in its `allowedSignatures` map. Plain JavaScript, as zip/inflate-raw.mjs is, so the inflate
// worker (src/validation/inflate-worker.mjs) sniffs the entries it inflates with this same code and
// hands back a kind's number in FILE_KINDS instead of each entry's first bytes. Types: sniff.d.mts;
// sniff.ts re-exports this module for the TypeScript code.

/** Every kind sniffFileType answers, in a fixed order: a kind's index is what the inflate worker sends. */
export const FILE_KINDS = Object.freeze([
  "pe",
  "elf",
  "macho",
  "java_class",
  "wasm",
  "zip",
  "7z",
  "rar",
  "gzip",
  "bzip2",
  "xz",
  "zstd",
  "cab",
  "tar",
  "ole",
  "riff",
  "truetype",
  "opentype",
  "msf",
  "lnk",
  "shebang",
  "png",
  "jpeg",
  "gif",
  "bmp",
  "dds",
  "tga",
  "ogg",
  "mp3",
  "flac",
  "pdf",
  "ue_pak",
  "ue_uasset",
  "text",
  "empty",
  "unknown",
]);

export const NATIVE_KINDS = new Set(["pe", "elf", "macho"]);
export const ARCHIVE_KINDS = new Set([
  "zip",
  "7z",
  "rar",
  "gzip",
  "bzip2",
  "xz",
  "zstd",
  "cab",
  "tar",
  "ole",
]);

function startsWith(bytes, sig, at = 0) {
  if (bytes.length < at + sig.length) return false;
  for (let i = 0; i < sig.length; i++) if (bytes[at + i] !== sig[i]) return false;
  return true;
}

const asciiCache = new Map();
function ascii(bytes, at, text) {
  let sig = asciiCache.get(text);
  if (!sig) {
    sig = Array.from(text, (c) => c.charCodeAt(0));
    asciiCache.set(text, sig);
  }
  return startsWith(bytes, sig, at);
}

function isPe(bytes) {
  // "MZ" alone is treated as an executable: Windows loads DOS stubs and PE files alike.
  return ascii(bytes, 0, "MZ");
}

/** The bytes text has none of: NUL and the C0 controls other than tab, LF, VT, FF, CR and ESC. */
const NOT_TEXT = /[\u0000-\u0008\u000e-\u001a\u001c-\u001f]/;

/**
 * No byte of the first 4 KiB is one NOT_TEXT names. One regular expression over the bytes as
 * Latin-1 (a byte per character): a loop per byte ran before the JIT optimized it for the first
 * thousands of entries of a package; test/validation/fast-paths.test.ts holds it to that loop.
 */
export function looksLikeText(bytes) {
  const n = Math.min(bytes.length, 4096);
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  return !NOT_TEXT.test(buffer.toString("latin1", 0, n));
}

/** Identify `bytes` (an entry's content, or at least its first 4 KiB plus the tar header block). */
// Magic numbers, allocated once (the sniffer runs for every entry).
const ELF = [0x7f, 0x45, 0x4c, 0x46];
const MACHO_BE32 = [0xfe, 0xed, 0xfa, 0xce];
const MACHO_BE64 = [0xfe, 0xed, 0xfa, 0xcf];
const MACHO_LE32 = [0xce, 0xfa, 0xed, 0xfe];
const MACHO_LE64 = [0xcf, 0xfa, 0xed, 0xfe];
const CAFEBABE = [0xca, 0xfe, 0xba, 0xbe];
const WASM = [0x00, 0x61, 0x73, 0x6d];
const ZIP_LOCAL = [0x50, 0x4b, 0x03, 0x04];
const ZIP_END = [0x50, 0x4b, 0x05, 0x06];
const ZIP_SPANNED = [0x50, 0x4b, 0x07, 0x08];
const SEVEN_ZIP = [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c];
const GZIP = [0x1f, 0x8b];
const XZ = [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00];
const ZSTD = [0x28, 0xb5, 0x2f, 0xfd];
const OLE_COMPOUND = [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1];
const LNK = [0x4c, 0x00, 0x00, 0x00, 0x01, 0x14, 0x02, 0x00];
const PNG = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const JPEG = [0xff, 0xd8, 0xff];
const TRUETYPE = [0x00, 0x01, 0x00, 0x00, 0x00];
const MP3_FRAME = [0xff, 0xfb];
const UASSET = [0xc1, 0x83, 0x2a, 0x9e];
const PAK_FOOTER = [0xe1, 0x12, 0x6f, 0x5a];

/**
 * First bytes of every magic tested at offset 0 below. Any other first byte can only be tar (its
 * magic is at 257), text, TGA, an Unreal pak or unknown: the sniffer runs per entry, and most
 * entries (text, data) skip the thirty-odd prefix tests that way.
 */
const MAGIC_FIRST_BYTES = new Uint8Array(256);
for (const byte of [
  0x4d, // MZ, MSCF, Microsoft C/C++ MSF
  0x7f, // ELF
  0xfe, // Mach-O BE
  0xce, // Mach-O LE 32
  0xcf, // Mach-O LE 64
  0xca, // CAFEBABE
  0x00, // wasm, TrueType
  0x50, // PK
  0x37, // 7z
  0x52, // Rar!, RIFF
  0x1f, // gzip
  0x42, // BZh, BM
  0xfd, // xz
  0x28, // zstd
  0xd0, // OLE
  0x4c, // LNK
  0x89, // PNG
  0xff, // JPEG, MP3 frame
  0x47, // GIF
  0x74, // true
  0x4f, // OTTO, OggS
  0x44, // DDS
  0x66, // fLaC
  0x49, // ID3
  0x25, // %PDF-
  0xc1, // uasset
  0x23, // #!
])
  MAGIC_FIRST_BYTES[byte] = 1;

export function sniffFileType(bytes) {
  if (bytes.length > 0 && MAGIC_FIRST_BYTES[bytes[0]] === 0) {
    if (ascii(bytes, 257, "ustar")) return "tar";
    return sniffWithoutPrefix(bytes);
  }
  return sniffByEveryMagic(bytes);
}

/** sniffFileType without the first-byte shortcut: every test in order (exported for its test). */
export function sniffByEveryMagic(bytes) {
  if (bytes.length === 0) return "empty";
  if (isPe(bytes)) return "pe";
  if (startsWith(bytes, ELF)) return "elf";
  if (
    startsWith(bytes, MACHO_BE32) ||
    startsWith(bytes, MACHO_BE64) ||
    startsWith(bytes, MACHO_LE32) ||
    startsWith(bytes, MACHO_LE64)
  ) {
    return "macho";
  }
  if (startsWith(bytes, CAFEBABE)) {
    // Mach-O universal binaries and Java classes share a magic; the next word tells them apart.
    const next =
      bytes.length >= 8 ? ((bytes[4] << 24) | (bytes[5] << 16) | (bytes[6] << 8) | bytes[7]) >>> 0 : 0;
    return next > 0 && next < 45 ? "macho" : "java_class";
  }
  if (startsWith(bytes, WASM)) return "wasm";
  if (startsWith(bytes, ZIP_LOCAL) || startsWith(bytes, ZIP_END) || startsWith(bytes, ZIP_SPANNED)) {
    return "zip";
  }
  if (startsWith(bytes, SEVEN_ZIP)) return "7z";
  if (ascii(bytes, 0, "Rar!\x1a\x07")) return "rar";
  if (startsWith(bytes, GZIP)) return "gzip";
  if (ascii(bytes, 0, "BZh")) return "bzip2";
  if (startsWith(bytes, XZ)) return "xz";
  if (startsWith(bytes, ZSTD)) return "zstd";
  if (ascii(bytes, 0, "MSCF")) return "cab";
  if (startsWith(bytes, OLE_COMPOUND)) return "ole";
  if (ascii(bytes, 257, "ustar")) return "tar";
  if (startsWith(bytes, LNK)) return "lnk";
  if (startsWith(bytes, PNG)) return "png";
  if (startsWith(bytes, JPEG)) return "jpeg";
  if (ascii(bytes, 0, "GIF87a") || ascii(bytes, 0, "GIF89a")) return "gif";
  if (ascii(bytes, 0, "BM") && bytes.length >= 14) return "bmp";
  // RIFF covers WAVE audio (and WebP/AVI, which the policy's extension map tells apart).
  if (ascii(bytes, 0, "RIFF")) return "riff";
  if (startsWith(bytes, TRUETYPE) || ascii(bytes, 0, "true")) return "truetype";
  if (ascii(bytes, 0, "OTTO")) return "opentype";
  if (ascii(bytes, 0, "Microsoft C/C++ MSF 7.00")) return "msf";
  if (ascii(bytes, 0, "DDS ")) return "dds";
  if (ascii(bytes, 0, "OggS")) return "ogg";
  if (ascii(bytes, 0, "fLaC")) return "flac";
  if (ascii(bytes, 0, "ID3") || startsWith(bytes, MP3_FRAME)) return "mp3";
  if (ascii(bytes, 0, "%PDF-")) return "pdf";
  if (startsWith(bytes, UASSET)) return "ue_uasset";
  if (ascii(bytes, 0, "#!")) return "shebang";
  return sniffWithoutPrefix(bytes);
}

/** The kinds that have no magic at offset 0, in the order sniffFileType tests them. */
function sniffWithoutPrefix(bytes) {
  if (looksLikeText(bytes)) return "text";
  if (isTruevisionTga(bytes)) return "tga";
  if (hasPakFooter(bytes)) return "ue_pak";
  return "unknown";
}

function hasPakFooter(bytes) {
  // Unreal .pak files end with an index footer whose magic is 0x5A6F12E1; its offset varies by version.
  for (let at = Math.max(0, bytes.length - 256); at + 4 <= bytes.length; at++) {
    if (startsWith(bytes, PAK_FOOTER, at)) return true;
  }
  return false;
}

function isTruevisionTga(bytes) {
  // TGA has no magic; a v2 footer ends with "TRUEVISION-XFILE.\0".
  return bytes.length >= 18 && ascii(bytes, bytes.length - 18, "TRUEVISION-XFILE.\0");
}
