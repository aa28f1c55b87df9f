import type { CheckContext, CheckOutcome, PackageCheck } from "../types.ts";
import {
  blocked,
  canonical,
  extensionOf,
  failuresOf,
  firstNotPassed,
  isUnderDirectory,
  passed,
  structureBlocker,
} from "./common.ts";

const ID = "entrypoint_presence";

export const entrypointPresence = {
  id: ID,
  scope: "package",
  required: true,
  pack: "file_list",
  description: "Every manifest entrypoint path exists in the ZIP.",
  reasons: {
    entrypoint_missing: {
      meaning: "A manifest entrypoint path does not exist in the ZIP.",
      fix: "Fix the path in svc-mod.json or add the file to the package.",
    },
    entrypoint_unsafe: {
      meaning: "An entrypoint path is not a safe relative path, or points at a folder.",
      fix: "Use a relative path to a file inside the package, with '/' separators.",
    },
    entrypoint_mismatch: {
      meaning: "The sidecar and svc-mod.json declare different entrypoints.",
      fix: "Declare the same entrypoints in both files.",
    },
  },
  run: checkEntrypointPresence,
} as const satisfies PackageCheck;

const { failed } = failuresOf(entrypointPresence);

export function checkEntrypointPresence(ctx: CheckContext): CheckOutcome {
  const missingCheck = firstNotPassed(ctx, ["sidecar_schema", "manifest_schema"]);
  const manifest = ctx.manifest.valid;
  const sidecar = ctx.sidecar.valid;
  if (missingCheck || !manifest || !sidecar) {
    return blocked(
      ID,
      missingCheck ?? "manifest_schema",
      "entrypoints are read from a valid manifest and sidecar",
    );
  }
  const blocker = structureBlocker(ctx);
  if (blocker) return blocked(ID, blocker.check, blocker.why);
  const sortKey = (e: { path: string; kind: string }) => `${e.path}\u0000${e.kind}`;
  const same = (a: typeof manifest.entrypoints, b: typeof manifest.entrypoints) =>
    canonical([...a].sort((x, y) => (sortKey(x) < sortKey(y) ? -1 : 1))) ===
    canonical([...b].sort((x, y) => (sortKey(x) < sortKey(y) ? -1 : 1)));
  if (!same(manifest.entrypoints, sidecar.entrypoints)) {
    const show = (list: typeof manifest.entrypoints) => list.map((e) => `${e.kind}:${e.path}`).join(", ");
    return failed("entrypoint_mismatch", [
      `sidecar: ${show(sidecar.entrypoints)}`,
      `svc-mod.json: ${show(manifest.entrypoints)}`,
    ]);
  }
  // Only the entrypoints' own names are looked up; the full name list (for the "did you mean" hint)
  // is built only when one is missing.
  const wanted = new Set(manifest.entrypoints.map((e) => e.path));
  const files = new Map<string, boolean>();
  for (const { entry } of ctx.pkg.entries) {
    const name = entry.name.endsWith("/") ? entry.name.slice(0, -1) : entry.name;
    if (wanted.has(name)) files.set(name, entry.isDirectory);
  }
  let lower: Map<string, string> | undefined;
  const nearName = (path: string) => {
    if (!lower) {
      const all = new Map<string, boolean>();
      for (const { entry } of ctx.pkg.entries) all.set(entry.name.replace(/\/$/, ""), entry.isDirectory);
      lower = new Map([...all.keys()].map((n) => [n.toLowerCase(), n]));
    }
    return lower.get(path.toLowerCase());
  };
  const { nativeBinaryDirectory, nativeBinaryExtensions } = ctx.policy.content;
  const log: string[] = [];
  let code: "entrypoint_missing" | "entrypoint_unsafe" | null = null;
  for (const e of manifest.entrypoints) {
    const isDir = files.get(e.path);
    if (isDir === undefined) {
      code ??= "entrypoint_missing";
      const near = nearName(e.path);
      log.push(
        `${e.kind} entrypoint ${e.path} is not in the package${near ? ` (did you mean ${near}? names are case-sensitive)` : ""}`,
      );
    } else if (isDir) {
      code ??= "entrypoint_unsafe";
      log.push(`${e.kind} entrypoint ${e.path} is a folder, not a file`);
    } else if (
      e.kind === "native" &&
      (!isUnderDirectory(e.path, nativeBinaryDirectory) ||
        !nativeBinaryExtensions.includes(extensionOf(e.path)))
    ) {
      code ??= "entrypoint_unsafe";
      log.push(
        `native entrypoint ${e.path} must be a ${nativeBinaryExtensions.join("/")} under ${nativeBinaryDirectory}/`,
      );
    }
  }
  if (code) return failed(code, log);
  return passed(
    ID,
    manifest.entrypoints.map((e) => `${e.kind} entrypoint ${e.path} is present`),
  );
}
