import { html, type SafeHtml } from "./html.ts";
import { type PageContext, renderPage } from "./layout.ts";

/**
 * The admin's pages, driven by assets/admin.js: publish approved releases (moderation_queue,
 * publish_catalog), accounts and roles (list_accounts, update_account_roles) and the audit log
 * (audit_events). Every write carries x-svc-csrf; the routes check the admin role themselves.
 */

const NOSCRIPT = html`<noscript><p class="notice">The admin pages need JavaScript: they call the portal's admin API with your session.</p></noscript>`;

const MESSAGE = html`<p id="message" class="message" role="status" aria-live="polite"></p>`;

const SECTIONS = [
  { page: "publish", label: "Publish", path: "" },
  { page: "roles", label: "Accounts and roles", path: "roles/" },
  { page: "audit", label: "Audit log", path: "audit/" },
] as const;

function adminPage(
  ctx: PageContext,
  page: (typeof SECTIONS)[number]["page"],
  title: string,
  root: string,
  main: SafeHtml,
) {
  const adminRoot = `${root}admin/`;
  const tabs = SECTIONS.map(
    (s) =>
      html`<li><a href="${adminRoot}${s.path}"${s.page === page ? html` aria-current="page"` : ""}>${s.label}</a></li>`,
  );
  return renderPage(ctx, {
    title,
    root,
    section: "admin",
    scripts: ["admin.js"],
    main: html`<div data-page="${page}" data-base-url="${ctx.baseUrl}">
<nav class="tabs" aria-label="Admin"><ul>${tabs}</ul></nav>
${main}
${NOSCRIPT}
</div>`,
  });
}

export function renderAdminPublishPage(ctx: PageContext): string {
  return adminPage(
    ctx,
    "publish",
    "Publish approved releases",
    "../",
    html`<h1>Publish approved releases</h1>
<p>Publishing promotes the exact approved bytes to immutable downloads and regenerates the catalog, detail and versions documents in one step. Releases that fail stay approved and say why.</p>
${MESSAGE}
<section id="approved" hidden aria-labelledby="approved-h">
<h2 id="approved-h">Approved, not yet published</h2>
<table id="approved-table" hidden>
<caption>Approved releases, oldest first</caption>
<thead><tr><th scope="col">Mod</th><th scope="col">Version</th><th scope="col">Submitted</th><th scope="col">Package SHA-256</th></tr></thead>
<tbody id="approved-rows"></tbody>
</table>
<p id="approved-empty" hidden>No approved release is waiting. Moderators approve releases in the <a href="../moderation/">moderation queue</a>.</p>
<form id="publish"><button type="submit" id="publish-button">Publish approved releases</button></form>
</section>
<section id="result" hidden tabindex="-1" aria-labelledby="result-h">
<h2 id="result-h">Result</h2>
<p id="result-summary"></p>
<table>
<caption>What happened to each approved release</caption>
<thead><tr><th scope="col">Mod</th><th scope="col">Version</th><th scope="col">Outcome</th><th scope="col">Details</th></tr></thead>
<tbody id="result-rows"></tbody>
</table>
</section>`,
  );
}

export function renderAdminRolesPage(ctx: PageContext): string {
  return adminPage(
    ctx,
    "roles",
    "Accounts and roles",
    "../../",
    html`<h1>Accounts and roles</h1>
<p>Tick the roles of an account and save. Moderator and admin take effect only on a verified account, and the portal always keeps one verified admin. Every change is in the <a href="../audit/?action=account.roles_updated">audit log</a>.</p>
${MESSAGE}
<table id="accounts" hidden>
<caption>Accounts and their roles</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Verified</th><th scope="col">Roles</th><th scope="col"><span class="visually-hidden">Action</span></th></tr></thead>
<tbody id="account-rows"></tbody>
</table>
<p><button type="button" id="accounts-more" class="secondary" hidden>Show more accounts</button></p>`,
  );
}

export function renderAdminAuditPage(ctx: PageContext): string {
  return adminPage(
    ctx,
    "audit",
    "Audit log",
    "../../",
    html`<h1>Audit log</h1>
<p>Every account, sign-in, API-key, upload, validation, moderation and publication action, newest first. Events are never changed or deleted. Filters match exactly.</p>
<form id="audit-filter" class="filters" hidden>
<div><label for="f-action">Action</label><input id="f-action" name="action" type="text" list="known-actions" maxlength="200" autocomplete="off" spellcheck="false"></div>
<datalist id="known-actions">
<option value="account.created"></option><option value="account.email_verified"></option><option value="account.roles_updated"></option>
<option value="session.created"></option><option value="session.ended"></option><option value="magic_link.requested"></option>
<option value="api_key.created"></option><option value="api_key.revoked"></option>
<option value="upload.created"></option><option value="upload.resubmitted"></option><option value="upload.cancelled"></option>
<option value="validation.started"></option><option value="validation.completed"></option>
<option value="moderation.decided"></option><option value="catalog.published"></option><option value="catalog.publish_failed"></option>
<option value="submission.package_downloaded"></option><option value="account.uploads_suspended"></option><option value="account.uploads_reinstated"></option>
</datalist>
<div><label for="f-actor">Actor account id</label><input id="f-actor" name="actorAccountId" type="text" maxlength="200" autocomplete="off" spellcheck="false"></div>
<div><label for="f-target-type">Target type</label><select id="f-target-type" name="targetType">
<option value="">Any</option><option value="account">account</option><option value="api_key">api_key</option><option value="submission">submission</option><option value="email">email (unmatched sign-in)</option>
</select></div>
<div><label for="f-target">Target id</label><input id="f-target" name="targetId" type="text" maxlength="200" autocomplete="off" spellcheck="false"></div>
<div><label for="f-since">From (your time)</label><input id="f-since" name="since" type="datetime-local"></div>
<div><label for="f-until">Before (your time)</label><input id="f-until" name="until" type="datetime-local"></div>
<div><label for="f-limit">Per page</label><select id="f-limit" name="limit"><option>20</option><option selected>50</option><option>200</option></select></div>
<div><button type="submit">Show events</button> <button type="reset" id="f-clear">Clear</button></div>
</form>
${MESSAGE}
<table id="events" hidden>
<caption>Audit events, newest first</caption>
<thead><tr><th scope="col">Time (UTC)</th><th scope="col">Action</th><th scope="col">Actor</th><th scope="col">Target</th><th scope="col">Details</th></tr></thead>
<tbody id="event-rows"></tbody>
</table>
<p><button type="button" id="events-more" class="secondary" hidden>Show older events</button></p>`,
  );
}
