// The status page's first section: what the portal answering this page does right now, from its
// backend_health. The rest of the page (readiness.json) describes the deployment that
// portal.config.json names, which a development portal is not. Every text goes through textContent.
import { describeError, request } from "./api.js";

const EMAIL = {
  webhook: "Sends verification and sign-in email (webhook).",
  unavailable: "Sends no email: sign-up and sign-in links fail closed (email_delivery_unavailable).",
  "dev:return-token": "Development mode: tokens are returned in responses instead of email.",
  "dev:auto-verify": "Development mode: accounts are verified at creation; sign-in tokens are printed.",
};

const DATABASE = {
  pglite: "PGlite (embedded, on this machine)",
  postgresql: "PostgreSQL",
};

async function showRunning() {
  const state = document.getElementById("running-state");
  const facts = document.getElementById("running");
  if (!state || !facts) return;
  let health;
  try {
    health = await request("GET", "backend/health");
  } catch (error) {
    // A site served without its API (GitHub Pages alone) has no running portal to describe.
    state.textContent =
      error.status === 404
        ? "No portal API answers beside these pages: they are served as static files."
        : `The running portal did not answer: ${describeError(error)}`;
    return;
  }
  const set = (id, text) => {
    document.getElementById(id).textContent = text;
  };
  set(
    "running-uploads",
    health.liveUploads
      ? "On: this portal takes uploads (SVC_LIVE_UPLOADS=1)."
      : "Off: this portal refuses uploads (uploads_disabled) until it runs with SVC_LIVE_UPLOADS=1.",
  );
  set("running-email", EMAIL[health.emailDelivery] ?? String(health.emailDelivery));
  set("running-database", health.database ? (DATABASE[health.database] ?? String(health.database)) : "None");
  state.textContent = `Answered by the portal at ${new URL(".", location.href).origin}.`;
  facts.hidden = false;
}

showRunning();
