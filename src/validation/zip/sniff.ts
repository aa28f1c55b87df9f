/**
 * File type by content, from the first bytes only. Kinds are stable strings the validation contract
 * refers to in its `allowedSignatures` map.
 */
export type FileKind =
  | "pe"
  | "elf"
  | "macho"
  | "java_class"
  | "wasm"
  | "zip"
  | "7z"
  | "rar"
  | "gzip"
  | "bzip2"
  | "xz"
  | "zstd"
  | "cab"
  | "tar"
  | "ole"
  | "riff"
  | "truetype"
  | "opentype"
  | "msf"
  | "lnk"
  | "shebang"
  | "png"
  | "jpeg"
  | "gif"
  | "bmp"
  | "dds"
  | "tga"
  | "ogg"
  | "mp3"
  | "flac"
  | "pdf"
  | "ue_pak"
  | "ue_uasset"
  | "text"
  | "empty"
  | "unknown";

export const NATIVE_KINDS: ReadonlySet<FileKind> = new Set(["pe", "elf", "macho"]);
export const ARCHIVE_KINDS: ReadonlySet<FileKind> = new Set([
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

function startsWith(bytes: Uint8Array, sig: readonly number[], at = 0): boolean {
  if (bytes.length < at + sig.length) return false;
  for (let i = 0; i < sig.length; i++) if (bytes[at + i] !== sig[i]) return false;
  return true;
}

const asciiCache = new Map<string, number[]>();
function ascii(bytes: Uint8Array, at: number, text: string): boolean {
  let sig = asciiCache.get(text);
  if (!sig) {
    sig = Array.from(text, (c) => c.charCodeAt(0));
    asciiCache.set(text, sig);
  }
  return startsWith(bytes, sig, at);
}

function isPe(bytes: Uint8Array): boolean {
  // "MZ" alone is treated as an executable: Windows loads DOS stubs and PE files alike.
  return ascii(bytes, 0, "MZ");
}

function looksLikeText(bytes: Uint8Array): boolean {
  const n = Math.min(bytes.length, 4096);
  for (let i = 0; i < n; i++) {
    const b = bytes[i]!;
    if (b === 0) return false;
    if (b < 0x09 || (b > 0x0d && b < 0x20 && b !== 0x1b)) return false;
  }
  return true;
}

/** Identify `bytes` (an entry's content, or at least its first 4 KiB plus the tar header block). */
export function sniffFileType(bytes: Uint8Array): FileKind {
  if (bytes.length === 0) return "empty";
  if (isPe(bytes)) return "pe";
  if (startsWith(bytes, [0x7f, 0x45, 0x4c, 0x46])) return "elf";
  if (
    startsWith(bytes, [0xfe, 0xed, 0xfa, 0xce]) ||
    startsWith(bytes, [0xfe, 0xed, 0xfa, 0xcf]) ||
    startsWith(bytes, [0xce, 0xfa, 0xed, 0xfe]) ||
    startsWith(bytes, [0xcf, 0xfa, 0xed, 0xfe])
  ) {
    return "macho";
  }
  if (startsWith(bytes, [0xca, 0xfe, 0xba, 0xbe])) {
    // Mach-O universal binaries and Java classes share a magic; the next word tells them apart.
    const next =
      bytes.length >= 8 ? ((bytes[4]! << 24) | (bytes[5]! << 16) | (bytes[6]! << 8) | bytes[7]!) >>> 0 : 0;
    return next > 0 && next < 45 ? "macho" : "java_class";
  }
  if (startsWith(bytes, [0x00, 0x61, 0x73, 0x6d])) return "wasm";
  if (
    startsWith(bytes, [0x50, 0x4b, 0x03, 0x04]) ||
    startsWith(bytes, [0x50, 0x4b, 0x05, 0x06]) ||
    startsWith(bytes, [0x50, 0x4b, 0x07, 0x08])
  ) {
    return "zip";
  }
  if (startsWith(bytes, [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c])) return "7z";
  if (ascii(bytes, 0, "Rar!\x1a\x07")) return "rar";
  if (startsWith(bytes, [0x1f, 0x8b])) return "gzip";
  if (ascii(bytes, 0, "BZh")) return "bzip2";
  if (startsWith(bytes, [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00])) return "xz";
  if (startsWith(bytes, [0x28, 0xb5, 0x2f, 0xfd])) return "zstd";
  if (ascii(bytes, 0, "MSCF")) return "cab";
  if (startsWith(bytes, [0xd0, 0xcf, 0x11, 0xe0, 0xa1, 0xb1, 0x1a, 0xe1])) return "ole";
  if (ascii(bytes, 257, "ustar")) return "tar";
  if (startsWith(bytes, [0x4c, 0x00, 0x00, 0x00, 0x01, 0x14, 0x02, 0x00])) return "lnk";
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return "png";
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return "jpeg";
  if (ascii(bytes, 0, "GIF87a") || ascii(bytes, 0, "GIF89a")) return "gif";
  if (ascii(bytes, 0, "BM") && bytes.length >= 14) return "bmp";
  // RIFF covers WAVE audio (and WebP/AVI, which the policy's extension map tells apart).
  if (ascii(bytes, 0, "RIFF")) return "riff";
  if (startsWith(bytes, [0x00, 0x01, 0x00, 0x00, 0x00]) || ascii(bytes, 0, "true")) return "truetype";
  if (ascii(bytes, 0, "OTTO")) return "opentype";
  if (ascii(bytes, 0, "Microsoft C/C++ MSF 7.00")) return "msf";
  if (ascii(bytes, 0, "DDS ")) return "dds";
  if (ascii(bytes, 0, "OggS")) return "ogg";
  if (ascii(bytes, 0, "fLaC")) return "flac";
  if (ascii(bytes, 0, "ID3") || startsWith(bytes, [0xff, 0xfb])) return "mp3";
  if (ascii(bytes, 0, "%PDF-")) return "pdf";
  if (startsWith(bytes, [0xc1, 0x83, 0x2a, 0x9e])) return "ue_uasset";
  if (ascii(bytes, 0, "#!")) return "shebang";
  if (looksLikeText(bytes)) return "text";
  if (isTruevisionTga(bytes)) return "tga";
  if (hasPakFooter(bytes)) return "ue_pak";
  return "unknown";
}

function hasPakFooter(bytes: Uint8Array): boolean {
  // Unreal .pak files end with an index footer whose magic is 0x5A6F12E1; its offset varies by version.
  for (let at = Math.max(0, bytes.length - 256); at + 4 <= bytes.length; at++) {
    if (startsWith(bytes, [0xe1, 0x12, 0x6f, 0x5a], at)) return true;
  }
  return false;
}

function isTruevisionTga(bytes: Uint8Array): boolean {
  // TGA has no magic; a v2 footer ends with "TRUEVISION-XFILE.\0".
  return bytes.length >= 18 && ascii(bytes, bytes.length - 18, "TRUEVISION-XFILE.\0");
}
