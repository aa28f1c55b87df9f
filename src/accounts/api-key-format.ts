import { crc32 } from "node:zlib";
import type { RandomBytes } from "./secrets.ts";

/**
 * API keys look like svc_<32 base62 characters><6 base62 checksum characters>. The prefix makes a
 * leaked key recognisable to secret scanners; the CRC32 checksum lets the server reject typos and
 * random guesses without a database lookup.
 */
export const API_KEY_PREFIX = "svc_";
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const BODY_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const API_KEY_PATTERN = /^svc_[0-9A-Za-z]{38}$/;

function base62(value: number, width: number): string {
  let out = "";
  let rest = value;
  for (let i = 0; i < width; i++) {
    out = ALPHABET[rest % 62] + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

function checksum(body: string): string {
  return base62(crc32(`${API_KEY_PREFIX}${body}`), CHECKSUM_LENGTH);
}

/** Uniform base62 characters by rejection sampling (bytes >= 248 are dropped to avoid modulo bias). */
function randomBase62(random: RandomBytes, length: number): string {
  let out = "";
  while (out.length < length) {
    for (const byte of random(length * 2)) {
      if (byte >= 248) continue;
      out += ALPHABET[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export function generateApiKey(random: RandomBytes): string {
  const body = randomBase62(random, BODY_LENGTH);
  return `${API_KEY_PREFIX}${body}${checksum(body)}`;
}

/** True when the string has the key shape and a matching checksum; says nothing about revocation. */
export function isWellFormedApiKey(key: string): boolean {
  if (!API_KEY_PATTERN.test(key)) return false;
  const body = key.slice(API_KEY_PREFIX.length, API_KEY_PREFIX.length + BODY_LENGTH);
  return key.slice(API_KEY_PREFIX.length + BODY_LENGTH) === checksum(body);
}

/** What the list shows so a person can tell keys apart: the prefix and six characters. */
export function apiKeyDisplayPrefix(key: string): string {
  return key.slice(0, API_KEY_PREFIX.length + 6);
}
