/**
 * GitHub-backed submissions switch on only with a complete set of settings; a partial one fails
 * closed with the missing variable's name, and a PEM with escaped newlines is restored.
 */
import { generateKeyPairSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { parseSettings } from "../../src/config/settings.ts";
import { isSvcError } from "../../src/errors.ts";

const pem = generateKeyPairSync("rsa", { modulusLength: 1024 })
  .privateKey.export({ type: "pkcs1", format: "pem" })
  .toString();

function refusal(env: Record<string, string>): string {
  try {
    parseSettings(env, { dataDir: "/tmp/x" });
  } catch (error) {
    if (isSvcError(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error("accepted");
}

describe("GitHub settings", () => {
  it("stays off without SVC_PORTAL_REPOSITORY, even with app credentials around", () => {
    expect(parseSettings({ APP_ID: "1", PRIVATE_KEY: pem }, { dataDir: "/tmp/x" }).github).toBeNull();
  });

  it("takes SVC_GITHUB_* or Probot's APP_ID/PRIVATE_KEY, restores escaped PEM newlines, defaults the API URL", () => {
    const escaped = pem.trim().replace(/\n/g, "\\n");
    const settings = parseSettings(
      {
        SVC_PORTAL_REPOSITORY: "acme/portal",
        APP_ID: "12",
        PRIVATE_KEY: escaped,
        SVC_BOT_LOGINS: "svc[bot], x",
      },
      { dataDir: "/tmp/x" },
    );
    expect(settings.github).toEqual({
      repository: "acme/portal",
      appId: "12",
      privateKey: pem.trim(),
      apiUrl: "https://api.github.com",
      botLogins: ["svc[bot]", "x"],
    });
  });

  it("fails closed, naming what is missing or wrong", () => {
    expect(refusal({ SVC_PORTAL_REPOSITORY: "acme/portal", SVC_GITHUB_PRIVATE_KEY: pem })).toMatch(
      /^config_invalid: .*SVC_GITHUB_APP_ID/,
    );
    expect(refusal({ SVC_PORTAL_REPOSITORY: "acme/portal", SVC_GITHUB_APP_ID: "1" })).toMatch(
      /^config_invalid: .*SVC_GITHUB_PRIVATE_KEY/,
    );
    expect(
      refusal({ SVC_PORTAL_REPOSITORY: "acme", SVC_GITHUB_APP_ID: "1", SVC_GITHUB_PRIVATE_KEY: pem }),
    ).toMatch(/^config_invalid: SVC_PORTAL_REPOSITORY must be owner\/name/);
    expect(
      refusal({
        SVC_PORTAL_REPOSITORY: "acme/portal",
        SVC_GITHUB_APP_ID: "1",
        SVC_GITHUB_PRIVATE_KEY: pem,
        SVC_GITHUB_API_URL: "http://github.example",
      }),
    ).toMatch(/^config_invalid: SVC_GITHUB_API_URL must be an https URL/);
  });
});
