import { relative, join } from "node:path";
import { availableParallelism } from "node:os";
import type { Worker } from "node:cluster";
import { assertCanSign, signAfterCommit } from "../distribution/tuf-repository.ts";
import { withPublishLock } from "../catalog/atomic-files.ts";
import {
  clearOwedSigning,
  owingSignature,
  type SigningSettlement,
  settleOwedSigning,
} from "../catalog/owed-signing.ts";
import { loadSiteInputs, renderSite, writeSite } from "../catalog/site.ts";
import { parseSettings, type RuntimeSettings } from "../config/settings.ts";
import { ENDPOINTS } from "../contracts/endpoints.ts";
import { SvcError } from "../errors.ts";
import { createPortalServer, listen } from "../http/server.ts";
import { createStore } from "../store/index.ts";
import type { StartupRecovery } from "../submissions/recovery.ts";
import { type CliIo, EXIT_OK, EXIT_USAGE } from "./io.ts";
import {
  describeBaseUrl,
  devPortalConfig,
  lockPortalCheckout,
  resetLimits,
  resolvePort,
  restoreConfiguredSite,
} from "./dev-portal.ts";
import { startDevExample } from "./example.ts";
import { portalSigning } from "./online-keys.ts";
import { openProject, PROJECT_OPTIONS, parseFlags, recoveredLine } from "./project.ts";
import { portalApp, serveEnv } from "./serve-app.ts";
import { forkWorkers, isServeWorker, serveWorker, stopWorkers } from "./serve-workers.ts";

const HELP = `usage: svc serve [--port 8787] [--host 127.0.0.1] [--dev] [--no-example] [--reset-limits]
                 [--root DIR] [--site DIR] [--workers N|auto]

Runs the local portal: the static site with every contract route (also without .json), and the
backend routes on one process. --dev turns on the developer switches npm start uses
(SVC_DEV_EMAIL=return-token, SVC_LIVE_UPLOADS=1) unless the environment already sets them; with a
loopback baseUrl the documents then link to the port it listens on, and an empty portal publishes
the example mod (pulls-template/example-mod) through the importer.

  --no-example     do not publish the example mod (also SVC_EXAMPLE=0)
  --reset-limits   clear every rate-limit window before serving
  --workers N      serve from N processes (auto: one per core) sharing the port; needs DATABASE_URL
                   (PostgreSQL). The first process holds the locks, recovers, builds the site and runs
                   the background jobs (validation worker) once; the N workers only serve.
`;

