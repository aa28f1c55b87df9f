import { existsSync, lstatSync } from "node:fs";
import { join } from "node:path";
import { hashFile } from "../lib/hash.ts";
import { listFilesUnder } from "../lib/walk.ts";
import type { SiteInputs } from "./site.ts";

export interface ArtifactCheck {
  /** Artifacts the records place under the site (portal-hosted), each checked. */
  checked: number;
  problems: string[];
}

interface Expected {
  path: string;
  sizeBytes: number;
  sha256: string;
  what: string;
}

const MODS_DOWNLOADS = "downloads/mods";

/** The site path of a portal-hosted download URL, or null for an artifact hosted elsewhere (GitHub). */
function localPath(baseUrl: string, url: string | undefined): string | null {
  const prefix = `${baseUrl.replace(/\/+$/, "")}/`;
  if (!url?.startsWith(`${prefix}downloads/`)) return null;
  const path = decodeURIComponent(url.slice(prefix.length));
  return path.split("/").some((part) => part === ".." || part === "") ? null : path;
}

/**
 * Every artifact the records name under the site must be there as a regular file of the recorded
 * size (a stat each: cheap at any catalog size); with hashes, its sha256 is recomputed too (reads
 * every byte). A file under downloads/mods that no record names is reported as stray: it is what an
 * interrupted publication of the old kind left, and it blocks that version forever (artifact_exists).
 * Artifacts on GitHub Releases are not local; `svc smoke` downloads and verifies those.
 */
export async function checkLocalArtifacts(
  inputs: SiteInputs,
  siteDir: string,
  options: { hashes: boolean },
): Promise<ArtifactCheck> {
  const baseUrl = inputs.config.baseUrl;
  const expected: Expected[] = [];
  for (const record of inputs.records) {
    const path = localPath(baseUrl, record.packageUrl);
    if (path)
      expected.push({
        path,
        sizeBytes: record.packageSizeBytes,
        sha256: record.sha256,
        what: `${record.modId}@${record.version} (${record.status})`,
      });
  }
  const framework = inputs.framework;
  const frameworkPath = localPath(baseUrl, framework?.url);
  if (frameworkPath && framework?.sizeBytes !== undefined && framework.sha256) {
    expected.push({
      path: frameworkPath,
      sizeBytes: framework.sizeBytes,
      sha256: framework.sha256,
      what: `framework ${framework.version}`,
    });
  }
  const problems: string[] = [];
  for (const artifact of expected) {
    const full = join(siteDir, artifact.path);
    const stat = existsSync(full) ? lstatSync(full) : null;
    if (!stat?.isFile()) {
      problems.push(`artifact missing: site/${artifact.path} (${artifact.what})`);
      continue;
    }
    if (stat.size !== artifact.sizeBytes) {
      problems.push(
        `artifact size: site/${artifact.path} is ${stat.size} bytes; the record says ${artifact.sizeBytes} (${artifact.what})`,
      );
      continue;
    }
    if (options.hashes) {
      const { sha256 } = await hashFile(full);
      if (sha256 !== artifact.sha256)
        problems.push(
          `artifact sha256: site/${artifact.path} hashes to ${sha256}; the record says ${artifact.sha256} (${artifact.what})`,
        );
    }
  }
  const named = new Set(expected.map((a) => a.path));
  for (const path of listFilesUnder(siteDir, [MODS_DOWNLOADS])) {
    if (!named.has(path)) problems.push(`stray artifact: site/${path} is named by no release record`);
  }
  return { checked: expected.length, problems };
}
