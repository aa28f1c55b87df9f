import { html, type SafeHtml } from "./html.ts";
import { type PageContext, renderPage } from "./layout.ts";

/**
 * Moderation pages, driven by assets/moderation.js (the queue, moderation_queue) and
 * assets/review.js (one submission: upload_status, moderation_package, moderation_decision and the
 * upload suspension). Static: the queue is private, so it is never in the build.
 */

const NOSCRIPT = html`<noscript><p class="notice">The moderation queue needs JavaScript: it reads the private queue from the portal API with your session.</p></noscript>`;

function moderationPage(
  ctx: PageContext,
  page: string,
  title: string,
  root: string,
  main: SafeHtml,
  script = "moderation.js",
) {
  return renderPage(ctx, {
    title,
    root,
    section: "moderation",
    scripts: [script],
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
<option value="rejected">Rejected</option>
<option value="changes_requested">Changes requested</option>
<option value="published">Published</option>
<option value="cancelled">Cancelled</option>
<option value="uploaded">Uploaded, not yet validated</option>
<option value="validating">Validating</option>
<option value="draft">Draft</option>
<option value="all">Every state</option>
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
<p id="package-download" hidden><a id="package-link" class="button secondary" download>Download the staged package</a> <span class="note">An attachment from private staging; the download is recorded in the audit log. Open it in a sandbox, never on your own game install.</span></p>
</section>
<section id="risks" hidden aria-labelledby="risks-h">
<h2 id="risks-h">What to look at</h2>
<ul id="risk-list" class="risks"></ul>
</section>
<section id="uploader" hidden aria-labelledby="uploader-h">
<h2 id="uploader-h">Uploader</h2>
<dl class="facts" id="uploader-facts"></dl>
<p id="uploader-suspension" class="suspended" hidden></p>
<details id="uploader-recent" hidden><summary>Their recent submissions</summary><ul id="uploader-recent-list"></ul></details>
<form id="suspend" class="stack" hidden>
<div><label for="suspend-reason">Suspend this account's uploads: reason (one line, kept in the audit log and shown to the uploader)</label><input id="suspend-reason" name="reason" type="text" maxlength="1000" required autocomplete="off"></div>
<div><button type="submit" class="danger">Suspend uploads</button></div>
</form>
<form id="lift" class="stack" hidden>
<div><label for="lift-reason">Lift the suspension: reason (one line)</label><input id="lift-reason" name="reason" type="text" maxlength="1000" required autocomplete="off"></div>
<div><button type="submit">Lift the suspension</button></div>
</form>
</section>
<section id="release" hidden aria-labelledby="release-h">
<h2 id="release-h">The release as it will be published</h2>
<p class="note">As the mod page will show it: plain text with its line breaks, never markup.</p>
<article class="version">
<h3 id="release-name"></h3>
<p class="summary" id="release-summary"></p>
<dl class="facts" id="release-facts"></dl>
<h4>Description</h4>
<div class="text" id="release-description"></div>
<h4>Release notes</h4>
<div class="text" id="release-notes"></div>
</article>
</section>
<section id="diff" hidden aria-labelledby="diff-h">
<h2 id="diff-h">Changes</h2>
<p id="diff-summary"></p>
<table id="diff-table" hidden>
<caption id="diff-caption">Changed files</caption>
<thead><tr><th scope="col">Change</th><th scope="col">File</th><th scope="col">Size</th><th scope="col">SHA-256</th></tr></thead>
<tbody id="diff-rows"></tbody>
</table>
<ul id="manifest-changes"></ul>
</section>
<section id="files" hidden aria-labelledby="files-h">
<h2 id="files-h">Files in the package</h2>
<p id="files-summary"></p>
<table id="file-table" hidden>
<caption>Every file the validation run read, in archive order</caption>
<thead><tr><th scope="col">File</th><th scope="col">Size</th><th scope="col">Detected type</th><th scope="col">SHA-256</th></tr></thead>
<tbody id="file-rows"></tbody>
</table>
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
<section id="earlier" hidden aria-labelledby="earlier-h">
<h2 id="earlier-h">Earlier submissions of this version</h2>
<ol id="earlier-list" class="decisions"></ol>
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
    "review.js",
  );
}
