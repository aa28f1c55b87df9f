// Who may publish a mod, on the publisher's side: the first accepted submission claims an unclaimed
// mod id in the same commit as its release, a stranger's release of a claimed mod is refused and
// nothing is written, collaborators publish, and ownership changes land in the record and the
// detail document together (and stay what svc build writes).
import { afterEach, describe, expect, it } from "vitest";
import { changeOwnership } from "../../src/catalog/ownership-change.ts";
import { publishRelease } from "../../src/catalog/publisher.ts";
import { checkContractRules } from "../../src/catalog/contract-rules.ts";
import { loadSiteInputs, renderSite } from "../../src/catalog/site.ts";
import { SvcError } from "../../src/errors.ts";
import {
  type CatalogProject,
  catalogProject,
  modRelease,
  publisherOptions,
} from "../support/catalog-project.ts";
import { ownershipIn, ownersPath } from "../support/records.ts";

let project: CatalogProject;
afterEach(() => project?.cleanup());

const author = { account: "acct_author0000000000000" } as const;
const stranger = { account: "acct_stranger00000000000" } as const;
const coAuthor = { github: "co-author" } as const;

function publish(version: string, who: { account: string } | { github: string } | null) {
  const { packageBytes, sidecar } = modRelease({ version });
  return publishRelease(publisherOptions(project), {
    packageBytes,
    sidecar,
    source: { kind: "upload", submissionId: `sub_${version.replaceAll(".", "_")}` },
    ...(who
      ? {
          submitter: {
            identity: [who],
            claimAs: who,
            sourceRepository: { fullName: "author/better-hud", id: 4242 },
          },
        }
      : {}),
  });
}

function expectNoDrift() {
  const expected = renderSite(loadSiteInputs(project.config, project.recordsDir), project.siteDir);
  for (const [path, text] of expected) expect(project.read(`site/${path}`), path).toBe(text);
  expect(checkContractRules(expected)).toEqual([]);
}

const detailOwnership = () =>
  (JSON.parse(project.read("site/api/v1/mods/better-hud/index.json")) as { ownership: unknown }).ownership;

describe("mod ownership in the publisher", () => {
  it("claims an unclaimed mod for its first accepted submission, in the release's own commit", async () => {
    project = catalogProject();
    const result = await publish("1.0.0", author);
    expect(result.written).toContain(ownersPath("better-hud"));
    const record = ownershipIn(project.read(ownersPath("better-hud")), "better-hud")!;
    expect(record.owners).toEqual([author]);
    expect(record.sourceRepository).toEqual({ fullName: "author/better-hud", id: 4242 });
    expect(record.history).toEqual([
      expect.objectContaining({ action: "claim", by: author, submissionId: "sub_1_0_0" }),
    ]);
    expect(detailOwnership()).toEqual({
      owners: [author],
      collaborators: [],
      sourceRepository: { fullName: "author/better-hud", id: 4242 },
      trustedPublishers: [],
    });
    expectNoDrift();
  });

  it("refuses a stranger's release of a claimed mod and writes nothing", async () => {
    project = catalogProject();
    await publish("1.0.0", author);
    const before = project.snapshot();
    const error = await publish("1.1.0", stranger).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(SvcError);
    expect((error as SvcError).code).toBe("forbidden");
    expect((error as SvcError).message).toMatch(
      /account acct_stranger00000000000 is not an owner or collaborator of better-hud/,
    );
    expect(project.snapshot()).toEqual(before);
  });

  it("lets a collaborator publish once an owner adds them, and shows them in the detail document", async () => {
    project = catalogProject();
    await publish("1.0.0", author);
    await changeOwnership(publisherOptions(project), "better-hud", (current, at) => ({
      ...current!,
      collaborators: [coAuthor],
      history: [...current!.history, { at, action: "add_collaborator", by: author, subject: coAuthor }],
    }));
    expect(detailOwnership()).toEqual(expect.objectContaining({ collaborators: [coAuthor] }));
    expectNoDrift();
    const result = await publish("1.1.0", coAuthor);
    expect(result.record.version).toBe("1.1.0");
    // The claim is not repeated: the owners stay as they were.
    const record = ownershipIn(project.read(ownersPath("better-hud")), "better-hud")!;
    expect(record.owners).toEqual([author]);
    expect(record.history.map((c) => c.action)).toEqual(["claim", "add_collaborator"]);
  });

  it("publishes without ownership when no submitter is named (an operator's svc import)", async () => {
    project = catalogProject();
    await publish("1.0.0", null);
    expect(project.snapshot().has(ownersPath("better-hud"))).toBe(false);
    expect(detailOwnership()).toBeNull();
    expectNoDrift();
  });

  it("refuses an ownership change the schema does not allow, and changes nothing", async () => {
    project = catalogProject();
    await publish("1.0.0", author);
    const before = project.snapshot();
    const error = await changeOwnership(publisherOptions(project), "better-hud", (current) => ({
      ...current!,
      owners: [],
    })).then(
      () => null,
      (e: unknown) => e,
    );
    expect((error as SvcError).code).toBe("invalid_payload");
    expect(project.snapshot()).toEqual(before);
  });
});
