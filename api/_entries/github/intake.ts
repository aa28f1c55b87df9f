// The release-intake GitHub App's webhooks (app-intake.yml, installed on mod repositories):
// `release` events verified with INTAKE_WEBHOOK_SECRET, queued, answered 202; the submission pull
// request is opened afterwards with the portal app's installation token.
import { waitUntil } from "@vercel/functions";
import { createBotFunctions } from "../../../src/bot/app.ts";

export default createBotFunctions(process.env, { defer: waitUntil }).intakeWebhook;
