import { createHash } from "node:crypto";
import { afterEach, beforeEach, expect, it } from "vitest";
import { writeZip } from "../support/zip.ts";
import { type BotHarness, examplePayload, startBot } from "./support/bot-harness.ts";
import { sidecar } from "./support/scenario.ts";

const SCENARIOS = new URL("./scenarios/", import.meta.url).pathname;
let bot: BotHarness;
beforeEach(async () => {
  bot = await startBot();
});
afterEach(async () => {
  await bot.stop();
});

it("release.published in a mod repository opens the submission PR with the measured sha256 and size", async () => {
  const zip = writeZip([{ name: "svc-mod.json", data: "{}" }]);
  const { package: _omit, ...meta } = sidecar();
  const zipUrl = bot.github.serveRaw("/assets/better-hud-1.2.0.zip", (_q, r) => r.writeHead(200).end(zip));
  const metaUrl = bot.github.serveRaw("/assets/svc-release.json", (_q, r) =>
    r.writeHead(200).end(JSON.stringify(meta)),
  );
  const payload = examplePayload("release", "published");
  payload.repository.full_name = "modder/better-hud";
  payload.release.assets = [
    {
      ...structuredClone(payload.release.assets?.[0] ?? {}),
      name: "better-hud-1.2.0.zip",
      browser_download_url: zipUrl,
      size: zip.length,
    },
    {
      ...structuredClone(payload.release.assets?.[0] ?? {}),
      name: "svc-release.json",
      browser_download_url: metaUrl,
      size: 10,
    },
  ];
  bot.github.expect("GET /repos/{owner}/{repo}/installation", {
    body: { id: 2, account: { login: "Codertocat" } },
  });
  bot.github.expect("GET /repos/{owner}/{repo}", {
    body: { default_branch: "main", full_name: "Codertocat/Hello-World" },
  });
  bot.github.expect("GET /repos/{owner}/{repo}/git/ref/{ref}", {
    body: { ref: "refs/heads/main", object: { sha: "9".repeat(40), type: "commit" } },
  });
  bot.github.expect("POST /repos/{owner}/{repo}/git/refs", {
    body: { ref: "refs/heads/svc/release/better-hud/1.2.0" },
  });
  bot.github.expect("PUT /repos/{owner}/{repo}/contents/{path}", {
    body: { content: {}, commit: { sha: "c".repeat(40) } },
  });
  bot.github.expect("POST /repos/{owner}/{repo}/pulls", { body: { number: 42 } });
  const from = bot.github.recorded.length;
  expect((await bot.deliver("release", payload)).status).toBe(200);
  bot.github.assertDone();
  const put = bot.github.calls("PUT /repos/{owner}/{repo}/contents/{path}")[0]!;
  expect(put.params.path).toBe("submissions/better-hud/1.2.0.json");
  const written = JSON.parse(
    Buffer.from((put.body as { content: string }).content, "base64").toString("utf8"),
  );
  expect(written.package).toEqual({
    fileName: "better-hud-1.2.0.zip",
    url: zipUrl,
    sha256: createHash("sha256").update(zip).digest("hex"),
    sizeBytes: zip.length,
  });
  const sent = bot.github.recorded
    .slice(from)
    .filter((r) => r.method !== "GET" && !r.route.startsWith("/app/"));
  const stable = sent.map((r) => ({
    request: `${r.method} ${r.route}`,
    params: r.params,
    body: r.route.includes("contents") ? "(sidecar, asserted above)" : r.body,
  }));
  await expect(`${JSON.stringify(stable, null, 2)}\n`).toMatchFileSnapshot(
    `${SCENARIOS}release-intake/01-published.sent.json`,
  );
});
