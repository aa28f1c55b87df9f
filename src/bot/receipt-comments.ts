/** The receipts the publish run posts on a submission: a publication, a hide or an unhide. */
import { inlineCode } from "./comments.ts";

export interface PublishReceipt {
  ok: boolean;
  modId: string;
  version: string;
  artifactUrl?: string;
  sha256?: string;
  sizeBytes?: number;
  catalogUrl?: string;
  detailUrl?: string;
  commitSha?: string;
  error?: { code: string; message: string };
  /** A refusal that is not the package's or the approval's fault (no usable scanner). */
  retryable?: boolean;
  /** A refusal: when the publish job judges it again by itself. */
  retryAt?: string;
}

export function receiptComment(receipt: PublishReceipt): string {
  if (!receipt.ok) {
    const retry = receipt.retryable
      ? "This is not a problem with the package: the publish job tries again on its next run."
      : `The publish job does not try again until something changes: a moderator's approval, \`/svc revalidate\` from the submitter or a moderator, a new sidecar${receipt.retryAt ? `, or ${receipt.retryAt} (then less and less often)` : ""}.`;
    return [
      `### svc publish failed for \`${receipt.modId}@${receipt.version}\``,
      "",
      `\`${receipt.error?.code ?? "internal_error"}\`: ${inlineCode(receipt.error?.message ?? "unknown error", 1000)}`,
      "",
      `Nothing was published (publication is all or nothing). ${retry}`,
    ].join("\n");
  }
  return [
    `### svc published \`${receipt.modId}@${receipt.version}\``,
    "",
    "| | |",
    "|---|---|",
    `| artifact | ${receipt.artifactUrl ?? ""} |`,
    `| sha256 | \`${receipt.sha256 ?? ""}\` |`,
    `| size | ${receipt.sizeBytes ?? ""} bytes |`,
    `| catalog | ${receipt.catalogUrl ?? ""} |`,
    `| mod detail | ${receipt.detailUrl ?? ""} |`,
    ...(receipt.commitSha ? [`| catalog commit | ${receipt.commitSha} |`] : []),
  ].join("\n");
}

/** What a hide/unhide receipt says: the publish run's entry for it. */
export interface VisibilityReceipt {
  visibility: "hide" | "unhide";
  /** The release's status after the change; null when it failed. */
  status: string | null;
  receipt: PublishReceipt;
  /** A hide: what happened to the package on GitHub Releases (deleted, gone, never_stored, not_ours). */
  withdrawal?: string;
}

/** The receipt comment of a hide/unhide, posted by the publish run's receipts job. */
export function visibilityReceiptComment(entry: VisibilityReceipt): string {
  const release = `\`${entry.receipt.modId}@${entry.receipt.version}\``;
  if (!entry.receipt.ok) {
    return [
      `### svc could not ${entry.visibility} ${release}`,
      "",
      `\`${entry.receipt.error?.code ?? "internal_error"}\`: ${inlineCode(entry.receipt.error?.message ?? "unknown error", 1000)}`,
      "",
      "The public catalog is unchanged. An admin can rerun the publish workflow.",
    ].join("\n");
  }
  return [
    entry.visibility === "hide"
      ? `### svc hid ${release} from the public catalog`
      : `### svc restored ${release} to the public catalog`,
    "",
    "| | |",
    "|---|---|",
    `| status | \`${entry.status ?? ""}\` |`,
    `| catalog | ${entry.receipt.catalogUrl ?? ""} |`,
    `| mod detail | ${entry.receipt.detailUrl ?? ""} |`,
    ...(entry.visibility === "hide"
      ? [
          "",
          entry.withdrawal === "deleted" || entry.withdrawal === "gone"
            ? "The package was withdrawn from GitHub Releases: its URL answers 404 for good and will never serve other bytes. This cannot be undone; `/svc unhide` is refused, so publish a new version instead."
            : "The package was not a release of this portal, so nothing was withdrawn; `/svc unhide` lists the release again.",
        ]
      : []),
  ].join("\n");
}
