import type { Browser, Page, Route } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { schemaRegistry } from "../../src/contracts/schemas.ts";
import { collectPageErrors, launchBrowser, SKIP_BROWSER } from "../support/browser.ts";
import { type BrowserPortal, startBrowserPortal } from "../support/browser-portal.ts";
import { tempProject } from "../support/temp-project.ts";

/**
 * The claim a moderator weighs, on the moderation pages: the review page says in words how the
 * uploader stands to the mod (a new mod id they would claim, owner, collaborator, or a claim that
 * publication will refuse) and who owns it; the queue keeps its row text and carries the claim in
 * the mod link's title. The session, queue and submission answers are a FAKE network (Playwright)
 * with bodies checked against svc.upload-submission.v1; the pages and scripts are the real build.
 */

let browser: Browser;
let project: ReturnType<typeof tempProject>;
let portal: BrowserPortal;

beforeAll(async () => {
  if (SKIP_BROWSER) return;
  browser = await launchBrowser();
  project = tempProject();
  portal = await startBrowserPortal(project);
});
afterAll(async () => {
  await browser?.close();
  await portal?.close();
  project?.cleanup();
});

const ID = "sub_0123456789abcdefghij";
const UPLOADER = { account: "acct_uploader000000000000" };
const OWNER = { account: "acct_theowner000000000000" };
const at = new Date().toISOString();

function submission(ownership: { claim: string; owners: unknown[] }) {
  return {
    schema: "svc.upload-submission.v1",
    submissionId: ID,
    ownerAccountId: UPLOADER.account,
    modId: "night-sky",
    version: "1.0.0",
    state: "pending_review",
    packageSha256: "a".repeat(64),
    validationChecks: [],
    review: { state: "pending", decisions: [], queuePosition: 1, medianWaitSeconds: null },
    ownership,
    createdAt: at,
    updatedAt: at,
  };
}

const json = (route: Route, body: unknown) =>
  route.fulfill({ status: 200, contentType: "application/json; charset=utf-8", body: JSON.stringify(body) });

async function fakeApi(page: Page, body: ReturnType<typeof submission>) {
  await page.route("**/api/v1/auth/session", (route) =>
    json(route, {
      session: {
        accountId: "acct_mod",
        displayName: "Mo",
        email: "mo@mods.test",
        roles: ["moderator"],
        csrfToken: "c",
      },
    }),
  );
  await page.route("**/api/v1/moderation/releases*", (route) =>
    json(route, {
      items: [
        {
          submissionId: ID,
          modId: body.modId,
          version: body.version,
          state: body.state,
          ownerAccountId: body.ownerAccountId,
          packageSha256: body.packageSha256,
          queuePosition: 1,
          ageSeconds: 60,
          failedChecks: [],
          ownership: body.ownership,
          createdAt: at,
          updatedAt: at,
          statusUrl: `/api/v1/uploads/${ID}`,
        },
      ],
      nextCursor: null,
      medianWaitSeconds: null,
    }),
  );
  await page.route(`**/api/v1/uploads/${ID}`, (route) => json(route, body));
}

const CASES = [
  {
    ownership: { claim: "new_mod", owners: [UPLOADER] },
    claim: "The uploader claims the new mod id night-sky.",
    owners: `Owner once published\naccount ${UPLOADER.account}`,
  },
  {
    ownership: { claim: "collaborator", owners: [OWNER, { github: "co-owner" }] },
    claim: "The uploader is a collaborator on night-sky.",
    owners: `Owners\naccount ${OWNER.account}, @co-owner`,
  },
  {
    ownership: { claim: "not_permitted", owners: [OWNER] },
    claim: "The uploader is not an owner or collaborator of night-sky: its publication will be refused.",
    owners: `Owners\naccount ${OWNER.account}`,
  },
];

describe.skipIf(SKIP_BROWSER)("the claim on the moderation pages", () => {
  it("the fake bodies match svc.upload-submission.v1", () => {
    const registry = schemaRegistry(project.config.baseUrl);
    for (const { ownership } of CASES) {
      const result = registry.validate("upload-submission", submission(ownership));
      expect(result.ok ? [] : result.issues).toEqual([]);
    }
  });

  for (const { ownership, claim, owners } of CASES) {
    it(`shows a ${ownership.claim} claim on the review page and in the queue link's title`, async () => {
      const context = await browser.newContext();
      const page = await context.newPage();
      const errors = collectPageErrors(page);
      await fakeApi(page, submission(ownership));
      await page.goto(`${portal.origin}/moderation/review/?id=${ID}`);
      await expect.poll(() => page.locator("#facts").innerText()).toContain(`Claim\n${claim}`);
      expect(await page.locator("#facts").innerText()).toContain(owners);
      await page.goto(`${portal.origin}/moderation/`);
      const link = page.getByRole("link", { name: "night-sky" });
      await expect.poll(() => link.getAttribute("title")).toBe(claim);
      expect(await page.locator("#queue-rows tr td:nth-child(2)").allInnerTexts()).toEqual(["night-sky"]);
      expect(errors).toEqual([]);
      await context.close();
    });
  }
});
