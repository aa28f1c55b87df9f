/**
 * The subjects of the build-provenance attestation: one `sha256  fileName` line (the sha256sum
 * format actions/attest-build-provenance reads from `subject-checksums`) per artifact this run
 * stored. Input is the publish run's receipts file; only successful publications count, so a
 * refused release is never attested.
 */
export interface ReceiptLike {
  receipt?: { ok?: boolean; artifactUrl?: string; sha256?: string; modId?: string; version?: string };
}

export function provenanceSubjects(entries: readonly ReceiptLike[]): string {
  const lines = new Set<string>();
  for (const entry of entries) {
    const r = entry.receipt;
    if (!r?.ok || !r.artifactUrl || !r.sha256 || !/^[0-9a-f]{64}$/.test(r.sha256)) continue;
    const name = decodeURIComponent(new URL(r.artifactUrl).pathname.split("/").pop() ?? "");
    // A name with whitespace or a newline would break the checksums format; package names never have one.
    if (!name || /\s/.test(name)) continue;
    lines.add(`${r.sha256}  ${name}`);
  }
  return [...lines].map((l) => `${l}\n`).join("");
}
