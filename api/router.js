// The router function: every /api/v1/* endpoint (api/_entries/router.ts), bundled into one
// tree-shaken file by bin/build-functions.mjs, which vercel.json's buildCommand runs before the
// functions are traced (docs/api.md, "Small cold starts"). dist/ is built, never committed.
export { default } from "../dist/functions/router/index.js";
