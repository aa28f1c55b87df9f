import type { Handler } from "../context.ts";
import { sendJson } from "../respond.ts";

/** backend_health: process health and whether live uploads are enabled. */
export const backendHealth: Handler = async (_req, res, _route, app) => {
  const now = app.now();
  sendJson(res, 200, {
    status: "ok",
    liveUploads: app.settings.liveUploads,
    uploadGate: { env: "SVC_LIVE_UPLOADS", requiredValue: "1", enabled: app.settings.liveUploads },
    emailDelivery: app.settings.emailWebhookUrl
      ? "webhook"
      : app.settings.devEmail === "off"
        ? "unavailable"
        : `dev:${app.settings.devEmail}`,
    time: now.toISOString(),
    uptimeSeconds: Math.round((now.getTime() - app.startedAt.getTime()) / 1000),
  });
};
