import { createHash } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { parseSettings } from "../../src/config/settings.ts";
import type { PublisherOptions } from "../../src/catalog/publisher.ts";
import type { SiteSigning } from "../../src/distribution/tuf-repository.ts";
import { createSubmissionsRuntime } from "../../src/pipeline/submissions-runtime.ts";
import {
  type Call,
  client,
  type Harness,
  type SignedIn,
  signUpAndSignIn,
  startHarness,
} from "./http-harness.ts";
import { clamscanPath, makeSignatureDatabase, shouldSkip } from "../validation/clamav.ts";

/**
 * The real portal with the upload pipeline on loopback: the HTTP harness, the submissions runtime
 * with real clamscan over a signature database made at test time, and an admin, a modder and a
 * moderator signed in through the real accounts API. Shared by the HTTP and the browser suites.
 */

/** Locally the suites skip without clamscan; in CI (CI=true) shouldSkip throws instead. */
export const SKIP_CLAMSCAN = shouldSkip(clamscanPath, "clamscan");
const database = SKIP_CLAMSCAN ? "" : makeSignatureDatabase(mkdtempSync(join(tmpdir(), "svc-clamdb-")));

export interface SubmissionsPortal {
  h: Harness;
  call: Call;
  stop: () => Promise<void>;
  admin: SignedIn;
  modder: SignedIn;
  moderator: SignedIn;
  publisher: PublisherOptions;
}

export async function startSubmissionsPortal(
  env: Record<string, string> = { SVC_LIVE_UPLOADS: "1" },
  options: { signing?: SiteSigning } = {},
): Promise<SubmissionsPortal> {
  const scannerEnv = { SVC_CLAMSCAN: clamscanPath ?? "", SVC_CLAMAV_DATABASE: database };
  const h = await startHarness({ env: { ...scannerEnv, ...env } });
  const settings = parseSettings({ ...scannerEnv, ...env }, { dataDir: join(h.root, ".data") });
  const pipeline = createSubmissionsRuntime({
    config: h.app.config,
    settings,
    store: h.store,
    root: h.root,
    recordsDir: join(h.root, "records"),
    siteDir: join(h.root, "site"),
    now: h.app.now,
    random: (n) => Buffer.from(createHash("sha256").update(String(Math.random())).digest().subarray(0, n)),
    log: () => {},
    ...(options.signing ? { signing: options.signing } : {}),
  });
  h.app.submissions = pipeline.backend;
  const call = client(h.origin);
  const admin = await signUpAndSignIn(call, "admin@example.com", "Admin");
  const modder = await signUpAndSignIn(call, "modder@example.com", "Modder", "modder");
  const moderator = await signUpAndSignIn(call, "moderator@example.com", "Mo");
  const granted = await call("PUT", `/api/v1/accounts/${moderator.accountId}/roles`, {
    body: { roles: ["player", "moderator"] },
    cookie: admin.cookie,
    csrf: admin.csrf,
  });
  expect(granted.status).toBe(200);
  return {
    h,
    call,
    admin,
    modder,
    moderator,
    publisher: pipeline.publisher,
    stop: async () => {
      await pipeline.worker.stop();
      await h.close();
    },
  };
}

/** The create_upload body: metadata first, then the package (the order the route requires). */
export function form(
  sidecar: unknown,
  bytes: Buffer,
  options: { packageFirst?: boolean; packageType?: string } = {},
): FormData {
  const data = new FormData();
  const metadata = () =>
    data.append(
      "metadata",
      new Blob([JSON.stringify(sidecar)], { type: "application/json" }),
      "release.json",
    );
  const pkg = () =>
    data.append(
      "package",
      new Blob([new Uint8Array(bytes)], { type: options.packageType ?? "application/zip" }),
      "upload.zip",
    );
  if (options.packageFirst) {
    pkg();
    metadata();
  } else {
    metadata();
    pkg();
  }
  return data;
}

export async function upload(
  p: SubmissionsPortal,
  who: SignedIn,
  body: FormData,
  headers: Record<string, string> = {},
) {
  const response = await fetch(`${p.h.origin}/api/v1/uploads`, {
    method: "POST",
    body,
    headers: { cookie: who.cookie, "x-svc-csrf": who.csrf, ...headers },
  });
  return { status: response.status, json: (await response.json()) as any };
}

/** Polls upload_status until the worker has moved the submission into one of states. */
export async function waitForState(
  p: SubmissionsPortal,
  who: SignedIn,
  id: string,
  states: string[],
): Promise<any> {
  for (let i = 0; i < 200; i++) {
    const status = await p.call("GET", `/api/v1/uploads/${id}`, { cookie: who.cookie });
    if (states.includes(status.json.state)) return status.json;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`submission ${id} never reached ${states.join("/")}`);
}
