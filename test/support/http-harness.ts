import { createHash, randomBytes } from "node:crypto";
import type { Server } from "node:http";
import { loadSiteInputs, renderSite, writeSite } from "../../src/catalog/site.ts";
import type { PortalConfig } from "../../src/config/portal-config.ts";
import { parseSettings } from "../../src/config/settings.ts";
import { createAppContext } from "../../src/http/app.ts";
import type { AppContext } from "../../src/http/context.ts";
import { createPortalServer, listen } from "../../src/http/server.ts";
import { createPgliteStore, createPostgresStore, migrate, type Store } from "../../src/store/index.ts";
import { releaseRecord, tempProject } from "./temp-project.ts";

export type Adapter = "pglite" | "postgres";

/**
 * PGlite always; PostgreSQL when DATABASE_URL is set. In CI (CI=true) PostgreSQL is mandatory: a
 * missing DATABASE_URL fails there instead of silently skipping.
 */
export const ADAPTERS: Adapter[] =
  process.env.DATABASE_URL || process.env.CI === "true" ? ["pglite", "postgres"] : ["pglite"];

/** A migrated store; on PostgreSQL each call gets its own schema so parallel suites never meet. */
export async function openTestStore(adapter: Adapter): Promise<Store> {
  let store: Store;
  if (adapter === "postgres") {
    const url = process.env.DATABASE_URL;
    if (!url)
      throw new Error("DATABASE_URL is required for the PostgreSQL tests in CI (source .ci/postgres.sh)");
    store = await createPostgresStore(url, { schema: `t_${randomBytes(6).toString("hex")}`, max: 20 });
  } else {
    store = await createPgliteStore(null);
  }
  await migrate(store);
  return store;
}

const HIGH = { limit: 10_000, windowSeconds: 60 };

export interface HarnessOptions {
  adapter?: Adapter;
  env?: Record<string, string>;
  editConfig?: (config: PortalConfig) => void;
  now?: () => Date;
  fetch?: typeof fetch;
  store?: Store;
  assumeHttps?: boolean;
}

export interface Harness {
  origin: string;
  app: AppContext;
  store: Store;
  artifact: Buffer;
  artifactPath: string;
  logs: string[];
  root: string;
  close(): Promise<void>;
}

export const ARTIFACT_SIZE = 3 * 1024 * 1024 + 17;

/** The portal on 127.0.0.1:0 with a published mod (portal-hosted) and one on GitHub Releases. */
export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const artifact = randomBytes(ARTIFACT_SIZE);
  const sha256 = createHash("sha256").update(artifact).digest("hex");
  const project = tempProject((config) => {
    for (const bucket of Object.keys(config.limits.rateLimits) as Array<
      keyof typeof config.limits.rateLimits
    >) {
      config.limits.rateLimits[bucket] = { ...HIGH };
    }
    options.editConfig?.(config);
  });
  project.addRecord(releaseRecord({ packageSizeBytes: artifact.length, sha256 }));
  project.addRecord(
    releaseRecord({
      modId: "far-mod",
      version: "2.0.0",
      fileName: "far-mod-2.0.0.zip",
      packageUrl: "https://github.com/ada/far-mod/releases/download/v2.0.0/far-mod-2.0.0.zip",
      sha256: "b".repeat(64),
      packageSizeBytes: 4321,
    }),
  );
  project.addRecord(releaseRecord({ version: "0.9.0", status: "hidden", statusBeforeHidden: "published" }));
  writeSite(
    project.site(""),
    renderSite(loadSiteInputs(project.config, `${project.root}/records`), project.site("")),
  );
  const artifactPath = "site/downloads/mods/better-hud/1.0.0/better-hud-1.0.0.zip";
  project.write(artifactPath, artifact as unknown as string);
  project.write("site/downloads/mods/better-hud/0.9.0/better-hud-0.9.0.zip", "hidden bytes");
  const store = options.store ?? (await openTestStore(options.adapter ?? "pglite"));
  const logs: string[] = [];
  const app = await createAppContext({
    config: project.config,
    settings: parseSettings(
      {
        SVC_DEV_EMAIL: "return-token",
        SVC_BOOTSTRAP_ADMIN_EMAILS: "Admin@Example.com, second@example.com",
        ...options.env,
      },
      { dataDir: `${project.root}/.data` },
    ),
    siteDir: project.site(""),
    log: (line) => logs.push(line),
    store,
    ...(options.now ? { now: options.now } : {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
    ...(options.assumeHttps ? { assumeHttps: true } : {}),
  });
  const server: Server = createPortalServer(app);
  const { port } = await listen(server, 0, "127.0.0.1");
  return {
    origin: `http://127.0.0.1:${port}`,
    app,
    store,
    artifact,
    artifactPath,
    logs,
    root: project.root,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      if (!options.store) await store.close();
      project.cleanup();
    },
  };
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  json: any;
  text: string;
}

export interface CallOptions {
  body?: unknown;
  rawBody?: string | Buffer;
  cookie?: string;
  csrf?: string;
  headers?: Record<string, string>;
}

export function client(origin: string) {
  return async function call(method: string, path: string, options: CallOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = { ...options.headers };
    let body: string | Uint8Array | undefined;
    if (options.body !== undefined) {
      body = JSON.stringify(options.body);
      headers["content-type"] ??= "application/json";
    } else if (options.rawBody !== undefined) {
      body = typeof options.rawBody === "string" ? options.rawBody : new Uint8Array(options.rawBody);
    }
    if (options.cookie) headers.cookie = options.cookie;
    if (options.csrf) headers["x-svc-csrf"] = options.csrf;
    const response = await fetch(`${origin}${path}`, { method, headers, body, redirect: "manual" });
    const text = await response.text();
    let json: unknown = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      json = null;
    }
    return { status: response.status, headers: response.headers, json, text };
  };
}

export type Call = ReturnType<typeof client>;

export interface SignedIn {
  accountId: string;
  email: string;
  cookie: string;
  csrf: string;
}

export function sessionCookieOf(response: ApiResponse): string {
  const setCookie = response.headers.get("set-cookie") ?? "";
  const m = /svc_session=([^;]*)/.exec(setCookie);
  if (!m) throw new Error(`no svc_session cookie in ${setCookie}`);
  return `svc_session=${m[1]}`;
}

/** Sign-up, verification and magic-link sign-in through the HTTP API (return-token mode). */
export async function signUpAndSignIn(
  call: Call,
  email: string,
  displayName = "Tester",
  role: "player" | "modder" = "player",
): Promise<SignedIn> {
  const created = await call("POST", "/api/v1/accounts", { body: { email, displayName, role } });
  if (created.status !== 202) throw new Error(`create_account: ${created.status} ${created.text}`);
  const accountId = created.json.accountId as string;
  if (created.json.status === "verification_sent") {
    const verified = await call("POST", `/api/v1/accounts/${accountId}/verify-email`, {
      body: { token: created.json.devToken },
    });
    if (verified.status !== 200) throw new Error(`verify_account: ${verified.status} ${verified.text}`);
  }
  return signIn(call, email, accountId);
}

export async function signIn(call: Call, email: string, accountId: string): Promise<SignedIn> {
  const link = await call("POST", "/api/v1/auth/magic-link/request", { body: { email } });
  const confirmed = await call("POST", "/api/v1/auth/magic-link/confirm", {
    body: { token: link.json.devToken },
  });
  if (confirmed.status !== 200) throw new Error(`confirm_magic_link: ${confirmed.status} ${confirmed.text}`);
  return { accountId, email, cookie: sessionCookieOf(confirmed), csrf: confirmed.json.session.csrfToken };
}
