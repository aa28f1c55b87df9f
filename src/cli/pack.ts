import { isAbsolute, join, relative, resolve } from "node:path";
import { readdirSync, statSync } from "node:fs";
import { parseArgs } from "node:util";
import { readValidationDocuments } from "../catalog/validator.ts";
import { writeFileAtomic } from "../lib/atomic-write.ts";
import { packFolder, type PackProgress } from "../validation/pack.ts";
import { type CliIo, EXIT_FAILED, EXIT_OK, EXIT_USAGE } from "./io.ts";
import { byteProgressBar } from "./progress-bar.ts";

const HELP = `usage: svc pack FOLDER [--out FILE.zip] [--site DIR] [--json]

Builds a mod's package ZIP from FOLDER, which holds exactly what the ZIP contains, with svc-mod.json
(schema svc.mod-manifest.v1) at its root. The ZIP is deterministic: the same folder gives the same
bytes on every machine (svc-mod.json first, then every file in byte order of its path; no folder
entries; every timestamp 1980-01-01T00:00:00Z; mode 0644; DEFLATE).

Before a byte is written, the validator's own rules run on the file list (names, traversal, reserved
and case-twin names, links, extensions, where native binaries may live, entry and size caps, the
manifest, entrypoints, modConfig) and again on the built ZIP (file signatures, ZIP structure). What
\`svc validate\` would refuse in the package, pack refuses with the same reason codes
(docs/validation.md); the sidecar-side checks run in \`svc validate\`.

  --out FILE.zip   where to write (default: {id}-{version}.zip from svc-mod.json, in the current
                   folder); written atomically, never inside FOLDER
  --site DIR       the portal site whose validation policy applies (default: ./site)
  --json           print the result (or the refusal) as JSON
  -h, --help

Then: svc new --package FILE.zip ... writes the sidecar; svc validate checks both (docs/modders.md).
exit status: 0 written, 1 refused (nothing written), 2 usage error or unreadable FOLDER.
`;

/** Codes of pack's own refusals; every other refusal carries a validation reason code. */
export const PACK_CODES = ["pack_folder_unreadable", "pack_out_invalid"] as const;

const PROGRESS_MIN_BYTES = 8 * 1024 * 1024;
async function progressBar(io: CliIo, folder: string): Promise<((p: PackProgress) => void) | undefined> {
  // Only on a terminal (never into logs or pipes), and only for folders big enough to wait for.
  if (!io.stderr.isTTY) return undefined;
  let total = 0;
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.isDirectory()) walk(join(dir, entry.name));
      else if (entry.isFile()) total += statSync(join(dir, entry.name)).size;
    }
  };
  walk(folder);
  if (total < PROGRESS_MIN_BYTES) return undefined;
  return byteProgressBar(io, 11);
}

function usageError(io: CliIo, code: string, message: string, json: boolean): number {
  if (json) io.stdout.write(`${JSON.stringify({ ok: false, code, message }, null, 2)}\n`);
  else io.stderr.write(`svc pack: ${code}: ${message}\n`);
  return EXIT_USAGE;
}

export async function run(args: string[], io: CliIo): Promise<number> {
  let parsed: ReturnType<typeof parse>;
  const parse = (a: string[]) =>
    parseArgs({
      args: a,
      allowPositionals: true,
      strict: true,
      options: {
        out: { type: "string" },
        site: { type: "string" },
        json: { type: "boolean" },
        help: { type: "boolean", short: "h" },
      },
    });
  try {
    parsed = parse(args);
  } catch (error) {
    io.stderr.write(`svc pack: ${(error as Error).message}\n\n${HELP}`);
    return EXIT_USAGE;
  }
  const { values, positionals } = parsed;
  if (values.help) {
    io.stdout.write(HELP);
    return EXIT_OK;
  }
  if (positionals.length !== 1) {
    io.stderr.write(`svc pack: give exactly one FOLDER\n\n${HELP}`);
    return EXIT_USAGE;
  }
  const json = values.json === true;
  const folder = resolve(io.cwd, positionals[0]!);
  let isFolder = false;
  try {
    isFolder = statSync(folder).isDirectory();
  } catch {
    isFolder = false;
  }
  if (!isFolder)
    return usageError(io, "pack_folder_unreadable", `${positionals[0]} is not a folder (${folder})`, json);
  const outArg = values.out;
  if (outArg !== undefined && !outArg.toLowerCase().endsWith(".zip"))
    return usageError(io, "pack_out_invalid", `--out must name a .zip file (got ${outArg})`, json);
  const inside = (path: string) => {
    const rel = relative(folder, path);
    return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel));
  };
  if (outArg !== undefined && inside(resolve(io.cwd, outArg)))
    return usageError(
      io,
      "pack_out_invalid",
      `--out ${outArg} is inside ${positionals[0]}: the next pack would put the ZIP inside itself`,
      json,
    );

  const { policy } = readValidationDocuments(resolve(io.cwd, values.site ?? "site"));
  const outcome = await packFolder(folder, policy, json ? undefined : await progressBar(io, folder));
  if (!outcome.ok) {
    if (json) {
      io.stdout.write(
        `${JSON.stringify({ ok: false, code: outcome.problems[0]!.code, problems: outcome.problems }, null, 2)}\n`,
      );
    } else {
      io.stderr.write(
        [
          `svc pack: ${outcome.problems[0]!.code}: ${positionals[0]} is not a valid package (${outcome.problems.length} problem(s)); nothing was written`,
          ...outcome.problems.flatMap((p) => [
            `  ${p.check ? `${p.check}: ` : ""}${p.code}`,
            ...p.log.map((l) => `    ${l}`),
          ]),
          "",
        ].join("\n"),
      );
    }
    return EXIT_FAILED;
  }
  const { manifest } = outcome;
  const out = resolve(io.cwd, outArg ?? `${manifest.id}-${manifest.version}.zip`);
  if (inside(out))
    return usageError(io, "pack_out_invalid", `${out} is inside ${positionals[0]}; pass --out`, json);
  writeFileAtomic(out, outcome.bytes);
  const shown = relative(io.cwd, out) || out;
  if (json) {
    io.stdout.write(
      `${JSON.stringify(
        {
          ok: true,
          path: out,
          modId: manifest.id,
          version: manifest.version,
          sha256: outcome.sha256,
          sizeBytes: outcome.bytes.length,
          entries: outcome.entries,
          stored: outcome.stored,
        },
        null,
        2,
      )}\n`,
    );
    return EXIT_OK;
  }
  io.stdout.write(
    [
      `svc pack: wrote ${shown}`,
      `  mod       ${manifest.id}@${manifest.version} (${manifest.name}, game build ${manifest.targetGameBuild})`,
      `  files     ${outcome.entries.length}${outcome.stored.length > 0 ? ` (${outcome.stored.length} stored uncompressed to stay under the ratio cap)` : ""}`,
      `  sha256    ${outcome.sha256}`,
      `  size      ${outcome.bytes.length} bytes`,
      "next:",
      `  npx svc new --package ${shown} --url https://github.com/OWNER/REPO/releases/download/v${manifest.version}/${basenameOf(shown)} \\`,
      `    --summary "..." --notes "..." --author "Your Name @your-login"`,
      `  npx svc validate --package ${shown} --metadata submissions/${manifest.id}/${manifest.version}.json`,
      "",
    ].join("\n"),
  );
  return EXIT_OK;
}

function basenameOf(path: string): string {
  return path.split(/[\\/]/).pop() ?? path;
}
