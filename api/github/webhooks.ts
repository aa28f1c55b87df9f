// The GitHub App's webhook endpoint on Vercel. Probot reads the raw request body and verifies
// x-hub-signature-256 (WEBHOOK_SECRET) before any handler runs; APP_ID and PRIVATE_KEY authenticate
// the app; SVC_PORTAL_REPOSITORY names the portal repository (a missing variable fails closed).
import { createNodeMiddleware, createProbot } from "probot";
import { createSvcApp, svcAppOptionsFromEnv } from "../../src/bot/app.ts";

export default await createNodeMiddleware(createSvcApp(svcAppOptionsFromEnv(process.env)), {
  probot: createProbot(),
  webhooksPath: "/api/github/webhooks",
});
