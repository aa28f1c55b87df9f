// Issue 25 item 11: the pages' links to the modder's guide pointed at portal.config.json's
// repository, which in a fresh checkout is the template's placeholder (github.com/svc-portal/mods):
// a dead link. A portal on this machine links the guides its own server sends.
import { afterEach, describe, expect, it } from "vitest";
import { type CatalogProject, catalogProject } from "../support/catalog-project.ts";
import { type DevPortal, startDevPortal, stopDevPortal } from "../support/dev-portal.ts";
import { docsUrl } from "../../src/pages/render-pages.ts";

let project: CatalogProject | undefined;
let portal: DevPortal | undefined;
afterEach(async () => {
  if (portal) await stopDevPortal(portal);
  portal = undefined;
  project?.cleanup();
  project = undefined;
});

describe("the modder's guide from the pages", () => {
  it("on npm start, the upload page's guide link answers with docs/modders.md", async () => {
    project = catalogProject();
    portal = await startDevPortal(project.root);
    const page = await (await fetch(`${portal.origin}/releases/new/`)).text();
    const href = /<a href="([^"]+)"[^>]*>modder's guide<\/a>/.exec(page)?.[1];
    expect(href).toBe(`${portal.origin}/docs/modders.md`);
    const guide = await fetch(href!);
    expect(guide.status).toBe(200);
    expect(guide.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    expect((await guide.text()).startsWith("# Making a mod package\n")).toBe(true);
    // The reason links of the submission page use the validation guide the same way.
    const submission = await (await fetch(`${portal.origin}/releases/submission/`)).text();
    expect(submission).toContain(`data-validation-guide="${portal.origin}/docs/validation.md"`);
    expect((await fetch(`${portal.origin}/docs/validation.md`)).status).toBe(200);
    // Only guides: no path outside docs/, nothing that is not a .md file.
    for (const path of ["/docs/../README.md", "/docs/%2e%2e/README.md", "/docs/nope.md", "/docs/modders.txt"])
      expect((await fetch(`${portal.origin}${path}`)).status, path).toBe(404);
  }, 120_000);

  it("a public portal links the guides on GitHub, in its repository", () => {
    project = catalogProject();
    const config = { ...project.config, baseUrl: "https://mods.example.org" };
    expect(docsUrl(config, "modders.md")).toBe(
      `https://github.com/${config.portal.repository}/blob/${config.portal.defaultBranch ?? "main"}/docs/modders.md`,
    );
  });
});
