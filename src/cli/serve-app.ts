/**
 * What `svc serve` runs in every process that answers requests: the app context with its
 * submissions runtime (the single process and each `--workers` worker make it the same way).
 */
import { defaultRandomBytes } from "../accounts/secrets.ts";
import type { RuntimeSettings } from "../config/settings.ts";
import { createAppContext } from "../http/app.ts";
import { createSubmissionsRuntime } from "../pipeline/submissions-runtime.ts";
import type { createStore } from "../store/index.ts";
import { RESET_LIMITS_HINT } from "./dev-portal.ts";
import type { CliIo } from "./io.ts";
import type { openProject } from "./project.ts";

/** The environment a portal serves with: --dev adds the developer switches the environment does not set. */
export function serveEnv(dev: boolean | undefined, env: CliIo["env"]): CliIo["env"] {
  return dev ? { SVC_DEV_EMAIL: "return-token", SVC_LIVE_UPLOADS: "1", ...env } : env;
}

/**
 * The portal's app context with its submissions runtime, as the single process and each worker run
 * it. Dev email lines (tokens) go to stdout with the start-up banner, so a person running npm start
 * sees them; every other line goes to stderr.
 */
export async function portalApp(options: {
  dev: boolean | undefined;
  io: CliIo;
  config: Parameters<typeof createAppContext>[0]["config"];
  settings: RuntimeSettings;
  paths: ReturnType<typeof openProject>["paths"];
  store: Awaited<ReturnType<typeof createStore>>;
  signing: Parameters<typeof createSubmissionsRuntime>[0]["signing"];
  serveOnly?: Parameters<typeof createSubmissionsRuntime>[0]["serveOnly"];
}) {
  const { io, config, settings, paths, store } = options;
  const log = (line: string) => io.stderr.write(`${line}\n`);
  const app = await createAppContext({
    config,
    settings,
    siteDir: paths.siteDir,
    recordsDir: paths.recordsDir,
    store,
    log: (line) => (line.startsWith("[dev email]") ? io.stdout.write(`${line}\n`) : log(line)),
    ...(options.dev ? { rateLimitResetHint: RESET_LIMITS_HINT } : {}),
  });
  const pipeline = createSubmissionsRuntime({
    config,
    settings,
    store,
    root: paths.root,
    recordsDir: paths.recordsDir,
    siteDir: paths.siteDir,
    now: app.now,
    random: defaultRandomBytes,
    log,
    signing: options.signing,
    ...(options.serveOnly ? { serveOnly: options.serveOnly } : {}),
  });
  app.submissions = pipeline.backend;
  return { app, pipeline };
}
