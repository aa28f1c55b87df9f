import { html, type SafeHtml } from "./html.ts";
import { type PageContext, renderPage } from "./layout.ts";

/**
 * Moderation pages, driven by assets/moderation.js over the submissions routes (moderation_queue,
 * upload_status, moderation_decision). Static: the queue is private, so it is never in the build.
 */

const NOSCRIPT = html`<noscript><p class="notice">The moderation queue needs JavaScript: it reads the private queue from the portal API with your session.</p></noscript>`;

function moderationPage(ctx: PageContext, page: string, title: string, root: string, main: SafeHtml) {
  return renderPage(ctx, {
    title,
    root,
    section: "moderation",
    scripts: ["moderation.js"],
    main: html`<div data-page="${page}">
${main}
${NOSCRIPT}
</div>`,
  });
}

export function renderModerationQueuePage(ctx: PageContext): string {
  return moderationPage(
    ctx,
    "queue",
    "Moderation queue",
    "../",
    html`<h1>Moderation queue</h1>
<p>Releases waiting for a decision, oldest first, and the ones decided or hidden. Open a release to read its validation logs and decide.</p>
<p id="message" class="message" role="status" aria-live="polite"></p>
<form id="queue-filter" class="filters" hidden>
<div><label for="state-filter">Show</label><select id="state-filter" name="state">
<option value="pending_review">Waiting for review</option>
<option value="validation_failed">Failed validation</option>
<option value="approved">Approved, not yet published</option>
<option value="hidden">Hidden</option>
<option value="superseded">Superseded</option>
<option value="">All of these</option>
</select></div>
</form>
<table id="queue" class="queue" hidden>
<caption>Submissions</caption>
<thead><tr><th scope="col">Position</th><th scope="col">Mod</th><th scope="col">Version</th><th scope="col">State</th><th scope="col">Age</th><th scope="col">Checks</th></tr></thead>
<tbody id="queue-rows"></tbody>
</table>
<p id="queue-empty" hidden>Nothing to show.</p>
<p><button type="button" id="queue-more" class="secondary" hidden>Show more</button></p>
<p id="queue-median" class="note"></p>`,
  );
}

export function renderModerationReviewPage(ctx: PageContext): string {
  return moderationPage(
    ctx,
    "review",
    "Review a release",
    "../../",
    html`<nav class="crumbs" aria-label="Breadcrumb"><a href="../">Moderation queue</a> › <span aria-current="page">Review</span></nav>
<h1 id="title">Review a release</h1>
<p id="message" class="message" role="status" aria-live="polite"></p>
<section id="submission" hidden aria-labelledby="facts-h">
<h2 id="facts-h">Submission</h2>
<dl class="facts" id="facts"></dl>
</section>
<section id="checks" hidden aria-labelledby="checks-h">
<h2 id="checks-h">Validation checks</h2>
<p id="checks-summary"></p>
<ol id="check-list" class="checks"></ol>
</section>
<section id="history" hidden aria-labelledby="history-h">
<h2 id="history-h">Decisions so far</h2>
<ol id="decision-list" class="decisions"></ol>
</section>
<section id="decide" hidden aria-labelledby="decide-h">
<h2 id="decide-h">Decide</h2>
<form id="decision" class="stack">
<fieldset><legend>Decision</legend>
<div><input id="d-approve" type="radio" name="decision" value="approve"><label for="d-approve">Approve for publication</label></div>
<div><input id="d-request_changes" type="radio" name="decision" value="request_changes"><label for="d-request_changes">Request changes</label></div>
<div><input id="d-reject" type="radio" name="decision" value="reject"><label for="d-reject">Reject</label></div>
<div><input id="d-hide" type="radio" name="decision" value="hide"><label for="d-hide">Hide from the catalog</label></div>
<div><input id="d-unhide" type="radio" name="decision" value="unhide"><label for="d-unhide">Unhide</label></div>
</fieldset>
<div><label for="notes">Notes for the modder (kept with the decision)</label><textarea id="notes" name="notes" rows="5" maxlength="10000" required></textarea></div>
<div><button type="submit">Record decision</button></div>
</form>
</section>`,
  );
}