export async function run(args: string[], io: CliIo): Promise<number> {
  const { values } = parseFlags(args, {
    ...PROJECT_OPTIONS,
    port: { type: "string" },
    host: { type: "string" },
    dev: { type: "boolean" },
    "no-example": { type: "boolean" },
    "reset-limits": { type: "boolean" },
    workers: { type: "string" },
  });
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  const workers =
    values.workers === undefined
      ? 1
      : values.workers === "auto"
        ? availableParallelism()
        : Number(values.workers);
  if (!Number.isInteger(workers) || workers < 1 || workers > 256) {
    io.stderr.write(`svc serve: --workers must be 1-256 or auto\n`);
    return EXIT_USAGE;
  }
  if (isServeWorker(io)) return serveWorker(values, io);
  const port = Number(values.port ?? io.env.PORT ?? 8787);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    io.stderr.write(`svc serve: --port must be 0-65535\n`);
    return EXIT_USAGE;
  }
  const host = values.host ?? "127.0.0.1";
  const env = serveEnv(values.dev, io.env);
  const { paths, config: configured } = openProject(values, io);
  const listenPort = values.dev ? await resolvePort(host, port) : port;
  const config = values.dev ? devPortalConfig(configured, host, listenPort) : configured;
  const settings = parseSettings(env, { dataDir: join(paths.root, ".data") });
  if (workers > 1 && !settings.databaseUrl)
    throw new SvcError(
      "workers_need_database",
      `svc serve --workers ${workers} needs PostgreSQL: set DATABASE_URL (PGlite, the default database, is opened by one process only), or serve with one process`,
      { details: { workers } },
    );
  // The store first: on PGlite it locks the data folder, so a second portal on the same folder is
  // refused (data_dir_locked) before it touches anything.
  const store = await createStore(settings);
  // With DATABASE_URL there is no data folder to lock: the checkout's own lock keeps site/ to one portal.
  let unlockCheckout: () => void;
  try {
    unlockCheckout = lockPortalCheckout(paths);
  } catch (error) {
    await store.close();
    throw error;
  }
  // Under the publish lock (a running import or publication finishes first), a publication a crash
  // interrupted is recovered before anything is served, and the site regenerated: the portal always
  // serves what svc build would write, so a fresh clone needs no separate build step.
  let recovered = "";
  // Looked up at each publication (keys made while it runs count); a signed site without them refuses.
  const signing = portalSigning({ env, cwd: io.cwd }, settings.dataDir);
  let owed = "none" as SigningSettlement;
  const build = await withPublishLock(
    paths,
    () => {
      assertCanSign(paths.siteDir, signing);
      // A signing a crash interrupted is finished here, before anything is served.
      owed = settleOwedSigning(paths, signing);
      const written = writeSite(
        paths.siteDir,
        renderSite(loadSiteInputs(config, paths.recordsDir), paths.siteDir),
        owingSignature(paths, signing),
      );
      signAfterCommit(paths.siteDir, signing, written);
      if (signing) clearOwedSigning(paths);
      return written;
    },
    { onRecovered: (r) => (recovered = recoveredLine("serve", r)) },
  ).catch(async (error) => {
    await store.close();
    unlockCheckout();
    throw error;
  });
  if (recovered) io.stderr.write(recovered);
  if (owed === "signed") io.stderr.write("svc serve: signed what an interrupted publication left unsigned\n");
  if (owed === "owed")
    io.stderr.write(
      "svc serve: the signed metadata is behind the catalog (an interrupted signing); publications are refused until SVC_TUF_ONLINE_KEYS is set\n",
    );
  // The upload pipeline: private staging under the data dir, the publisher, the mod-validation worker.
  const { app, pipeline } = await portalApp({ dev: values.dev, io, config, settings, paths, store, signing });
  const limitsLine = values["reset-limits"] ? await resetLimits(app.store) : null;
  // Orphaned uploads removed, interrupted validations resumed, stranded publications completed.
  const startup = await pipeline.ready;
  const server = createPortalServer(app);
  let bound: { port: number; host: string };
  let pool: Worker[] = [];
  try {
    if (workers > 1) {
      ({ bound, pool } = await forkWorkers(workers, listenPort, host, () => pipeline.worker.kick()));
    } else bound = await listen(server, listenPort, host);
  } catch (error) {
    // Nothing may keep running once the portal cannot serve: the worker, the store (and with it the
    // data folder's lock) and a dev portal's rebuilt site are put back before the error is reported.
    await pipeline.worker.stop();
    await app.accounts?.flushPendingWrites();
    await app.store?.close();
    if (config !== configured)
      await restoreConfiguredSite(paths, configured, signing, (line) =>
        io.stderr.write(`svc serve: ${line}\n`),
      );
    unlockCheckout();
    if ((error as { code?: string }).code === "EADDRINUSE")
      throw new SvcError(
        "address_in_use",
        `${host}:${listenPort} is in use by another process: stop it, or start on another port (PORT=8799 npm start, or svc serve --port 8799)`,
        { details: { host, port: listenPort } },
      );
    throw error;
  }
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
      ...(pool.length > 0
        ? [
            `  workers     ${pool.length} serving processes (pids ${pool.map((w) => w.process.pid).join(", ")}); locks, recovery, site and background jobs in pid ${process.pid}`,
          ]
        : []),
      `  antivirus   ${pipeline.scannerDescription}`,
      `  github      ${pipeline.githubDescription}`,
      `  staging     ${join(settings.dataDir, "uploads", "staging")} (private)`,
      ...describeStartup(startup),
      `  dev email   ${describeEmail(settings)}`,
      `  uploads     ${settings.liveUploads ? "ON (SVC_LIVE_UPLOADS=1)" : "off (uploads_disabled)"}`,
      describeBaseUrl(config, configured, origin),
      ...(limitsLine
        ? [limitsLine]
        : values.dev
          ? ["  limits      rate-limit windows survive restarts; `npm start -- --reset-limits` clears them"]
          : []),
      "",
    ].join("\n"),
  );
  const example = startDevExample({
    dev: values.dev === true,
    noExample: values["no-example"] === true,
    env: io.env,
    root: paths.root,
    recordsDir: paths.recordsDir,
    siteDir: paths.siteDir,
    config,
    settings,
    signing,
    write: (lines) => io.stdout.write(`${lines.join("\n")}\n`),
  });
  await new Promise<void>((resolve) => {
    const stop = () =>
      pool.length > 0 ? void stopWorkers(pool).then(resolve) : server.close(() => resolve());
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
  await example;
  if (config !== configured)
    await restoreConfiguredSite(paths, configured, signing, (line) =>
      io.stderr.write(`svc serve: ${line}\n`),
    );
  await pipeline.worker.stop();
  await app.accounts?.flushPendingWrites();
  await app.store?.close();
  unlockCheckout();
  return EXIT_OK;
}

/** The start-up line for what a crash of the previous process left and this one put right. */
function describeStartup(startup: StartupRecovery): string[] {
  const done = [
    startup.resumedValidations && `${startup.resumedValidations} interrupted validation(s) resumed`,
    startup.completedPublications.length &&
      `${startup.completedPublications.length} interrupted publication(s) completed (${startup.completedPublications.join(", ")})`,
    startup.reconciledVisibility.length &&
      `${startup.reconciledVisibility.length} interrupted hide/unhide recorded from the catalog (${startup.reconciledVisibility.join(", ")})`,
    startup.partialFiles && `${startup.partialFiles} partial upload(s) removed`,
    startup.orphanedPackages && `${startup.orphanedPackages} orphaned staged package(s) removed`,
  ].filter(Boolean);
  return done.length > 0 ? [`  recovered   ${done.join("; ")}`] : [];
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
