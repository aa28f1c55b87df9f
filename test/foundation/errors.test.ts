// One error family: every code is registered once with its status, scope and meaning; the API's
// status table and the distribution codes are views of that registry; docs/errors.md lists every
// code as the registry does; and svc exits 1 for a domain error, 2 for a usage error.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { PassThrough } from "node:stream";
import { main } from "../../src/cli/main.ts";
import { DISTRIBUTION_CODES, DistributionError } from "../../src/distribution/errors.ts";
import { ERROR_CODES, ERROR_STATUS, SvcError } from "../../src/errors.ts";
import { CatalogPushError } from "../../src/github/catalog-push.ts";
import { InstallationTokenError } from "../../src/github/installation-token.ts";
import { PublishRunError } from "../../src/pipeline/publish-action.ts";
import { VisibilityRefusal } from "../../src/pipeline/publish-visibility.ts";

const docs = readFileSync(fileURLToPath(new URL("../../docs/errors.md", import.meta.url)), "utf8");

describe("the error registry", () => {
  it("gives every code a status, a scope and a meaning", () => {
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      expect(code).toMatch(/^[a-z][a-z0-9_]*$/);
      expect(entry.status, code).toBeGreaterThanOrEqual(400);
      expect(entry.status, code).toBeLessThan(600);
      expect(["http", "manager", "github", "cli", "local"]).toContain(entry.scope);
      expect(entry.meaning.length, code).toBeGreaterThan(10);
    }
  });

  it("derives the API's status table and the distribution codes from it", () => {
    expect(Object.keys(ERROR_STATUS)).toEqual(
      Object.keys(ERROR_CODES).filter((c) => ERROR_CODES[c as keyof typeof ERROR_CODES].scope === "http"),
    );
    expect(ERROR_STATUS.rate_limit_exceeded).toBe(429);
    expect(Object.keys(DISTRIBUTION_CODES)).toContain("catalog_tampered");
    expect(DISTRIBUTION_CODES.catalog_tampered).toBe(ERROR_CODES.catalog_tampered.meaning);
  });

  it("makes every typed error an SvcError with a registered code and its status", () => {
    const errors = [
      new DistributionError("catalog_tampered", "x"),
      new CatalogPushError("push_protected", "x"),
      new VisibilityRefusal("visibility_input_invalid", "x"),
      new PublishRunError("not_default_branch", "x"),
      new InstallationTokenError("app_not_installed", "x"),
    ];
    for (const error of errors) {
      expect(error).toBeInstanceOf(SvcError);
      expect(error.status).toBe(ERROR_CODES[error.code].status);
      expect(error.isUsage).toBe(false);
    }
    expect(new SvcError("pack_out_invalid", "x").isUsage).toBe(true);
  });

  it("docs/errors.md lists every code with its status and meaning", () => {
    for (const [code, entry] of Object.entries(ERROR_CODES)) {
      expect(docs).toContain(`| \`${code}\` | ${entry.status} | ${entry.meaning} |`);
    }
    const documented = [...docs.matchAll(/^\| `([a-z0-9_]+)` \|/gm)].map((m) => m[1]);
    expect(documented.sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });
});

describe("svc exit codes", () => {
  const run = async (argv: string[]) => {
    const stderr = new PassThrough();
    let text = "";
    stderr.on("data", (chunk) => {
      text += chunk;
    });
    const code = await main(argv, { stdout: new PassThrough(), stderr, cwd: process.cwd(), env: {} });
    return { code, stderr: text };
  };

  it("exits 2 for a usage error and 1 for a domain error", async () => {
    const unknownFlag = await run(["check", "--no-such-flag"]);
    expect(unknownFlag.code).toBe(2);
    expect(unknownFlag.stderr).toMatch(/^svc check: usage_invalid: /);
    const badConfig = await run(["check", "--config", "no-such-portal.config.json"]);
    expect(badConfig.code).toBe(1);
    expect(badConfig.stderr).toMatch(/^svc check: config_invalid: cannot read /);
    expect((await run(["no-such-command"])).code).toBe(2);
  });
});
