import { isSvcError } from "../errors.ts";
import { type CliIo, type CommandRun, EXIT_FAILED, EXIT_USAGE } from "./io.ts";

/** One line per command; each module is loaded only when its command runs. */
const COMMANDS: Record<string, { summary: string; load: () => Promise<{ run: CommandRun }> }> = {
  serve: { summary: "run the local portal (static site, API, worker)", load: () => import("./serve.ts") },
  build: {
    summary: "regenerate site/api/v1 from portal.config.json and records/",
    load: () => import("./build.ts"),
  },
  check: {
    summary: "fail on drift from `svc build` or on a broken contract rule",
    load: () => import("./check.ts"),
  },
  import: {
    summary: "publish an approved release (manual fallback): validate, promote, regenerate atomically",
    load: () => import("./import.ts"),
  },
  records: {
    summary: "`records migrate`: rewrite records/ from the layout before sharding into the sharded one",
    load: () => import("./records.ts"),
  },
  smoke: {
    summary: "public smoke: fetch every route, verify every artifact, run the manager reader",
    load: () => import("./smoke.ts"),
  },
  sync: {
    summary: "sync manager/framework releases (`sync releases`) or game builds (`sync game-builds`)",
    load: () => import("./sync.ts"),
  },
  pack: {
    summary: "build a mod's deterministic package ZIP from its folder (refuses what validation would)",
    load: () => import("./pack.ts"),
  },
  new: {
    summary: "scaffold a release's sidecar (submissions/{modId}/{version}.json) from its package",
    load: () => import("./new.ts"),
  },
  validate: {
    summary: "run every validation check on a package and its sidecar",
    load: () => import("./validate.ts"),
  },
  github: {
    summary:
      "`github doctor`: name every repository setting that differs from what the portal needs; `github ruleset`: the ruleset to import",
    load: () => import("./github.ts"),
  },
  keys: {
    summary: "create, rotate and explain the catalog's TUF signing keys; `keys sign` signs the built site",
    load: () => import("./keys.ts"),
  },
  install: {
    summary: "install mods from a signed portal (TUF-verified, dependencies resolved, resumable)",
    load: () => import("./manager.ts").then((m) => ({ run: m.runInstall })),
  },
  verify: {
    summary: "check an installation against its per-file hashes",
    load: () => import("./manager.ts").then((m) => ({ run: m.runVerify })),
  },
  repair: {
    summary: "rewrite only the damaged files of an installation from verified packages",
    load: () => import("./manager.ts").then((m) => ({ run: m.runRepair })),
  },
  fetch: {
    summary: "download one verified package ZIP from a signed portal",
    load: () => import("./manager.ts").then((m) => ({ run: m.runFetch })),
  },
};

function usage(): string {
  const width = Math.max(...Object.keys(COMMANDS).map((name) => name.length));
  const lines = Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: svc <command> [options]\n\ncommands:\n${lines.join("\n")}\n\nRun \`svc <command> --help\` for its options.\n`;
}

export async function main(argv: string[], io: CliIo = defaultIo()): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === "--help" || name === "-h" || name === "help") {
    io.stdout.write(usage());
    return name ? 0 : EXIT_USAGE;
  }
  const command = COMMANDS[name];
  if (!command) {
    io.stderr.write(`svc: unknown command '${name}'\n\n${usage()}`);
    return EXIT_USAGE;
  }
  try {
    const module = await command.load();
    return await module.run(rest, io);
  } catch (error) {
    if (isSvcError(error)) {
      io.stderr.write(`svc ${name}: ${error.code}: ${error.message}\n`);
      if (error.details !== undefined) io.stderr.write(`${JSON.stringify(error.details, null, 2)}\n`);
      return error.isUsage ? EXIT_USAGE : EXIT_FAILED;
    }
    // node:util parseArgs refuses an unknown flag or a missing value with ERR_PARSE_ARGS_*.
    const code = (error as { code?: unknown }).code;
    if (typeof code === "string" && code.startsWith("ERR_PARSE_ARGS_")) {
      io.stderr.write(`svc ${name}: usage_invalid: ${(error as Error).message}\n`);
      return EXIT_USAGE;
    }
    io.stderr.write(
      `svc ${name}: internal error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    return EXIT_FAILED;
  }
}

function defaultIo(): CliIo {
  return { stdout: process.stdout, stderr: process.stderr, cwd: process.cwd(), env: process.env };
}
