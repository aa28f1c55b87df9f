import { writeFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { validateSidecar } from "../../src/validation/documents.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";
import { runCli } from "../support/run-cli.ts";

/** Issue 25 item 4: `svc new` starts a new version from the mod's last published version on the portal. */
let project: CatalogProject;
afterEach(() => project?.cleanup());

const URL_OF = (file: string) => `https://github.com/ada/better-hud/releases/download/v1.2.0/${file}`;
const PUBLISHED = {
  summary: "A cleaner heads-up display.",
  description: "Moves the minimap and keeps the compass.",
  links: { homepage: "https://hud.example/", issues: "https://github.com/ada/better-hud/issues" },
  tags: ["ui", "hud"],
  license: "MIT",
  authors: [{ name: "Ada Lovelace", github: "ada" }, { name: "Grace" }],
};

async function portalWithVersion() {
  project = catalogProject();
  const { packageBytes, sidecar } = modRelease({ version: "1.1.0" });
  Object.assign(sidecar, PUBLISHED);
  await publishRelease(publisherOptions(project), { packageBytes, sidecar, source: { kind: "import" } });
  // The next version's package, as svc pack would build it.
  writeFileSync(join(project.root, "better-hud-1.2.0.zip"), modRelease({ version: "1.2.0" }).packageBytes);
}

const svcNew = (...args: string[]) =>
  runCli(
    ["new", "--package", "better-hud-1.2.0.zip", "--url", URL_OF("better-hud-1.2.0.zip"), "--json", ...args],
    project.root,
  );

describe("svc new carries the last published version's metadata forward", () => {
  it("from the portal's site: only the release notes are typed; flags win", async () => {
    await portalWithVersion();
    const r = await svcNew("--notes", "1.2.0: north-up minimap.", "--tag", "minimap");
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout);
    expect(out.sidecar).toMatchObject({
      ...PUBLISHED,
      tags: ["minimap"],
      version: "1.2.0",
      releaseNotes: "1.2.0: north-up minimap.",
    });
    expect(out.carried).toMatchObject({
      version: "1.1.0",
      fields: ["summary", "description", "authors", "links", "license"],
    });
    expect(validateSidecar(out.sidecar).ok).toBe(true);
  });

  it("from GET {portal}/api/v1/mods/{modId} with --portal", async () => {
    await portalWithVersion();
    const detail = project.read("site/api/v1/mods/better-hud/index.json");
    const requests: string[] = [];
    const server = createServer((req, res) => {
      requests.push(req.url ?? "");
      if (req.url === "/api/v1/mods/better-hud") {
        res.writeHead(200, { "content-type": "application/json" }).end(detail);
      } else res.writeHead(404).end();
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    try {
      const portal = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const r = await svcNew("--notes", "1.2.0.", "--portal", portal);
      expect(r.code).toBe(0);
      expect(JSON.parse(r.stdout).sidecar).toMatchObject(PUBLISHED);
      expect(requests).toEqual(["/api/v1/mods/better-hud"]);
    } finally {
      server.close();
    }
  });

  it("a mod the portal does not list still needs its authors; --no-portal ignores the portal", async () => {
    await portalWithVersion();
    const first = await svcNew("--notes", "1.2.0.", "--no-portal", "--summary", "S.");
    expect(first.code).toBe(1);
    expect(JSON.parse(first.stdout)).toMatchObject({
      code: "sidecar_incomplete",
      problems: ['authors: missing; give it with --author "NAME [@LOGIN]" (or --from)'],
    });
  });
});
