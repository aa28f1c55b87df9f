import { createHash } from "node:crypto";
import { mkdirSync } from "node:fs";
import { isAbsolute, join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { isDistributionError } from "../distribution/errors.ts";
import { type VerifyReport, verifyInstall } from "../distribution/install-manifest.ts";
import { CACHE_DIR } from "../distribution/install-layout.ts";
import { ManagerClient, parseModRequest } from "../distribution/manager-client.ts";
import { packageOutputPath } from "../distribution/package-files.ts";
import { writeFileAtomic } from "../lib/atomic-write.ts";
import { type CliIo, type CommandRun, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./io.ts";

/** An installed or requested version the portal withdrew: its own exit code, so a script can tell it from damage. */
export const EXIT_WITHDRAWN = 3;

const COMMON = `  --mirror URL          the portal's site root (metadata is read from URL/tuf/)
  --trusted-root FILE   the root.json you pinned (needed once; later roots are followed and kept)
  --api-key KEY         download through the API-key lane (or SVC_API_KEY)`;
const FOLDER_CACHE = `  --cache DIR           trusted metadata and downloads (default: <folder>/${CACHE_DIR})`;
const USER_CACHE = `  --cache DIR           trusted metadata and downloads (default: $XDG_CACHE_HOME/svc/<mirror>, else ~/.cache/svc/<mirror>)`;
const EXITS = `exit 0 ok, 1 damaged or refused, 2 usage, ${EXIT_WITHDRAWN} an installed version was withdrawn by the portal`;

const HELP = {
  install: `usage: svc install <modId[@range]>... (--game GAME_DIR | --dir MODS_DIR) --mirror URL [--trusted-root FILE] [--game-build ID]

Refreshes the signed metadata (TUF), resolves dependencies by their ranges, downloads with resume,
verifies length and sha256, checks every file against the signed per-file hashes (versions.json),
then places the files and records each one's size and sha256 in svc-install.json. Only the signed
versions.json of the mods asked for and their dependencies is read, never the whole catalog: a run
when nothing was published is two small requests.
With --game, each package is laid over GAME_DIR as the package guide says (Binaries/Win64/Mods/X.dll
lands at GAME_DIR/Binaries/Win64/Mods/X.dll); files at the package root (svc-mod.json, a README) go to
the signed runtime layout's modsPath/<modId>/. A file another mod, the game or the runtime loader owns
is never replaced (install_conflict). With --dir, each package goes to MODS_DIR/<modId>/.
An update keeps the player's settings (modConfig.file) wherever the new version still allows them.
A version the portal withdrew is refused (version_withdrawn, exit ${EXIT_WITHDRAWN}) and the newest visible offered.
A refusal leaves the folder as it was.
${COMMON}
${FOLDER_CACHE}
`,
  verify: `usage: svc verify (--game GAME_DIR | --dir DIR) [--mirror URL [--trusted-root FILE]] [--json]

Checks every installed file's size and sha256: install_damaged for each missing or changed file. The
mod's settings file (modConfig.file) is the player's: a change to it is listed as "changed by you" and
is not damage. With --mirror, against the per-file hashes the portal signed (versions.json), and each
installed version the portal has withdrawn is named (version_withdrawn) with the newest visible one;
without, against svc-install.json (recorded at install, after the package matched the signed hashes).
${EXITS}.
${COMMON}
${FOLDER_CACHE}
`,
  repair: `usage: svc repair (--game GAME_DIR | --dir DIR) --mirror URL [--trusted-root FILE] [--reset-config]

Re-downloads (verified) the package of each damaged mod and rewrites only the bad files. A settings
file the player changed is kept; --reset-config rewrites it with the installed version's defaults.
A withdrawn version is not fetched again: it is named, and the exit code is ${EXIT_WITHDRAWN}.
${COMMON}
${FOLDER_CACHE}
`,
  fetch: `usage: svc fetch <modId[@range]> --out DIR --mirror URL [--trusted-root FILE] [--game-build ID]

Downloads one verified package ZIP into DIR. Nothing else is written to DIR or to the current folder:
the trusted metadata and the download cache are the player's, one folder per mirror.
${COMMON}
${USER_CACHE}
`,
} as const;

type Command = keyof typeof HELP;

function parse(args: string[]) {
  return parseArgs({
    args,
    allowPositionals: true,
    strict: true,
    options: {
      dir: { type: "string" },
      game: { type: "string" },
      out: { type: "string" },
      mirror: { type: "string" },
      "trusted-root": { type: "string" },
      cache: { type: "string" },
      "api-key": { type: "string" },
      "game-build": { type: "string" },
      "reset-config": { type: "boolean" },
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}

type Values = ReturnType<typeof parse>["values"];

/**
 * `svc fetch`'s cache: $XDG_CACHE_HOME/svc (else ~/.cache/svc), one folder per mirror, since trusted
 * metadata of one portal means nothing to another. Null when the environment names no home.
 */
export function userCacheDir(env: NodeJS.ProcessEnv, mirrorUrl: string): string | null {
  const xdg = env.XDG_CACHE_HOME;
  const home = env.HOME || env.USERPROFILE;
  // The XDG spec says a relative XDG_CACHE_HOME is invalid and to be ignored.
  const base = xdg && isAbsolute(xdg) ? xdg : home ? join(home, ".cache") : null;
  if (!base) return null;
  const url = mirrorUrl.replace(/\/+$/, "");
  let host = "mirror";
  try {
    host = new URL(url).host.replace(/[^A-Za-z0-9.-]/g, "_");
  } catch {}
  return join(base, "svc", `${host}-${createHash("sha256").update(url).digest("hex").slice(0, 12)}`);
}

function client(values: Values, io: CliIo, cacheDir: string): ManagerClient {
  const apiKey = values["api-key"] ?? io.env.SVC_API_KEY;
  return new ManagerClient({
    mirrorUrl: values.mirror!,
    cacheDir,
    ...(values["trusted-root"] ? { trustedRootFile: resolve(io.cwd, values["trusted-root"]) } : {}),
    ...(apiKey ? { apiKey } : {}),
  });
}

function writeReport(io: CliIo, report: VerifyReport): void {
  for (const d of report.damaged) {
    for (const f of d.files) io.stdout.write(`  install_damaged ${d.modId}/${f.path} (${f.problem})\n`);
  }
  for (const c of report.changedByYou) {
    io.stdout.write(
      `  changed by you: ${c.modId}/${c.path} (the mod's settings: kept by svc repair unless --reset-config)\n`,
    );
  }
  for (const w of report.withdrawn) {
    const offer = w.newestVisible
      ? `the newest visible is ${w.newestVisible} (svc install ${w.modId}@${w.newestVisible})`
      : `no version of ${w.modId} is offered any more`;
    io.stdout.write(
      `  version_withdrawn ${w.modId}@${w.version}: the portal withdrew this version; ${offer}\n`,
    );
  }
}

const exitFor = (report: VerifyReport) =>
  report.withdrawn.length > 0 ? EXIT_WITHDRAWN : report.damaged.length > 0 ? EXIT_FAILED : EXIT_OK;

async function verify(values: Values, io: CliIo, folder: string): Promise<number> {
  const report = values.mirror
    ? await client(values, io, resolve(io.cwd, values.cache ?? join(folder, CACHE_DIR))).verify(folder)
    : verifyInstall(folder);
  if (values.json) {
    io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return exitFor(report);
  }
  io.stdout.write(
    `svc verify: ${report.checked} file(s) checked, ${report.damaged.length} mod(s) damaged${
      values.mirror ? `, ${report.withdrawn.length} withdrawn` : ""
    }\n`,
  );
  writeReport(io, report);
  return exitFor(report);
}

async function repair(manager: ManagerClient, values: Values, io: CliIo, folder: string): Promise<number> {
  const report = await manager.repair(folder, { resetConfig: values["reset-config"] === true });
  io.stdout.write(`svc repair: ${report.rewritten.length} file(s) rewritten from verified packages\n`);
  writeReport(io, { ...report, damaged: [] });
  return report.withdrawn.length > 0 ? EXIT_WITHDRAWN : EXIT_OK;
}

async function fetchOne(
  manager: ManagerClient,
  values: Values,
  io: CliIo,
  out: string,
  positionals: string[],
) {
  const [release] = await manager.resolve(positionals.slice(0, 1).map(parseModRequest), values["game-build"]);
  const bytes = await manager.downloadPackage(release!);
  const file = packageOutputPath(out, release!.version.fileName);
  mkdirSync(out, { recursive: true });
  // Renamed into place: a link already at that name is replaced, not written through.
  writeFileAtomic(file, bytes);
  io.stdout.write(
    `svc fetch: ${file} (${bytes.length} bytes, sha256 ${release!.version.sha256}, verified)\n`,
  );
  return EXIT_OK;
}

async function install(
  manager: ManagerClient,
  values: Values,
  io: CliIo,
  folder: string,
  positionals: string[],
) {
  const installed = await manager.install(folder, positionals.map(parseModRequest), {
    layout: values.game ? "game" : "mod-folder",
    ...(values["game-build"] ? { gameBuild: values["game-build"] } : {}),
  });
  for (const m of installed) {
    const notes = [
      `${m.files} files, verified`,
      ...(m.keptSettings.length > 0 ? [`kept ${m.keptSettings.length} of your settings`] : []),
      ...(m.replacesWithdrawn ? [`replaces withdrawn ${m.replacesWithdrawn}`] : []),
    ];
    io.stdout.write(`svc install: ${m.modId}@${m.version} (${notes.join("; ")})\n`);
  }
  return EXIT_OK;
}

function command(name: Command): CommandRun {
  return async (args, io) => {
    const { values, positionals } = parse(args);
    if (values.help) {
      io.stdout.write(HELP[name]);
      return EXIT_OK;
    }
    const given = name === "fetch" ? values.out : (values.dir ?? values.game);
    const needsMods = name === "install" || name === "fetch";
    if (
      !given ||
      (name !== "fetch" && values.dir && values.game) ||
      (name !== "verify" && !values.mirror) ||
      (needsMods && positionals.length === 0)
    ) {
      io.stderr.write(HELP[name]);
      return EXIT_USAGE;
    }
    const folder = resolve(io.cwd, given);
    try {
      if (name === "verify") return await verify(values, io, folder);
      const cache = values.cache
        ? resolve(io.cwd, values.cache)
        : name === "fetch"
          ? userCacheDir(io.env, values.mirror!)
          : join(folder, CACHE_DIR);
      if (!cache) {
        io.stderr.write(
          "svc fetch: no per-user cache folder: set XDG_CACHE_HOME or HOME, or pass --cache DIR\n",
        );
        return EXIT_USAGE;
      }
      const manager = client(values, io, cache);
      if (name === "repair") return await repair(manager, values, io, folder);
      if (name === "fetch") return await fetchOne(manager, values, io, folder, positionals);
      return await install(manager, values, io, folder, positionals);
    } catch (error) {
      if (!isDistributionError(error)) throw error;
      io.stderr.write(`svc ${name}: ${error.code}: ${error.message}\n`);
      return error.code === "version_withdrawn" ? EXIT_WITHDRAWN : EXIT_FAILED;
    }
  };
}

export const runInstall = command("install");
export const runVerify = command("verify");
export const runRepair = command("repair");
export const runFetch = command("fetch");
