import { describe, expect, it } from "vitest";
import { ENDPOINTS, matchEndpoint } from "../../src/contracts/endpoints.ts";
import { HANDLERS } from "../../src/http/handlers/index.ts";

const CONTRACT_IDS = [
  "backend_health",
  "create_account",
  "verify_account",
  "request_magic_link",
  "confirm_magic_link",
  "list_accounts",
  "update_account_roles",
  "current_session",
  "delete_session",
  "create_api_key",
  "list_api_keys",
  "revoke_api_key",
  "api_key_mod_download",
  "create_upload",
  "upload_status",
  "cancel_upload",
  "moderation_queue",
  "moderation_decision",
  "publish_catalog",
  "audit_events",
];
/**
 * Routes beyond the contract's table: list_uploads, a modder's own submissions; the mod ownership
 * routes (read the record, collaborators, trusted publishers, source repository, transfer);
 * trusted_publishing_exchange, a registered workflow's OIDC token for a one-mod upload credential;
 * the review's staged-package download and the suspension of an account's uploads.
 */
const EXTENSION_IDS = [
  "list_uploads",
  "trusted_publishing_exchange",
  "mod_ownership",
  "add_collaborator",
  "remove_collaborator",
  "add_trusted_publisher",
  "remove_trusted_publisher",
  "set_source_repository",
  "transfer_mod",
  "moderation_package",
  "suspend_account_uploads",
  "lift_account_upload_suspension",
];

describe("endpoint table", () => {
  it("lists the contract's 20 backend endpoints once each, plus the extensions", () => {
    expect(ENDPOINTS.map((e) => e.id).filter((id) => !EXTENSION_IDS.includes(id))).toEqual(CONTRACT_IDS);
    expect(ENDPOINTS.filter((e) => EXTENSION_IDS.includes(e.id)).map((e) => e.id)).toEqual(EXTENSION_IDS);
    const keys = ENDPOINTS.map((e) => `${e.method} ${e.path}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it("marks exactly the endpoints with a handler as implemented", () => {
    const implemented = ENDPOINTS.filter((e) => e.status === "implemented")
      .map((e) => e.id)
      .sort();
    expect(Object.keys(HANDLERS).sort()).toEqual(implemented);
  });

  it("gives every authenticated write a CSRF requirement and a rate-limit bucket", () => {
    for (const e of ENDPOINTS.filter((x) => x.authRequired && x.method !== "GET")) {
      expect(e.csrf, e.id).toBe(true);
      expect(e.rateLimit?.scope, e.id).toBe("account");
    }
    for (const id of ["create_account", "verify_account", "request_magic_link", "confirm_magic_link"]) {
      expect(ENDPOINTS.find((e) => e.id === id)!.rateLimit?.scope).toBe("ip");
    }
  });

  it("matches paths with parameters decoded once and refuses traversal in a parameter", () => {
    expect(matchEndpoint("GET", "/api/v1/downloads/mods/a-b/1.0.0/a-b-1.0.0.zip")).toMatchObject({
      endpoint: { id: "api_key_mod_download" },
      params: { modId: "a-b", version: "1.0.0", fileName: "a-b-1.0.0.zip" },
    });
    expect(matchEndpoint("GET", "/api/v1/downloads/mods/a/1.0.0/..%2F..%2Fsecret")).toBeNull();
    expect(matchEndpoint("GET", "/api/v1/uploads/%2e%2e")).toBeNull();
    expect(matchEndpoint("DELETE", "/api/v1/auth/session")).toMatchObject({
      endpoint: { id: "delete_session" },
    });
    expect(matchEndpoint("PATCH", "/api/v1/auth/session")).toEqual({ methodNotAllowed: ["GET", "DELETE"] });
    expect(matchEndpoint("GET", "/api/v1/nothing")).toBeNull();
  });
});

describe("docs/api.md's route table", () => {
  it("has one row per endpoint of the table, with its method and path, and no other", async () => {
    const { readFileSync } = await import("node:fs");
    const docs = readFileSync(new URL("../../docs/api.md", import.meta.url), "utf8");
    const rows = [...docs.matchAll(/^\| `([a-z_]+)` \| `(GET|POST|PUT|DELETE|PATCH) ([^`]+)` \|/gm)].map(
      (m) => `${m[1]} ${m[2]} ${m[3]}`,
    );
    expect(rows.sort()).toEqual(ENDPOINTS.map((e) => `${e.id} ${e.method} ${e.path}`).sort());
  });
});
