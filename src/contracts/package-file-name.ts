/**
 * The one name of a package the portal stores: `{modId}-{version}.zip`, what `svc pack` writes. It
 * becomes part of the immutable public URL (downloads/mods/{modId}/{version}/{fileName}), so the
 * portal chooses it, never the name the file happened to have on the modder's disk
 * ("lantern-1.0.0-rev2.zip"). A package held elsewhere (package.url, a release asset) keeps the name
 * its URL ends in.
 */
export function packageFileName(modId: string, version: string): string {
  return `${modId}-${version}.zip`;
}

/** The sidecar with the portal's name for a package it stores (one without package.url). */
export function withPackageFileName<
  T extends { modId: string; version: string; package: { fileName: string; url?: string } },
>(sidecar: T): T {
  if (sidecar.package.url !== undefined) return sidecar;
  const fileName = packageFileName(sidecar.modId, sidecar.version);
  return sidecar.package.fileName === fileName
    ? sidecar
    : { ...sidecar, package: { ...sidecar.package, fileName } };
}
