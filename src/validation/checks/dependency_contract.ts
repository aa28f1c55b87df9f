import * as semver from "../../contracts/semver.ts";
import type { Dependency } from "../../contracts/records.ts";
import type { CheckContext, CheckOutcome, PackageCheck } from "../types.ts";
import { blocked, canonical, failuresOf, firstNotPassed, passed } from "./common.ts";

const ID = "dependency_contract";

export const dependencyContract = {
  id: ID,
  scope: "package",
  required: true,
  pack: null,
  description:
    "Sidecar dependencies match manifest dependencies, name catalog mods with parseable ranges, have no cycles and stay manager-readable.",
  reasons: {
    dependency_mismatch: {
      meaning: "The sidecar and svc-mod.json declare different dependencies.",
      fix: "Declare the same dependencies (id and version range) in both files.",
    },
    dependency_unknown_mod: {
      meaning: "A dependency names a mod that is not in the catalog.",
      fix: "Depend only on mods published in the catalog, or publish the dependency first.",
    },
    dependency_invalid_range: {
      meaning: "A dependency version range is not a valid semver range.",
      fix: "Use a semver range such as ^1.2.0 or >=1.0.0 <2.0.0.",
    },
    dependency_unsatisfiable: {
      meaning: "No published version of the dependency satisfies the declared range.",
      fix: "Widen the range or publish a matching version of the dependency first.",
    },
    dependency_self: {
      meaning: "The mod depends on itself.",
      fix: "Remove the self-dependency.",
    },
    dependency_cycle: {
      meaning: "The dependencies form a cycle through published mods.",
      fix: "Break the cycle; a mod must not (indirectly) depend on itself.",
    },
    dependency_duplicate: {
      meaning: "The same dependency id is declared more than once.",
      fix: "Declare each dependency once.",
    },
  },
  run: checkDependencyContract,
} as const satisfies PackageCheck;

const { failed } = failuresOf(dependencyContract);

function normalized(deps: Dependency[]): string {
  return canonical(
    [...deps]
      .map((d) => ({ modId: d.modId, versionRange: d.versionRange, optional: d.optional === true }))
      .sort((a, b) => (a.modId < b.modId ? -1 : a.modId > b.modId ? 1 : 0)),
  );
}

export function checkDependencyContract(ctx: CheckContext): CheckOutcome {
  const missing = firstNotPassed(ctx, ["sidecar_schema", "manifest_schema"]);
  const sidecar = ctx.sidecar.valid;
  const manifest = ctx.manifest.valid;
  if (missing || !sidecar || !manifest) {
    return blocked(
      ID,
      missing ?? "manifest_schema",
      "dependencies are compared once the sidecar and the manifest are valid",
    );
  }
  const deps = sidecar.dependencies;
  const seen = new Set<string>();
  for (const d of deps) {
    if (seen.has(d.modId)) return failed("dependency_duplicate", [`${d.modId} is declared more than once`]);
    seen.add(d.modId);
  }
  if (normalized(deps) !== normalized(manifest.dependencies)) {
    const show = (list: Dependency[]) =>
      list.map((d) => `${d.modId} ${d.versionRange}${d.optional ? " (optional)" : ""}`).join(", ") ||
      "(none)";
    return failed("dependency_mismatch", [
      `sidecar: ${show(deps)}`,
      `svc-mod.json: ${show(manifest.dependencies)}`,
    ]);
  }
  const self = deps.find((d) => d.modId === sidecar.modId);
  if (self) return failed("dependency_self", [`${sidecar.modId} lists itself as a dependency`]);
  const badRange = deps.filter((d) => semver.validRange(d.versionRange) === null);
  if (badRange.length > 0) {
    return failed(
      "dependency_invalid_range",
      badRange.map((d) => `${d.modId}: ${JSON.stringify(d.versionRange)} is not a semver range`),
    );
  }
  const catalog = ctx.catalog;
  if (!catalog) return failed("catalog_unavailable", ["the catalog is needed to resolve dependencies"]);
  const mods = new Map(catalog.mods.map((m) => [m.id, m]));
  const unknown = deps.filter((d) => !d.optional && !mods.has(d.modId));
  if (unknown.length > 0) {
    return failed(
      "dependency_unknown_mod",
      unknown.map((d) => `${d.modId} is not a mod in the catalog`),
    );
  }
  const unsatisfiable = deps.filter((d) => {
    const mod = mods.get(d.modId);
    return !d.optional && mod && !mod.versions.some((v) => semver.satisfies(v.version, d.versionRange));
  });
  if (unsatisfiable.length > 0) {
    return failed(
      "dependency_unsatisfiable",
      unsatisfiable.map(
        (d) =>
          `${d.modId} ${d.versionRange}: published versions are ${mods
            .get(d.modId)!
            .versions.map((v) => v.version)
            .join(", ")}`,
      ),
    );
  }
  // The graph a manager resolves: each catalog mod's newest version, with this release in place of its own.
  const edges = new Map<string, string[]>();
  for (const mod of catalog.mods)
    edges.set(
      mod.id,
      (mod.versions[0]?.dependencies ?? []).map((d) => d.modId),
    );
  edges.set(
    sidecar.modId,
    deps.map((d) => d.modId),
  );
  const cycle = findCycleThrough(sidecar.modId, edges);
  if (cycle) return failed("dependency_cycle", [`dependency cycle: ${cycle.join(" -> ")}`]);
  return passed(ID, [
    deps.length === 0
      ? "no dependencies"
      : `dependencies resolve in the catalog: ${deps.map((d) => `${d.modId} ${d.versionRange}`).join(", ")}`,
  ]);
}

/** A path start -> ... -> start, found breadth-first and iteratively (a hostile catalog cannot overflow the stack). */
function findCycleThrough(start: string, edges: Map<string, string[]>): string[] | null {
  const parent = new Map<string, string>();
  const queue: string[] = [];
  for (const first of edges.get(start) ?? []) {
    if (!parent.has(first)) {
      parent.set(first, start);
      queue.push(first);
    }
  }
  for (let i = 0; i < queue.length; i++) {
    const node = queue[i]!;
    for (const next of edges.get(node) ?? []) {
      if (next === start) {
        const path: string[] = [];
        for (let at: string | undefined = node; at !== undefined && at !== start; at = parent.get(at))
          path.unshift(at);
        return [start, ...path, start];
      }
      if (!parent.has(next)) {
        parent.set(next, node);
        queue.push(next);
      }
    }
  }
  return null;
}
