import { type ParseArgsConfig, parseArgs } from "node:util";
import { resolve } from "node:path";
import type { PortalConfig } from "../config/portal-config.ts";
import { loadPortalConfig } from "../contracts/portal-config.ts";
import { type ProjectPaths, projectPaths } from "../catalog/project-paths.ts";
import type { RecoveryResult } from "../catalog/atomic-files.ts";
import type { CliIo } from "./io.ts";

export const PROJECT_OPTIONS = {
  root: { type: "string" },
  config: { type: "string" },
  records: { type: "string" },
  site: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const;

/** Resolves the project folders from flags (all relative to the working directory) and loads the configuration. */
export function openProject(
  values: { root?: string; config?: string; records?: string; site?: string },
  io: CliIo,
) {
  const root = resolve(io.cwd, values.root ?? ".");
  const paths: ProjectPaths = projectPaths(root, {
    ...(values.config ? { configPath: resolve(io.cwd, values.config) } : {}),
    ...(values.records ? { recordsDir: resolve(io.cwd, values.records) } : {}),
    ...(values.site ? { siteDir: resolve(io.cwd, values.site) } : {}),
  });
  const config: PortalConfig = loadPortalConfig(paths.configPath);
  return { paths, config };
}

export function parseFlags<T extends NonNullable<ParseArgsConfig["options"]>>(args: string[], options: T) {
  return parseArgs({ args, options, allowPositionals: false, strict: true });
}

/** The line a command prints when it found (and finished) a transaction a crash interrupted. */
export function recoveredLine(command: string, result: RecoveryResult): string {
  const parts = [
    ...(result.completed ? [`${result.completed} committed transaction(s) completed`] : []),
    ...(result.rolledBack ? [`${result.rolledBack} uncommitted transaction(s) rolled back`] : []),
  ];
  return `svc ${command}: recovered an interrupted publication: ${parts.join(", ")}\n`;
}
