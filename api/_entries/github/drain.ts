// The bot's delivery queue, drained by Vercel cron (vercel.json "crons"), which sends
// `Authorization: Bearer $CRON_SECRET`; answers what it ran and every delivery that failed for good.
import { waitUntil } from "@vercel/functions";
import { createBotFunctions } from "../../../src/bot/app.ts";

export default createBotFunctions(process.env, { defer: waitUntil }).drain;
