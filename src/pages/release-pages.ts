import { html, type SafeHtml } from "./html.ts";
import { type PageContext, renderPage } from "./layout.ts";

/**
 * A modder's pages, driven by assets/releases.js over list_uploads, create_upload, upload_status and
 * cancel_upload: upload a release, the list of one's submissions, and one submission followed
 * from validation to publication. Static like the account pages: submissions are private.
 */
export interface ReleasePagesOptions {
  /** limits.maxPackageBytes: the page refuses a larger file before sending a byte. */
  maxPackageBytes: number;
  /** The validation guide (docs/validation.md in the portal repository); each check links to its section. */
  validationGuideUrl: string;
  /** The modder's guide (docs/modders.md): the package format, svc pack, svc new, svc validate. */
  moddersGuideUrl: string;
}

const NOSCRIPT = html`<noscript><p class="notice">Uploading and following a release need JavaScript: these pages talk to the portal's upload API with your session. You can also submit with <code>curl</code> or a pull request (see the README).</p></noscript>`;

const MESSAGE = html`<p id="message" class="message" role="status" aria-live="polite"></p>`;

/** Shown instead of the page's content until a session is found. */
function signedOut(root: string) {
  return html`<section id="signed-out" hidden>
<p>Sign in with a modder account to upload and follow your releases. <a href="${root}account/signin/">Sign in</a> or <a href="${root}account/signup/">create a free account</a>.</p>
</section>`;
}

function releasePage(
  ctx: PageContext,
  page: string,
  title: string,
  root: string,
  main: SafeHtml,
  data: SafeHtml = html``,
) {
  return renderPage(ctx, {
    title,
    root,
    section: "releases",
    scripts: ["releases.js"],
    main: html`<div data-page="${page}"${data}>
${main}
${NOSCRIPT}
</div>`,
  });
}

export function renderReleasesPage(ctx: PageContext): string {
  return releasePage(
    ctx,
    "releases",
    "Your releases",
    "../",
    html`<h1>Your releases</h1>
<p>Upload a release of your mod, then follow it here: every validation check with its log and how to fix it, your place in the review queue, the moderators' notes, and the published download.</p>
<p><a class="button" href="new/">Upload a release</a></p>
${MESSAGE}
${signedOut("../")}
<section id="mine" hidden aria-labelledby="mine-h">
<h2 id="mine-h">Submissions</h2>
<table id="mine-table" hidden>
<caption>Your submissions, newest first</caption>
<thead><tr><th scope="col">Mod</th><th scope="col">Version</th><th scope="col">State</th><th scope="col">Queue</th><th scope="col">Last change</th></tr></thead>
<tbody id="mine-rows"></tbody>
</table>
<p><button type="button" id="mine-more" class="secondary" hidden>Show more</button></p>
<p id="mine-empty" hidden>No submissions yet. <a href="new/">Upload your first release</a>.</p>
</section>`,
  );
}

