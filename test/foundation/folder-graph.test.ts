// The floors of src/ hold: dependency-cruiser reads every value and type import (through the
// TypeScript compiler, so `import type` counts), the rules in .dependency-cruiser.mjs refuse any
// import of a folder on the same or a higher floor, and the folder graph has no cycle. A fixture
// tree with an upward type import and a two-way pair proves the same check fails when one is added.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cruise, type ICruiseResult } from "dependency-cruiser";
import { afterAll, describe, expect, it } from "vitest";
import config, { FLOORS } from "../../.dependency-cruiser.mjs";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..", "..");

async function cruiseTree(baseDir: string): Promise<ICruiseResult> {
  const result = await cruise(
    ["src"],
    {
      ...config.options,
      baseDir,
      tsConfig: { fileName: join(baseDir, "tsconfig.json") },
      ruleSet: { forbidden: config.forbidden },
      validate: true,
    },
    undefined,
    undefined,
  );
  return result.output as ICruiseResult;
}

function folderOf(path: string): string {
  const parts = path.split("/");
  return parts.length === 2 ? "." : (parts[1] ?? ".");
}

/** Folder edges (from -> to) of a cruise, value and type imports alike. */
function folderEdges(result: ICruiseResult): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  for (const module of result.modules) {
    if (!module.source.startsWith("src/")) continue;
    const from = folderOf(module.source);
    for (const dependency of module.dependencies) {
      if (!dependency.resolved.startsWith("src/")) continue;
      const to = folderOf(dependency.resolved);
      if (to === from) continue;
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from)!.add(to);
    }
  }
  return edges;
}

/** The strongly connected components with more than one folder (Tarjan). */
function folderCycles(edges: Map<string, Set<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  let next = 0;
  const visit = (node: string) => {
    index.set(node, next);
    low.set(node, next);
    next++;
    stack.push(node);
    onStack.add(node);
    for (const to of edges.get(node) ?? []) {
      if (!index.has(to)) {
        visit(to);
        low.set(node, Math.min(low.get(node)!, low.get(to)!));
      } else if (onStack.has(to)) {
        low.set(node, Math.min(low.get(node)!, index.get(to)!));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) cycles.push(component.sort());
    }
  };
  const nodes = new Set([...edges.keys(), ...[...edges.values()].flatMap((set) => [...set])]);
  for (const node of nodes) if (!index.has(node)) visit(node);
  return cycles;
}

const scratch: string[] = [];
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe("the floors of src/", () => {
  it("every import points down a floor and the folder graph has no cycle", async () => {
    const result = await cruiseTree(ROOT);
    const violations = result.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`);
    expect(violations).toEqual([]);
    // The cruise saw the whole tree, type imports included (a type-only edge exists: contracts -> config).
    expect(result.modules.filter((m) => m.source.startsWith("src/")).length).toBeGreaterThan(200);
    const edges = folderEdges(result);
    expect(edges.get("contracts")?.has("config")).toBe(true);
    expect(folderCycles(edges)).toEqual([]);
    for (const [from, targets] of edges) {
      for (const to of targets) {
        expect(FLOORS[to], `${from} -> ${to}`).toBeLessThan(FLOORS[from] ?? -1);
      }
    }
  });

  it("names a floor for every folder of src/", () => {
    const folders = readdirSync(join(ROOT, "src")).filter((name) =>
      statSync(join(ROOT, "src", name)).isDirectory(),
    );
    expect(folders.sort()).toEqual(
      Object.keys(FLOORS)
        .filter((name) => name !== ".")
        .sort(),
    );
  });

  it("fails on an upward type import, a two-way pair and a folder with no floor", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-floors-"));
    scratch.push(dir);
    const write = (path: string, text: string) => {
      mkdirSync(dirname(join(dir, path)), { recursive: true });
      writeFileSync(join(dir, path), text);
    };
    write(
      "tsconfig.json",
      JSON.stringify({
        compilerOptions: {
          module: "NodeNext",
          moduleResolution: "NodeNext",
          allowImportingTsExtensions: true,
          noEmit: true,
          verbatimModuleSyntax: true,
        },
        include: ["src"],
      }),
    );
    write(
      "src/lib/hash.ts",
      `import type { Command } from "../cli/main.ts";\nexport const hash = (c: Command) => c;\n`,
    );
    write(
      "src/cli/main.ts",
      `import { hash } from "../lib/hash.ts";\nexport type Command = string;\nhash("x");\n`,
    );
    write(
      "src/catalog/site.ts",
      `import { sign } from "../distribution/sign.ts";\nexport const site = () => sign();\n`,
    );
    write(
      "src/distribution/sign.ts",
      `import { site } from "../catalog/site.ts";\nexport const sign = () => typeof site;\n`,
    );
    write("src/extras/thing.ts", `import { hash } from "../lib/hash.ts";\nexport const thing = hash;\n`);
    const result = await cruiseTree(dir);
    const violations = result.summary.violations.map((v) => `${v.rule.name}: ${v.from} -> ${v.to}`).sort();
    expect(violations).toEqual([
      "floor-distribution: src/distribution/sign.ts -> src/catalog/site.ts",
      "floor-lib: src/lib/hash.ts -> src/cli/main.ts",
      "no-unknown-folder: src/extras/thing.ts -> src/lib/hash.ts",
    ]);
    expect(folderCycles(folderEdges(result))).toEqual([
      ["catalog", "distribution"],
      ["cli", "lib"],
    ]);
  });
});

describe("the README's map of src/", () => {
  it("lists every folder with the floor the rules hold", () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8");
    const rows = [...readme.matchAll(/^\| ([0-9.]+) \| `src\/([a-z]+)\/`/gm)].map((m) => [
      m[2],
      Number(m[1]),
    ]);
    expect(Object.fromEntries(rows)).toEqual(
      Object.fromEntries(Object.entries(FLOORS).filter(([folder]) => folder !== ".")),
    );
  });
});
