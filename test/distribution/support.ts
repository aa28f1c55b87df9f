import { createHash } from "node:crypto";
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { Metadata } from "@tufjs/models";
import { hideRelease, publishRelease, type ReleaseSubmission } from "../../src/catalog/publisher.ts";
import type { Entrypoint } from "../../src/contracts/records.ts";
import { ManagerClient } from "../../src/distribution/manager-client.ts";
import {
  buildRoot,
  generateKeySet,
  onlineKeyBundle,
  type OnlineKeys,
  signerFor,
  type TufKeyFile,
} from "../../src/distribution/tuf-keys.ts";
import { signSite } from "../../src/distribution/tuf-repository.ts";
import { writeRoot } from "../../src/distribution/tuf-root.ts";
import { catalogProject, type ModFixture, modRelease, publisherOptions } from "../support/catalog-project.ts";
import { writeZip } from "../support/zip.ts";

export interface MirrorRequest {
  path: string;
  range: string | undefined;
  status: number;
}

/** A test's own answer for one path (the attacker's server: endless, trickling, silent). */
export type MirrorResponder = (req: IncomingMessage, res: ServerResponse) => void;

/**
 * A loopback mirror: a real HTTP server on 127.0.0.1 serving a site folder with Range support.
 * `override` lets a test play the attacker: replace the bytes served for a path; `respond` hands
 * a path's whole answer to the test (see hostile-responses.ts).
 */
export async function startMirror(siteDir: string) {
  const override = new Map<string, Buffer>();
  const respond = new Map<string, MirrorResponder>();
  const requests: MirrorRequest[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname).replace(/^\/+/, "");
    const range = req.headers.range;
    const responder = respond.get(path);
    if (responder) {
      requests.push({ path, range, status: 0 });
      responder(req, res);
      return;
    }
    const file = join(siteDir, path);
    const body =
      override.get(path) ??
      (!path.includes("..") && existsSync(file) && statSync(file).isFile() ? readFileSync(file) : null);
    if (!body) {
      requests.push({ path, range, status: 404 });
      res.writeHead(404).end();
      return;
    }
    const m = range ? /^bytes=(\d+)-$/.exec(range) : null;
    if (m && Number(m[1]) < body.length) {
      const start = Number(m[1]);
      requests.push({ path, range, status: 206 });
      res.writeHead(206, {
        "content-range": `bytes ${start}-${body.length - 1}/${body.length}`,
        "content-length": body.length - start,
      });
      res.end(body.subarray(start));
      return;
    }
    requests.push({ path, range, status: 200 });
    res.writeHead(200, { "content-length": body.length }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const origin = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}`;
  return {
    origin,
    override,
    respond,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type Mirror = Awaited<ReturnType<typeof startMirror>>;

export function operatorKeys(): { root: TufKeyFile; online: OnlineKeys } {
  const all = generateKeySet();
  return { root: all.root, online: onlineKeyBundle(all) };
}

/** A temp portal served by a loopback mirror, with a first signed root; publish() imports and re-signs. */
export async function signedPortal() {
  const project = catalogProject();
  const mirror = await startMirror(project.siteDir);
  project.setBaseUrl(mirror.origin);
  const keys = operatorKeys();
  const root = new Metadata(buildRoot(1, { root: keys.root, ...keys.online.keys }, new Date()));
  root.sign(signerFor(keys.root));
  writeRoot(project.siteDir, root);
  const work = mkdtempSync(join(tmpdir(), "svc-manager-"));
  const portal = {
    project,
    mirror,
    keys,
    work,
    siteDir: project.siteDir,
    trustedRoot: join(project.siteDir, "tuf", "1.root.json"),
    async publish(fixture: ModFixture, sign: { now?: () => Date } = {}) {
      const { packageBytes, sidecar } = modRelease(fixture);
      await publishRelease(publisherOptions(project), { packageBytes, sidecar, source: { kind: "import" } });
      return signSite(project.siteDir, keys.online, sign.now);
    },
    /** Publishes a release built by guideRelease (or any package + sidecar) and re-signs. */
    async publishPackage(release: { packageBytes: Buffer; sidecar: ReleaseSubmission }) {
      await publishRelease(publisherOptions(project), { ...release, source: { kind: "import" } });
      return signSite(project.siteDir, keys.online);
    },
    /** A moderator's takedown: the version leaves versions.json and the catalog; the site is re-signed. */
    async hide(modId: string, version: string) {
      await hideRelease(publisherOptions(project), modId, version);
      return signSite(project.siteDir, keys.online);
    },
    client(name = "client", overrides: Partial<ConstructorParameters<typeof ManagerClient>[0]> = {}) {
      return new ManagerClient({
        mirrorUrl: mirror.origin,
        cacheDir: join(work, name, "cache"),
        trustedRootFile: portal.trustedRoot,
        ...overrides,
      });
    },
    installDir: (name = "client") => join(work, name, "game"),
    /** A copy of the site as it is now, to replay later (the rollback attacker's stock). */
    copySite() {
      const copy = mkdtempSync(join(tmpdir(), "svc-site-copy-"));
      cpSync(project.siteDir, copy, { recursive: true });
      return copy;
    },
    async close() {
      await mirror.close();
      project.cleanup();
      rmSync(work, { recursive: true, force: true });
    },
  };
  return portal;
}

/** path -> sha256 of every file under dir (missing dir: empty). */
export function treeHashes(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  if (!existsSync(dir)) return out;
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const full = join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else out.set(relative(dir, full), createHash("sha256").update(readFileSync(full)).digest("hex"));
    }
  };
  walk(dir);
  return out;
}

export interface GuideReleaseFixture {
  modId?: string;
  name?: string;
  version: string;
  /** Package path -> content, as the package guide (docs/modders.md) lays a package out. */
  files: Record<string, string>;
  entrypoints?: Entrypoint[];
  modConfig?: unknown;
}

/**
 * A package as docs/modders.md describes one: svc-mod.json at the root, files at game-root paths
 * (`Binaries/Win64/Mods/X.dll`, `Content/Paks/X.pak`), optionally a modConfig settings file.
 */
export function guideRelease(fixture: GuideReleaseFixture) {
  const base = modRelease({ modId: fixture.modId, name: fixture.name, version: fixture.version });
  const entrypoints = fixture.entrypoints ?? [{ path: Object.keys(fixture.files)[0]!, kind: "asset" }];
  const extra = fixture.modConfig === undefined ? {} : { modConfig: fixture.modConfig };
  const manifest = { ...base.manifest, entrypoints, ...extra };
  const packageBytes = writeZip([
    { name: "svc-mod.json", data: `${JSON.stringify(manifest, null, 2)}\n` },
    ...Object.entries(fixture.files).map(([name, data]) => ({ name, data })),
  ]);
  const sidecar = {
    ...base.sidecar,
    entrypoints,
    ...extra,
    package: {
      fileName: base.sidecar.package.fileName,
      sha256: createHash("sha256").update(packageBytes).digest("hex"),
      sizeBytes: packageBytes.length,
    },
  } as ReleaseSubmission;
  return { packageBytes, sidecar, manifest };
}