export function renderUploadPage(ctx: PageContext, options: ReleasePagesOptions): string {
  const mib = Math.floor(options.maxPackageBytes / (1024 * 1024));
  return releasePage(
    ctx,
    "upload",
    "Upload a release",
    "../../",
    html`<nav class="crumbs" aria-label="Breadcrumb"><a href="../">Your releases</a> › <span aria-current="page">Upload</span></nav>
<h1>Upload a release</h1>
<p>The package is a ZIP with <code>svc-mod.json</code> at its root; <code>svc pack</code> builds one from your mod folder (see the <a href="${options.moddersGuideUrl}" rel="noopener noreferrer nofollow">modder's guide</a>). Uploading the same mod and version again replaces a submission that failed validation or needs changes with a new revision.</p>
${MESSAGE}
${signedOut("../../")}
<form id="upload" class="stack" hidden>
<div><label for="package">Package (ZIP, at most ${mib} MiB)</label><input id="package" name="package" type="file" accept=".zip,application/zip,application/x-zip-compressed" required aria-describedby="package-facts">
<p id="package-facts" class="note">Its size and SHA-256 are measured here, in your browser, and sent with the metadata.</p></div>
<fieldset><legend>Release metadata</legend>
<div><input id="source-form" type="radio" name="source" value="form" checked><label for="source-form">Fill in the form below (identity, entry points and dependencies come from the package's <code>svc-mod.json</code>)</label></div>
<div><input id="source-file" type="radio" name="source" value="file"><label for="source-file">Use a release JSON file (<code>svc.mod-release-submission.v1</code>, as <code>svc new</code> writes it)</label></div>
</fieldset>
<div id="metadata-file-field" hidden><label for="metadata-file">Release JSON file</label><input id="metadata-file" name="metadataFile" type="file" accept=".json,application/json" disabled></div>
<fieldset id="metadata-fields"><legend>Release details</legend>
<section id="manifest" aria-labelledby="manifest-h" hidden>
<h2 id="manifest-h">From svc-mod.json</h2>
<dl id="manifest-facts" class="facts"></dl>
</section>
<p id="carried" class="note" role="status" hidden></p>
<div><label for="summary">Summary (one line, shown in the catalog)</label><input id="summary" name="summary" type="text" required maxlength="280"></div>
<div><label for="description">Description (optional)</label><textarea id="description" name="description" rows="4" maxlength="20000"></textarea></div>
<div><label for="release-notes">Release notes for this version</label><textarea id="release-notes" name="releaseNotes" rows="4" maxlength="20000" required></textarea></div>
<div><label for="author-name">Author name</label><input id="author-name" name="authorName" type="text" required maxlength="80" autocomplete="name"></div>
<div><label for="author-github">Author's GitHub login (optional)</label><input id="author-github" name="authorGithub" type="text" maxlength="39" autocomplete="off"></div>
<div><label for="tags">Tags (optional, comma-separated, e.g. ui, maps)</label><input id="tags" name="tags" type="text" maxlength="600" autocomplete="off"></div>
<div><label for="license">License (optional, an SPDX identifier such as MIT; shown on the mod's page)</label><input id="license" name="license" type="text" maxlength="64" autocomplete="off"></div>
<div><label for="source-url">Source code URL (optional, https)</label><input id="source-url" name="sourceUrl" type="url" maxlength="2048" pattern="https://.+" autocomplete="url"></div>
</fieldset>
<div><button type="submit">Upload and validate</button></div>
</form>`,
    html` data-max-package-bytes="${options.maxPackageBytes}"`,
  );
}

export function renderSubmissionPage(ctx: PageContext, options: ReleasePagesOptions): string {
  return releasePage(
    ctx,
    "submission",
    "Your submission",
    "../../",
    html`<nav class="crumbs" aria-label="Breadcrumb"><a href="../">Your releases</a> › <span aria-current="page">Submission</span></nav>
<h1 id="title">Your submission</h1>
${MESSAGE}
${signedOut("../../")}
<section id="overview" hidden aria-labelledby="overview-h">
<h2 id="overview-h">Where it stands</h2>
<p id="standing" class="overall" role="status" aria-live="polite"></p>
<dl id="facts" class="facts"></dl>
<p id="polling" class="note" hidden>Validation is running: this page checks again every few seconds.</p>
<p><button type="button" id="refresh" class="secondary">Refresh</button></p>
</section>
<section id="published" hidden aria-labelledby="published-h">
<h2 id="published-h">Published</h2>
<ul id="published-links"></ul>
</section>
<section id="checks" hidden aria-labelledby="checks-h">
<h2 id="checks-h">Validation checks</h2>
<p id="checks-summary"></p>
<ol id="check-list" class="checks"></ol>
<details id="passed-checks" hidden><summary>Checks that passed</summary>
<ol id="passed-list" class="checks"></ol>
</details>
</section>
<section id="history" hidden aria-labelledby="history-h">
<h2 id="history-h">Moderators' decisions</h2>
<ol id="decision-list" class="decisions"></ol>
</section>
<section id="actions" hidden aria-labelledby="actions-h">
<h2 id="actions-h">What you can do</h2>
<p id="resubmit" hidden>Fix what the checks or the moderators asked for, rebuild the package and <a id="resubmit-link" href="../new/">upload a new revision</a> of the same version; validation starts again and the review history stays.</p>
<p id="cancel-box" hidden><button type="button" id="cancel" class="secondary">Cancel this submission</button></p>
</section>`,
    html` data-validation-guide="${options.validationGuideUrl}" data-base-url="${ctx.baseUrl}"`,
  );
}
