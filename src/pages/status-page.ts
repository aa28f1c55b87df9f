import { plural } from "./format.ts";
import { html, link, type SafeHtml } from "./html.ts";
import { type PageContext, renderPage } from "./layout.ts";

/** readiness.json (svc.production-readiness.v1) as the status page reads it. */
export interface ReadinessView {
  generatedAt: string;
  overallStatus: string;
  liveBackend: boolean;
  summary: string;
  releaseBlockers: Array<{ id: string; summary: string }>;
  evidence: Record<string, string>;
  gates: Array<{
    id: number;
    title: string;
    status: "ready" | "partial" | "blocked";
    evidence: string[];
    remaining: string[];
  }>;
}

const ROOT = "../";

const GATE_STATUS: Record<string, { label: string; sentence: string }> = {
  ready: { label: "Ready", sentence: "Done: nothing remains." },
  partial: { label: "Partly ready", sentence: "Some of this works; the items below remain." },
  blocked: { label: "Blocked", sentence: "Not started or not working yet; the items below remain." },
};

const EVIDENCE_LABELS: Record<string, string> = {
  catalogUrl: "Catalog",
  runtimeUrl: "Pinned runtime",
  frameworkUrl: "Framework release",
  managerUrl: "Manager release",
  publishingWorkflowUrl: "Publishing workflow",
  publishingBackendContractUrl: "Backend contract",
  manualPublishingRunbook: "Manual publishing runbook",
  deploymentRunbook: "Deployment runbook",
};

/** An evidence entry is either a URL (a link when allowed) or a sentence. */
function evidenceItem(ctx: PageContext, text: string): SafeHtml {
  return /^[a-z][a-z0-9+.-]*:/i.test(text) ? link(text, text, ctx.baseUrl, ROOT) : html`${text}`;
}

function overallSentence(view: ReadinessView): SafeHtml {
  const ready = view.gates.filter((g) => g.status === "ready").length;
  if (view.overallStatus === "not_release_ready") {
    return html`<strong>Not ready for release:</strong> ${ready} of ${view.gates.length} go-live gates are ready.`;
  }
  return html`<strong>Ready for release:</strong> ${ready} of ${view.gates.length} go-live gates are ready.`;
}

/**
 * Two questions, answered apart: what the portal answering this page does right now (its
 * backend_health, read by assets/status.js; a development portal takes uploads while the deployment
 * described below may not), and what the deployment portal.config.json describes still lacks.
 */
export function renderStatusPage(ctx: PageContext, view: ReadinessView): string {
  const main = html`<h1>Portal status</h1>
<section aria-labelledby="running-h">
<h2 id="running-h">This portal, now</h2>
<p id="running-state" role="status">This page asks the running portal what it does; without JavaScript or without its API there is nothing to show here.</p>
<dl class="facts" id="running" hidden>
<dt>Uploads</dt><dd id="running-uploads"></dd>
<dt>Email</dt><dd id="running-email"></dd>
<dt>Database</dt><dd id="running-database"></dd>
</dl>
</section>
<section aria-labelledby="deployment-h">
<h2 id="deployment-h">The deployment</h2>
<p>What <code>portal.config.json</code> says is deployed, and what a release still needs. It describes the public deployment, not the process answering this page.</p>
<p class="overall status-${view.overallStatus === "not_release_ready" ? "blocked" : "ready"}">${overallSentence(view)}</p>
<p>${view.summary}</p>
<p>Deployed backend services live: <strong>${view.liveBackend ? "yes" : "no"}</strong>. Last change: <time datetime="${view.generatedAt}">${view.generatedAt.replace("T", " ").replace(/\.\d+Z$/, " UTC")}</time>.</p>
</section>
<section aria-labelledby="blockers-h">
<h2 id="blockers-h">What blocks a release (${plural(view.releaseBlockers.length, "item")})</h2>
${
  view.releaseBlockers.length === 0
    ? html`<p>Nothing blocks a release.</p>`
    : html`<ul class="blockers">${view.releaseBlockers.map((b) => html`<li>${b.summary} <code class="note">${b.id}</code></li>`)}</ul>`
}
</section>
<section aria-labelledby="gates-h">
<h2 id="gates-h">Go-live gates</h2>
<ol class="gates">
${view.gates.map((gate) => {
  const status = GATE_STATUS[gate.status] ?? { label: gate.status, sentence: "" };
  return html`<li class="gate" id="gate-${gate.id}">
<h3>${gate.title} <span class="badge status-${gate.status}">${status.label}</span></h3>
<p>${status.sentence}</p>
${gate.evidence.length > 0 ? html`<p>What is in place:</p><ul>${gate.evidence.map((e) => html`<li>${evidenceItem(ctx, e)}</li>`)}</ul>\n` : ""}${gate.remaining.length > 0 ? html`<p>What remains:</p><ul>${gate.remaining.map((r) => html`<li>${r}</li>`)}</ul>\n` : ""}</li>
`;
})}</ol>
</section>
<section aria-labelledby="evidence-h">
<h2 id="evidence-h">Where to look</h2>
<dl class="facts">
${Object.entries(view.evidence).map(([key, value]) => html`<dt>${EVIDENCE_LABELS[key] ?? key}</dt><dd>${evidenceItem(ctx, value)}</dd>\n`)}<dt>Machine-readable status</dt><dd><a href="${ROOT}api/v1/readiness.json">api/v1/readiness.json</a></dd>
</dl>
</section>`;
  return renderPage(ctx, {
    title: "Status",
    root: ROOT,
    section: "status",
    description: "What the running portal does now, and the deployment's go-live gates and release blockers.",
    scripts: ["status.js"],
    main,
  });
}
