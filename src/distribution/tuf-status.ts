import { join } from "node:path";
import { TUF_DIR } from "./tuf-layout.ts";
import { loadLatestRoot } from "./tuf-root.ts";
import { readMetadata } from "./tuf-signed-state.ts";

export type SignatureStatus =
  | { signed: true; rootVersion: number; timestampVersion: number; expires: string }
  | { signed: false; reason: "no_root" | "no_timestamp" | "timestamp_expired"; detail: string };

/** What readiness reports: whether the site carries fresh signed metadata. */
export function signatureStatus(siteDir: string, now: Date = new Date()): SignatureStatus {
  const root = loadLatestRoot(siteDir);
  if (!root)
    return { signed: false, reason: "no_root", detail: `no ${TUF_DIR}/N.root.json; run svc keys init` };
  const json = readMetadata<{ signed: { version: number; expires: string } }>(
    join(siteDir, TUF_DIR, "timestamp.json"),
  );
  if (!json) return { signed: false, reason: "no_timestamp", detail: "the site was never signed (svc sign)" };
  if (new Date(json.signed.expires) <= now) {
    return {
      signed: false,
      reason: "timestamp_expired",
      detail: `timestamp expired at ${json.signed.expires}`,
    };
  }
  return {
    signed: true,
    rootVersion: root.version,
    timestampVersion: json.signed.version,
    expires: json.signed.expires,
  };
}
