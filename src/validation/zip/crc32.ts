// The implementation is plain JavaScript beside it (inflate-raw.mjs), shared with the inflate worker.
export { crc32, crc32Table, hasNativeCrc32 } from "./inflate-raw.mjs";
