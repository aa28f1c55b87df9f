import { Ajv2020, type Options } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

/**
 * The Ajv every contract schema is compiled with: at run time by SchemaRegistry, and ahead of time
 * by bin/build-validators.mjs (which adds source generation). One set of options for both, so the
 * precompiled validators answer as run-time compiled ones do.
 */
export function contractAjv(extra: Options = {}): Ajv2020 {
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
