/**
 * File type by content, from the first bytes only (zip/sniff.mjs: plain JavaScript, so the inflate
 * worker sniffs with the same code). Kinds are stable strings the validation contract refers to in
 * its `allowedSignatures` map.
 */
export type { FileKind } from "./sniff.mjs";
export {
  ARCHIVE_KINDS,
  FILE_KINDS,
  looksLikeText,
  NATIVE_KINDS,
  sniffByEveryMagic,
  sniffFileType,
} from "./sniff.mjs";
