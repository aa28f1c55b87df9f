import { describeEmailMode } from "../app.ts";
import type { Handler } from "../context.ts";
import { sendJson } from "../respond.ts";

/** backend_health: process health and whether live uploads are enabled. */
export const backendHealth: Handler = async (_req, res, _route, app) => {
  const now = app.now();
  sendJson(res, 200, {
    status: "ok",
    liveUploads: app.settings.liveUploads,
    uploadGate: { env: "SVC_LIVE_UPLOADS", requiredValue: "1", enabled: app.settings.liveUploads },
    emailDelivery: describeEmailMode(app.settings),
    database: app.store?.kind ?? null,
    time: now.toISOString(),
    uptimeSeconds: Math.round((now.getTime() - app.startedAt.getTime()) / 1000),
  });
};
