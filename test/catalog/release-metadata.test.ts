import { afterEach, describe, expect, it } from "vitest";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { loadSiteInputs } from "../../src/catalog/site.ts";
import type { ModDetailDocument } from "../../src/contracts/catalog.ts";
import { carryForward } from "../../src/contracts/carry-forward.ts";
import { SvcError } from "../../src/errors.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";

/** Issue 25 items 4 and 5: the license is kept, and a new version starts from the last one's metadata. */
let project: CatalogProject;
afterEach(() => project?.cleanup());

type Sidecar = ReturnType<typeof modRelease>["sidecar"];

function publish(version: string, edit: (sidecar: Sidecar) => void = () => {}) {
  const { packageBytes, sidecar } = modRelease({ version });
  edit(sidecar);
  return publishRelease(publisherOptions(project), { packageBytes, sidecar, source: { kind: "import" } });
}

const detail = () => JSON.parse(project.read("site/api/v1/mods/better-hud/index.json")) as ModDetailDocument;
const page = () => project.read("site/mods/better-hud/index.html");
const stored = (version: string) =>
  loadSiteInputs(project.config, project.recordsDir).records.find((r) => r.version === version);

describe("release metadata", () => {
  it("keeps the license: in the record, on the detail document and on the page", async () => {
    project = catalogProject();
    const first = await publish("1.0.0", (s) => {
      s.license = "MIT";
    });
    expect(first.record.license).toBe("MIT");
    expect(stored("1.0.0")?.license).toBe("MIT");
    expect(detail().license).toBe("MIT");
    expect(page()).toContain("<dt>License</dt><dd>MIT</dd>");

    // A new license wins; the document and page show the newest visible version's.
    await publish("2.0.0", (s) => {
      s.license = "GPL-3.0-or-later";
    });
    expect(stored("1.0.0")?.license).toBe("MIT");
    expect(detail().license).toBe("GPL-3.0-or-later");
    expect(page()).toContain("<dt>License</dt><dd>GPL-3.0-or-later</dd>");
  });

  it("a mod without a license: null on the detail document, nothing on the page", async () => {
    project = catalogProject();
    const first = await publish("1.0.0");
    expect(first.record).not.toHaveProperty("license");
    expect(detail().license).toBeNull();
    expect(page()).not.toContain("<dt>License</dt>");
  });

  it("carries description, links, tags, license and authors forward from the last published version; what is sent wins", async () => {
    project = catalogProject();
    await publish("1.0.0", (s) => {
      s.description = "A long description.";
      s.links = { homepage: "https://hud.example/", source: "https://github.com/ada/better-hud" };
      s.tags = ["ui", "hud"];
      s.license = "MIT";
      s.authors = [{ name: "Ada", github: "ada" }, { name: "Grace" }];
    });
    // A new version that sends only what changes: its notes, and a new tag list.
    const second = await publish("1.1.0", (s) => {
      delete s.description;
      delete s.links;
      delete s.license;
      delete (s as { authors?: unknown }).authors;
      s.tags = ["ui"];
    });
    expect(second.record).toMatchObject({
      description: "A long description.",
      links: { homepage: "https://hud.example/", source: "https://github.com/ada/better-hud" },
      tags: ["ui"],
      license: "MIT",
      authors: [{ name: "Ada", github: "ada" }, { name: "Grace" }],
      releaseNotes: "Release 1.1.0.",
    });
    expect(detail()).toMatchObject({
      latestVersion: "1.1.0",
      description: "A long description.",
      links: { homepage: "https://hud.example/" },
      tags: ["ui"],
      license: "MIT",
    });
    // An empty description sent on purpose clears it.
    const third = await publish("1.2.0", (s) => {
      s.description = "";
      delete (s as { authors?: unknown }).authors;
    });
    expect(third.record.description).toBe("");
    expect(third.record.authors).toEqual([{ name: "Ada", github: "ada" }, { name: "Grace" }]);

    // Publishing the same sidecar again is the same release (what it left out was carried).
    const again = await publish("1.1.0", (s) => {
      delete s.description;
      delete s.links;
      delete s.license;
      delete (s as { authors?: unknown }).authors;
      s.tags = ["ui"];
    });
    expect(again.alreadyPublished).toBe(true);
  });

  it("a first release names its authors", async () => {
    project = catalogProject();
    const error = await publish("1.0.0", (s) => {
      delete (s as { authors?: unknown }).authors;
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SvcError);
    expect((error as SvcError).code).toBe("invalid_payload");
    expect((error as SvcError).details).toMatchObject({ field: "authors" });
    expect(project.exists("site/api/v1/mods/better-hud/index.json")).toBe(false);
  });

  it("carryForward takes only what the sidecar leaves out, and never a null license", () => {
    const previous = {
      description: "d",
      links: { source: "https://s.example/" },
      tags: ["a"],
      license: null,
      authors: [{ name: "Ada" }],
    };
    expect(carryForward({ tags: [] as string[] }, previous)).toEqual({
      sidecar: {
        tags: [],
        description: "d",
        links: { source: "https://s.example/" },
        authors: [{ name: "Ada" }],
      },
      carried: ["description", "links", "authors"],
    });
    expect(carryForward({ license: "MIT" }, null)).toEqual({ sidecar: { license: "MIT" }, carried: [] });
  });
});
