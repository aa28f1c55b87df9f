import { defaultRandomBytes } from "../accounts/secrets.ts";
import { createSubmissionsRuntime } from "../submissions/runtime.ts";
import { join, relative } from "node:path";
import { recoverTransactions } from "../catalog/atomic-files.ts";
import { loadSiteInputs, renderSite, writeSite } from "../catalog/site.ts";
import { parseSettings, type RuntimeSettings } from "../config/settings.ts";
import { ENDPOINTS } from "../contracts/endpoints.ts";
import { createAppContext } from "../http/app.ts";
import { createPortalServer, listen } from "../http/server.ts";
import { type CliIo, EXIT_OK, EXIT_USAGE } from "./io.ts";
import { openProject, PROJECT_OPTIONS, parseFlags } from "./project.ts";

const HELP = `usage: svc serve [--port 8787] [--host 127.0.0.1] [--dev] [--root DIR] [--site DIR]

Runs the local portal: the static site with every contract route (also without .json), and the
backend routes on one process. --dev turns on the developer switches npm start uses
(SVC_DEV_EMAIL=return-token, SVC_LIVE_UPLOADS=1) unless the environment already sets them.
`;

export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseFlags(args, {
    ...PROJECT_OPTIONS,
    port: { type: "string" },
    host: { type: "string" },
    dev: { type: "boolean" },
  });
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  const port = Number(values.port ?? io.env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    io.stderr.write(`svc serve: --port must be 0-65535\n`);
    return EXIT_USAGE;
  }
  const host = values.host ?? "127.0.0.1";
  const env = values.dev ? { SVC_DEV_EMAIL: "return-token", SVC_LIVE_UPLOADS: "1", ...io.env } : io.env;
  const { paths, config } = openProject(values, io);
  const settings = parseSettings(env, { dataDir: join(paths.root, ".data") });
  // A publication that crashed is rolled back before anything is served (publisher transactions are
  // rooted at the project, builds at the site).
  recoverTransactions(paths.root);
  recoverTransactions(paths.siteDir);
  // The portal always serves what svc build would write, so a fresh clone needs no separate build step.
  const build = writeSite(paths.siteDir, renderSite(loadSiteInputs(config, paths.recordsDir), paths.siteDir));
  const log = (line: string) => io.stderr.write(`${line}\n`);
  // Dev email lines (tokens) go to stdout with the start-up banner, so a person running npm start sees them.
  const app = await createAppContext({
    config,
    settings,
    siteDir: paths.siteDir,
    log: (line) => (line.startsWith("[dev email]") ? io.stdout.write(`${line}\n`) : log(line)),
  });
  // The upload pipeline: private staging under the data dir, the publisher, the mod-validation worker.
  const pipeline = createSubmissionsRuntime({
    config,
    settings,
    store: app.store!,
    root: paths.root,
    recordsDir: paths.recordsDir,
    siteDir: paths.siteDir,
    now: app.now,
    random: defaultRandomBytes,
    log,
  });
  app.submissions = pipeline.runtime;
  const server = createPortalServer(app);
  const bound = await listen(server, port, host);
  const origin = `http://${host.includes(":") ? `[${host}]` : host}:${bound.port}`;
  const implemented = ENDPOINTS.filter((e) => e.status === "implemented").map((e) => e.id);
  io.stdout.write(
    [
      `svc portal on ${origin}`,
      `  site        ${relative(io.cwd, paths.siteDir) || "."} (${build.written.length} files regenerated)`,
      `  catalog     ${origin}/api/v1/catalog  (also /api/v1/mods, /api/v1/publishing/workflow, ...)`,
      `  health      ${origin}/api/v1/backend/health`,
      `  backend     ${implemented.length}/${ENDPOINTS.length} routes implemented: ${implemented.join(", ")}`,
      `  database    ${app.store?.description ?? "none"}`,
      `  antivirus   ${pipeline.scannerDescription}`,
      `  github      ${pipeline.githubDescription}`,
      `  staging     ${join(settings.dataDir, "uploads", "staging")} (private)`,
      `  dev email   ${describeEmail(settings)}`,
      `  uploads     ${settings.liveUploads ? "ON (SVC_LIVE_UPLOADS=1)" : "off (uploads_disabled)"}`,
      `  base URL    ${config.baseUrl}${config.baseUrl !== origin ? `  (portal.config.json; documents link there, not to ${origin})` : ""}`,
      "",
    ].join("\n"),
  );
  await new Promise<void>((resolve) => {
    const stop = () => server.close(() => resolve());
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await pipeline.worker.stop();
  await app.store?.close();
  return EXIT_OK;
}

function describeEmail(settings: RuntimeSettings): string {
  if (settings.emailWebhookUrl)
    return `webhook ${new URL(settings.emailWebhookUrl).origin} (signed, x-svc-signature)`;
  if (settings.devEmail === "return-token")
    return "DEV MODE return-token: verification and magic-link tokens are returned in responses and printed here";
  if (settings.devEmail === "auto-verify")
    return "DEV MODE auto-verify: accounts are verified at creation; magic-link tokens are printed here";
  return "none: account creation and magic links fail closed (email_delivery_unavailable)";
}
