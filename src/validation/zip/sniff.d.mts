/** Types of sniff.mjs (plain JavaScript, so the inflate worker sniffs with it without a TypeScript loader). */

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

/** Every kind, in the order whose indexes the inflate worker sends. */
export declare const FILE_KINDS: readonly FileKind[];
export declare const NATIVE_KINDS: ReadonlySet<FileKind>;
export declare const ARCHIVE_KINDS: ReadonlySet<FileKind>;
/** No byte of the first 4 KiB is a control character text has none of. */
export declare function looksLikeText(bytes: Uint8Array): boolean;
/** Identify `bytes` (an entry's content, or at least its first 4 KiB plus the tar header block). */
export declare function sniffFileType(bytes: Uint8Array): FileKind;
/** sniffFileType without the first-byte shortcut: every test in order (exported for its test). */
export declare function sniffByEveryMagic(bytes: Uint8Array): FileKind;
