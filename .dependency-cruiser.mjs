/**
 * The floors of src/ (DESIGN.md): a folder imports only from folders on lower floors. Value and
 * type imports both count. The folder-graph test (test/foundation/folder-graph.test.ts) cruises
 * src/ with these rules and fails on any violation; `npx depcruise src --config .dependency-cruiser.mjs`
 * prints the same report. When an import breaks a floor, move the code down (a helper two floors
 * need goes to lib/); never add an exception here.
 */

/** Floor of each folder of src/ ("." is src/'s own files: errors.ts). Higher imports lower only. */
export const FLOORS = {
  ".": 0,
  lib: 0,
  config: 1,
  workflow: 1,
  contracts: 2,
  store: 3,
  validation: 4,
  accounts: 4,
  pages: 4,
  distribution: 5,
  catalog: 6,
  submissions: 7,
  github: 7,
  bot: 8,
  // The GitHub use cases drive the bot's derive/decide/comments, so they stand just above it.
  pipeline: 8.5,
  http: 9,
  // `svc serve` starts the HTTP app, so the CLI stands just above http/.
  cli: 9.5,
};

const escapeRegExp = (name) => name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const folderPattern = (name) => (name === "." ? "^src/[^/]+$" : `^src/${escapeRegExp(name)}/`);

const floorRules = Object.entries(FLOORS).flatMap(([folder, floor]) => {
  const above = Object.entries(FLOORS).filter(([other, f]) => other !== folder && f >= floor);
  if (above.length === 0) return [];
  return {
    name: `floor-${folder === "." ? "root" : folder}`,
    comment: `src/${folder === "." ? "" : `${folder}/`} (floor ${floor}) may import only lower floors`,
    severity: "error",
    from: { path: folderPattern(folder) },
    to: { path: above.map(([other]) => folderPattern(other)) },
  };
});

/** @type {import('dependency-cruiser').IConfiguration} */
export default {
  forbidden: [
    ...floorRules,
    {
      name: "no-unknown-folder",
      comment: "every folder of src/ has a floor in FLOORS (and in DESIGN.md / the README's map)",
      severity: "error",
      from: {
        path: "^src/",
        pathNot: Object.keys(FLOORS).map(folderPattern),
      },
      to: {},
    },
    {
      name: "no-entry-imports",
      comment: "nothing in src/ imports the entry points (api/, actions/, bin/)",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(api|actions|bin)/" },
    },
    {
      name: "no-test-imports",
      comment: "src/ never imports test code or a dev-only package at run time",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^test/", dependencyTypes: ["local", "npm-dev"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    includeOnly: "^src/",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js", ".mjs", ".d.ts"] },
  },
};
