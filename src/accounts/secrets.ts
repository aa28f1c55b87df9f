import { createHmac, hash, randomBytes as nodeRandomBytes, timingSafeEqual } from "node:crypto";

/** Injected randomness: tests pass a seeded source, production uses crypto.randomBytes. */
export type RandomBytes = (size: number) => Buffer;

export const defaultRandomBytes: RandomBytes = (size) => nodeRandomBytes(size);

/** A bearer secret: 32 random bytes, base64url (43 characters). */
export function newSecretToken(random: RandomBytes): string {
  return random(32).toString("base64url");
}

/** A public identifier such as acct_Xy...: 16 random bytes, so ids cannot be guessed or enumerated. */
export function newId(prefix: string, random: RandomBytes): string {
  return `${prefix}_${random(16).toString("base64url")}`;
}

/** Secrets are stored as SHA-256 hex digests only. They carry 256 bits, so no salt or KDF is needed. */
export function hashSecret(secret: string): string {
  // The one-shot form (Node >= 20.12) costs a third of a Hash object; every API-key request hashes.
  return hash("sha256", secret, "hex");
}

/** Constant-time comparison of two strings (length differences return false without early exit on content). */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, "utf8");
  const right = Buffer.from(b, "utf8");
  if (left.length !== right.length) {
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}

/**
 * The CSRF token of a session, derived from the session secret: it needs no storage, differs per
 * session (a token from another session is foreign), and cannot be computed without the cookie.
 */
export function csrfTokenFor(sessionToken: string): string {
  return createHmac("sha256", sessionToken).update("svc-csrf-v1").digest("base64url");
}
