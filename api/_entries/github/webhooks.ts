// The portal GitHub App's webhooks (app.yml). Each delivery is verified over its raw body
// (WEBHOOK_SECRET), recorded in PostgreSQL (DATABASE_URL) and answered 202 at once; waitUntil keeps
// the work running after the response (src/bot/deployment.ts). A missing variable is answered
// 500 config_invalid, naming it.
import { waitUntil } from "@vercel/functions";
import { createBotFunctions } from "../../../src/bot/app.ts";

export default createBotFunctions(process.env, { defer: waitUntil }).portalWebhook;
