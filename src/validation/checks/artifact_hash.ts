import type { CheckContext, CheckOutcome } from "../types.ts";
import { blocked, failed, ownerOf, passed } from "./common.ts";

const ID = "artifact_hash";

export function checkArtifactHash(ctx: CheckContext): CheckOutcome {
  const sidecar = ctx.sidecar.valid;
  if (!sidecar)
    return blocked(ID, "sidecar_schema", "the declared sha256 and size are read from a valid sidecar");
  const pkg = ctx.pkg;
  if (pkg.sha256 === null || pkg.sizeBytes === null) {
    const code = pkg.unreadable?.code ?? "package_too_large";
    return blocked(ID, ownerOf(code), pkg.unreadable?.message ?? "the package bytes were not read");
  }
  const log = [
    `computed: sha256 ${pkg.sha256}, ${pkg.sizeBytes} bytes`,
    `declared: sha256 ${sidecar.package.sha256}, ${sidecar.package.sizeBytes} bytes`,
  ];
  if (pkg.sha256 !== sidecar.package.sha256) return failed(ID, "sha256_mismatch", log);
  if (pkg.sizeBytes !== sidecar.package.sizeBytes) return failed(ID, "size_mismatch", log);
  return passed(ID, [`sha256 ${pkg.sha256} and size ${pkg.sizeBytes} match the exact package bytes`]);
}
