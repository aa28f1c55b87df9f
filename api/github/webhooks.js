// The GitHub App's webhooks function (api/_entries/github/webhooks.ts), bundled into one tree-shaken
// file by bin/build-functions.mjs, which vercel.json's buildCommand runs before the functions are
// traced (docs/api.md, "Small cold starts"). dist/ is built, never committed.
export { default } from "../../dist/functions/github-webhooks/index.js";
