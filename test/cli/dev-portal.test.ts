import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { devPortalConfig, RESET_LIMITS_HINT, resetLimits } from "../../src/cli/dev-portal.ts";
import { listeningBaseUrl } from "../../src/config/portal-config.ts";
import { parseSettings } from "../../src/config/settings.ts";
import { isSvcError } from "../../src/errors.ts";
import { createAppContext } from "../../src/http/app.ts";
import { createPgliteStore, migrate, type Store } from "../../src/store/index.ts";
import { repoConfig } from "../support/temp-project.ts";

describe("a development portal's base URL follows the port it listens on", () => {
  const cases: Array<[string, string, number, string]> = [
    ["http://127.0.0.1:8787", "127.0.0.1", 8799, "http://127.0.0.1:8799"],
    ["http://127.0.0.1:8787", "0.0.0.0", 8799, "http://127.0.0.1:8799"],
    ["http://localhost:8787", "127.0.0.1", 8799, "http://127.0.0.1:8799"],
    ["http://127.0.0.1:8787", "::1", 8799, "http://[::1]:8799"],
    ["http://127.0.0.1:8787/portal", "127.0.0.1", 9000, "http://127.0.0.1:9000/portal"],
    ["http://127.0.0.1:8787", "127.0.0.1", 8787, "http://127.0.0.1:8787"],
    // Public bases, and addresses other machines use, are the operator's choice.
    ["https://mods.example.org", "127.0.0.1", 8799, "https://mods.example.org"],
    ["http://127.0.0.1:8787", "192.168.1.20", 8799, "http://127.0.0.1:8787"],
  ];
  for (const [base, host, port, expected] of cases) {
    it(`${base} listening on ${host}:${port} -> ${expected}`, () => {
      expect(listeningBaseUrl(base, { host, port })).toBe(expected);
    });
  }

  it("devPortalConfig keeps the configuration object when nothing changes", () => {
    const config = repoConfig();
    expect(devPortalConfig(config, "127.0.0.1", 8787)).toBe(config);
    expect(devPortalConfig(config, "127.0.0.1", 8799)).toEqual({
      ...config,
      baseUrl: "http://127.0.0.1:8799",
    });
  });
});

describe("rate limits on a development portal", () => {
  let store: Store;
  beforeAll(async () => {
    store = await createPgliteStore(null);
    await migrate(store);
  });
  afterAll(() => store?.close());

  it("name the reset in every rate_limit_exceeded, and --reset-limits clears the windows", async () => {
    const config = repoConfig();
    const settings = parseSettings({ SVC_DEV_EMAIL: "return-token" }, { dataDir: "/nonexistent" });
    const app = await createAppContext({
      config,
      settings,
      siteDir: "/nonexistent",
      log: () => {},
      store,
      rateLimitResetHint: RESET_LIMITS_HINT,
    });
    const limit = config.limits.rateLimits.accountCreation.limit;
    for (let i = 0; i < limit; i++) await app.accounts!.consumeRateLimit("accountCreation", "ip:127.0.0.1");
    const refused = await app.accounts!.consumeRateLimit("accountCreation", "ip:127.0.0.1").catch((e) => e);
    expect(isSvcError(refused) && refused.code).toBe("rate_limit_exceeded");
    expect(refused.message).toMatch(
      /^too many requests for accountCreation; retry in \d+ s \(development portal:/,
    );
    expect(refused.message).toContain("npm start -- --reset-limits");
    expect(refused.details).toMatchObject({ bucket: "accountCreation", reset: RESET_LIMITS_HINT });
    expect(refused.retryAfterSeconds).toBeGreaterThan(0);

    expect(await resetLimits(store)).toBe("  limits      cleared 1 rate-limit window(s) (--reset-limits)");
    await expect(app.accounts!.consumeRateLimit("accountCreation", "ip:127.0.0.1")).resolves.toBeUndefined();
  });

  it("a portal started without --dev names no reset", async () => {
    const config = repoConfig();
    const app = await createAppContext({
      config,
      settings: parseSettings({}, { dataDir: "/nonexistent" }),
      siteDir: "/nonexistent",
      log: () => {},
      store,
    });
    const limit = config.limits.rateLimits.sessionCreation.limit;
    for (let i = 0; i <= limit; i++)
      await app.accounts!.consumeRateLimit("sessionCreation", "ip:10.0.0.1").catch(() => {});
    const refused = await app.accounts!.consumeRateLimit("sessionCreation", "ip:10.0.0.1").catch((e) => e);
    expect(refused.code).toBe("rate_limit_exceeded");
    expect(refused.message).not.toContain("reset");
  });
});
