/**
 * The two records the svc app writes on a pull request and others must not be able to forge: the
 * stored state of the status comment, and the submitter of a pull request the app opened. Anyone
 * with write access can edit any comment or pull request body, and GitHub keeps showing the app as
 * the author, so authorship proves nothing once a record was edited. Each record is therefore sealed
 * with an HMAC-SHA256 whose key is derived from the portal app's private key: the bot, the API
 * server and the publish workflow's `publish` environment hold that key, nobody with a browser does,
 * and the comment carries only the MAC, never the key. A record that does not verify is void.
 *
 * A seal binds the record to the portal repository and to its pull request (the number for the
 * status, the head branch for the submitter, which is known before the pull request exists), so a
 * sealed record copied to another pull request does not verify.
 *
 * Known limit: an earlier sealed state of the same pull request and head commit still verifies. The
 * bot answers every edit of its status comment by someone else (issue_comment.edited) by restoring
 * the text from before that edit, so a restored old state lives only until the bot's next delivery.
 */
import { createHmac, createPrivateKey, hkdfSync, timingSafeEqual } from "node:crypto";
import type { StoredStatus, SubmitterRecord } from "./comments.ts";

/** The key that seals the status and submitter records; null where nothing is sealed or verified. */
export type StatusKey = Buffer;

/**
 * The seal key from the app's private key (PEM, PKCS#1 or PKCS#8; newlines kept or escaped as \n).
 * It is derived from the key's DER encoding, so every encoding of one key gives the same seal key.
 */
export function deriveStatusKey(privateKeyPem: string): StatusKey {
  const pem = privateKeyPem.trim().replace(/\\n/g, "\n");
  const der = createPrivateKey(pem).export({ type: "pkcs8", format: "der" });
  return Buffer.from(hkdfSync("sha256", der, "svc.portal-app", "svc pull request records v1", 32));
}

function mac(key: StatusKey, fields: readonly unknown[]): string {
  return createHmac("sha256", key).update(JSON.stringify(fields)).digest("hex");
}

function sameMac(given: unknown, expected: string): boolean {
  if (typeof given !== "string" || !/^[0-9a-f]{64}$/.test(given)) return false;
  return timingSafeEqual(Buffer.from(given, "hex"), Buffer.from(expected, "hex"));
}

export interface StatusScope {
  /** owner/name of the portal repository. */
  repository: string;
  pullRequest: number;
}

function statusFields(scope: StatusScope, stored: StoredStatus): unknown[] {
  const fields = [
    "svc.status.v1",
    scope.repository.toLowerCase(),
    scope.pullRequest,
    stored.state,
    stored.headSha,
    stored.retryable === true,
    stored.at ?? null,
  ];
  // The release diff's digest is sealed with the state; a state without one keeps the fields (and
  // the MACs) it always had, and dropping the digest from a sealed state breaks its MAC.
  return stored.diff === undefined ? fields : [...fields, stored.diff];
}

/** The stored state with the time it was written and its MAC. */
export function sealStatus(key: StatusKey, scope: StatusScope, stored: StoredStatus, at: Date): StoredStatus {
  const { sig: _old, ...plain } = stored;
  const dated: StoredStatus = { ...plain, at: at.toISOString() };
  return { ...dated, sig: mac(key, statusFields(scope, dated)) };
}

export function verifyStatus(key: StatusKey, scope: StatusScope, stored: StoredStatus): boolean {
  return sameMac(stored.sig, mac(key, statusFields(scope, stored)));
}

export interface SubmitterScope {
  repository: string;
  /** The pull request's head branch: the app names it before the pull request has a number. */
  branch: string;
}

function submitterFields(scope: SubmitterScope, record: SubmitterRecord): unknown[] {
  return [
    "svc.submitter.v1",
    scope.repository.toLowerCase(),
    scope.branch,
    record.login,
    record.source,
    record.repository?.id ?? null,
    record.repository?.fullName ?? null,
    record.claim === true,
  ];
}

export function sealSubmitter(
  key: StatusKey,
  scope: SubmitterScope,
  record: SubmitterRecord,
): SubmitterRecord {
  const { sig: _old, ...plain } = record;
  return { ...plain, sig: mac(key, submitterFields(scope, plain)) };
}

export function verifySubmitter(key: StatusKey, scope: SubmitterScope, record: SubmitterRecord): boolean {
  return sameMac(record.sig, mac(key, submitterFields(scope, record)));
}
