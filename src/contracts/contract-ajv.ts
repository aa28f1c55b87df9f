import { createRequire } from "node:module";
import type { Ajv2020 as Ajv2020Class, Options } from "ajv/dist/2020.js";

type AjvModule = typeof import("ajv/dist/2020.js");
type AddFormats = (ajv: Ajv2020Class) => Ajv2020Class;

/**
 * Ajv's compiler is loaded when a schema is first compiled, not at start-up: every validator the
 * CLI, the actions and the functions run was compiled ahead of time (validators.generated.js), and
 * loading Ajv itself cost each process ~40 ms. The direct require() calls are what esbuild bundles
 * into the actions (lazily evaluated); the sources, run as ES modules, have no require and make one.
 */
function load(): { Ajv2020: AjvModule["Ajv2020"]; addFormats: AddFormats } {
  if (typeof require === "function") return pick(require("ajv/dist/2020.js"), require("ajv-formats"));
  const sourceRequire = createRequire(import.meta.url);
  return pick(sourceRequire("ajv/dist/2020.js"), sourceRequire("ajv-formats"));
}

function pick(ajv: AjvModule, formats: { default?: AddFormats } & AddFormats) {
  return { Ajv2020: ajv.Ajv2020, addFormats: formats.default ?? formats };
}

/**
 * The Ajv every contract schema is compiled with: at run time by SchemaRegistry, and ahead of time
 * by bin/build-validators.mjs (which adds source generation). One set of options for both, so the
 * precompiled validators answer as run-time compiled ones do.
 */
export function contractAjv(extra: Options = {}): Ajv2020Class {
  const { Ajv2020, addFormats } = load();
  const ajv = new Ajv2020({
    strict: true,
    strictTypes: false,
    strictRequired: false,
    allErrors: true,
    allowUnionTypes: true,
    ...extra,
  });
  addFormats(ajv);
  return ajv;
}
