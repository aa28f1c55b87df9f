/**
 * The GitHub App's function entries (api/_entries/github/*.ts, what api/github/*.js run bundled;
 * test/http/vercel-build.test.ts runs the bundles): a bad signature is answered 400 before anything
 * else, and a missing variable is answered 500 config_invalid naming it.
 */
import { createServer, type RequestListener } from "node:http";
import type { AddressInfo } from "node:net";
import { sign } from "@octokit/webhooks-methods";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { WEBHOOK_SECRET } from "../support/bot-harness.ts";
import { examplePayload, PORTAL } from "../support/webhook-payloads.ts";

async function call(
  handler: RequestListener,
  init: { method?: string; headers?: Record<string, string>; body?: string },
): Promise<{ status: number; body: { code?: string; message?: string } }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    const { port } = server.address() as AddressInfo;
    const response = await fetch(`http://127.0.0.1:${port}/`, { method: init.method ?? "POST", ...init });
    return { status: response.status, body: (await response.json()) as { code?: string; message?: string } };
  } finally {
    server.close();
  }
}

describe("the GitHub App's function entries, with only WEBHOOK_SECRET and SVC_PORTAL_REPOSITORY set", () => {
  let portal: RequestListener;
  let intake: RequestListener;
  let drain: RequestListener;
  beforeAll(async () => {
    vi.stubEnv("WEBHOOK_SECRET", WEBHOOK_SECRET);
    vi.stubEnv("SVC_PORTAL_REPOSITORY", PORTAL);
    for (const name of ["DATABASE_URL", "INTAKE_WEBHOOK_SECRET", "CRON_SECRET", "APP_ID", "PRIVATE_KEY"])
      vi.stubEnv(name, undefined);
    portal = (await import("../../api/_entries/github/webhooks.ts")).default as RequestListener;
    intake = (await import("../../api/_entries/github/intake.ts")).default as RequestListener;
    drain = (await import("../../api/_entries/github/drain.ts")).default as RequestListener;
  });
  afterAll(() => {
    vi.unstubAllEnvs();
  });

  const delivery = async (
    secret: string,
    body = JSON.stringify(examplePayload("pull_request", "opened")),
  ) => ({
    headers: {
      "content-type": "application/json",
      "x-github-event": "pull_request",
      "x-github-delivery": "0a1b2c3d-0000-4000-8000-000000000001",
      "x-hub-signature-256": await sign(secret, body),
    },
    body,
  });

  it("answers 400 to a bad signature before anything else", async () => {
    const response = await call(portal, await delivery("another-secret"));
    expect(response).toEqual({ status: 400, body: expect.objectContaining({ code: "signature_invalid" }) });
  });

  it("answers a verified delivery it cannot record 500 config_invalid naming DATABASE_URL (GitHub can redeliver it)", async () => {
    const response = await call(portal, await delivery(WEBHOOK_SECRET));
    expect(response).toMatchObject({ status: 500, body: { code: "config_invalid" } });
    expect(response.body.message).toContain("DATABASE_URL");
  });

  it("closes the intake route without INTAKE_WEBHOOK_SECRET and the drain without CRON_SECRET", async () => {
    const intakeResponse = await call(intake, await delivery(WEBHOOK_SECRET));
    expect(intakeResponse).toMatchObject({ status: 500, body: { code: "config_invalid" } });
    expect(intakeResponse.body.message).toContain("INTAKE_WEBHOOK_SECRET");
    const drainResponse = await call(drain, { method: "GET", headers: { authorization: "Bearer x" } });
    expect(drainResponse).toMatchObject({ status: 500, body: { code: "config_invalid" } });
    expect(drainResponse.body.message).toContain("CRON_SECRET");
  });
});
