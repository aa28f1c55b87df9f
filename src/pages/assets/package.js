// What the upload page measures in the browser before sending a package: its SHA-256, and the
// svc-mod.json at the ZIP root (to fill the metadata the server compares with it). Only a
// convenience: the server reads and checks the package itself, trusting nothing measured here.

const EOCD = 0x06054b50;
const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;
/** The end record sits in the last 22 bytes plus a comment of at most 64 KiB. */
const TAIL = 22 + 0xffff;
const MANIFEST_MAX_BYTES = 1024 * 1024;

export async function sha256Hex(file) {
  if (!globalThis.crypto?.subtle) {
    throw new Error(
      "This browser cannot measure the package here: open the portal over HTTPS (or on localhost) and try again.",
    );
  }
  const digest = await crypto.subtle.digest("SHA-256", await file.arrayBuffer());
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

async function view(file, start, length) {
  return new DataView(await file.slice(start, start + length).arrayBuffer());
}

async function inflate(blob, method) {
  if (method === 0) return blob.text();
  if (method !== 8 || typeof DecompressionStream !== "function") return null;
  return new Response(blob.stream().pipeThrough(new DecompressionStream("deflate-raw"))).text();
}

/**
 * The parsed svc-mod.json at the root of a ZIP file; null when there is none or it cannot be read
 * (the server's checks then say why). Reads only the end record, the central directory and the
 * one entry, never the whole file.
 */
export async function readManifest(file, name = "svc-mod.json") {
  try {
    const tailStart = Math.max(0, file.size - TAIL);
    const tail = await view(file, tailStart, file.size - tailStart);
    let end = -1;
    for (let i = tail.byteLength - 22; i >= 0; i--) {
      if (tail.getUint32(i, true) === EOCD) {
        end = i;
        break;
      }
    }
    if (end < 0) return null;
    const count = tail.getUint16(end + 10, true);
    const size = tail.getUint32(end + 12, true);
    const offset = tail.getUint32(end + 16, true);
    const directory = await view(file, offset, size);
    const decoder = new TextDecoder();
    let at = 0;
    for (let i = 0; i < count && at + 46 <= directory.byteLength; i++) {
      if (directory.getUint32(at, true) !== CENTRAL) return null;
      const method = directory.getUint16(at + 10, true);
      const compressed = directory.getUint32(at + 20, true);
      const nameLength = directory.getUint16(at + 28, true);
      const extraLength = directory.getUint16(at + 30, true);
      const commentLength = directory.getUint16(at + 32, true);
      const localOffset = directory.getUint32(at + 42, true);
      const entryName = decoder.decode(
        new Uint8Array(directory.buffer, directory.byteOffset + at + 46, nameLength),
      );
      at += 46 + nameLength + extraLength + commentLength;
      if (entryName !== name) continue;
      if (compressed > MANIFEST_MAX_BYTES) return null;
      const local = await view(file, localOffset, 30);
      if (local.getUint32(0, true) !== LOCAL) return null;
      const dataStart = localOffset + 30 + local.getUint16(26, true) + local.getUint16(28, true);
      const text = await inflate(file.slice(dataStart, dataStart + compressed), method);
      return text === null ? null : JSON.parse(text);
    }
    return null;
  } catch {
    return null;
  }
}
