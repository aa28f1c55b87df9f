import { mkdirSync } from "node:fs";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { isDistributionError } from "../distribution/errors.ts";
import { verifyInstall } from "../distribution/install-manifest.ts";
import { ManagerClient, parseModRequest } from "../distribution/manager-client.ts";
import { packageOutputPath } from "../distribution/package-files.ts";
import { writeFileAtomic } from "../lib/atomic-write.ts";
import { type CliIo, type CommandRun, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./io.ts";

const COMMON = `  --mirror URL          the portal's site root (metadata is read from URL/tuf/)
  --trusted-root FILE   the root.json you pinned (needed once; later roots are followed and kept)
  --cache DIR           trusted metadata and downloads (default: <dir>/.svc-cache)
  --api-key KEY         download through the API-key lane (or SVC_API_KEY)`;

const HELP = {
  install: `usage: svc install <modId[@range]>... (--game GAME_DIR | --dir MODS_DIR) --mirror URL [--trusted-root FILE] [--game-build ID]\n\nRefreshes the signed metadata (TUF), resolves dependencies by their ranges, downloads with resume,\nverifies length and sha256, checks every file against the signed per-file hashes (versions.json),\nthen installs each mod into MODS_DIR/<modId>/ and records every file's size and sha256 in\nMODS_DIR/svc-install.json. With --game, MODS_DIR is the signed runtime layout's\nmodsPath under GAME_DIR (e.g. Binaries/Win64/Mods). A refusal leaves the folder as it was.\n${COMMON}\n`,
  verify: `usage: svc verify --dir DIR [--mirror URL [--trusted-root FILE]]\n\nChecks every installed file's size and sha256; exit 1 when any is missing or changed. With --mirror,\nagainst the per-file hashes the portal signed (versions.json); without, against DIR/svc-install.json\n(recorded at install, after the package matched the signed hashes).\n${COMMON}\n`,
  repair: `usage: svc repair --dir DIR --mirror URL [--trusted-root FILE]\n\nRe-downloads (verified) the package of each damaged mod and rewrites only the bad files.\n${COMMON}\n`,
  fetch: `usage: svc fetch <modId[@range]> --out DIR --mirror URL [--trusted-root FILE] [--game-build ID]\n\nDownloads one verified package ZIP into DIR.\n${COMMON}\n`,
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
      json: { type: "boolean" },
      help: { type: "boolean", short: "h" },
    },
  });
}

function client(values: ReturnType<typeof parse>["values"], io: CliIo, base: string): ManagerClient | null {
  if (!values.mirror) return null;
  const apiKey = values["api-key"] ?? io.env.SVC_API_KEY;
  return new ManagerClient({
    mirrorUrl: values.mirror,
    cacheDir: resolve(io.cwd, values.cache ?? join(base, ".svc-cache")),
    ...(values["trusted-root"] ? { trustedRootFile: resolve(io.cwd, values["trusted-root"]) } : {}),
    ...(apiKey ? { apiKey } : {}),
  });
}

function command(name: Command): CommandRun {
  return async (args, io) => {
    const { values, positionals } = parse(args);
    if (values.help) {
      io.stdout.write(HELP[name]);
      return EXIT_OK;
    }
    const folder =
      name === "fetch" ? values.out : name === "install" ? (values.dir ?? values.game) : values.dir;
    const base = resolve(io.cwd, folder ?? "");
    if (!folder || (name !== "verify" && !values.mirror)) {
      io.stderr.write(HELP[name]);
      return EXIT_USAGE;
    }
    try {
      if (name === "verify") {
        const online = client(values, io, base);
        const report = online ? await online.verify(base) : verifyInstall(base);
        if (values.json) io.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
        else {
          io.stdout.write(
            `svc verify: ${report.checked} file(s) checked, ${report.damaged.length} mod(s) damaged\n`,
          );
          for (const d of report.damaged) {
            for (const f of d.files)
              io.stdout.write(`  install_damaged ${d.modId}/${f.path} (${f.problem})\n`);
          }
        }
        return report.ok ? EXIT_OK : EXIT_FAILED;
      }
      const manager = client(values, io, name === "fetch" ? resolve(io.cwd) : base)!;
      if (name === "repair") {
        const report = await manager.repair(base);
        const files = report.damaged.reduce((n, d) => n + d.files.length, 0);
        io.stdout.write(`svc repair: ${files} file(s) rewritten from verified packages\n`);
        return EXIT_OK;
      }
      const requests = positionals.map(parseModRequest);
      if (requests.length === 0) {
        io.stderr.write(HELP[name]);
        return EXIT_USAGE;
      }
      const gameBuild = values["game-build"];
      if (name === "fetch") {
        const [release] = await manager.resolve(requests.slice(0, 1), gameBuild);
        const bytes = await manager.downloadPackage(release!);
        const file = packageOutputPath(base, release!.version.fileName);
        mkdirSync(base, { recursive: true });
        // Renamed into place: a link already at that name is replaced, not written through.
        writeFileAtomic(file, bytes);
        io.stdout.write(
          `svc fetch: ${file} (${bytes.length} bytes, sha256 ${release!.version.sha256}, verified)\n`,
        );
        return EXIT_OK;
      }
      const target = values.game ? await manager.modsFolder(resolve(io.cwd, values.game)) : base;
      const installed = await manager.install(target, requests, gameBuild);
      for (const m of installed)
        io.stdout.write(`svc install: ${m.modId}@${m.version} (${m.files} files, verified)\n`);
      return EXIT_OK;
    } catch (error) {
      if (!isDistributionError(error)) throw error;
      io.stderr.write(`svc ${name}: ${error.code}: ${error.message}\n`);
      return EXIT_FAILED;
    }
  };
}

export const runInstall = command("install");
export const runVerify = command("verify");
export const runRepair = command("repair");
export const runFetch = command("fetch");
