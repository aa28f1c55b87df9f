// The admin pages: publish approved releases (moderation_queue, publish_catalog), accounts and
// roles (list_accounts, update_account_roles) and the audit log (audit_events). Every write
// carries the session's CSRF token; every text is set through textContent.
import { currentSession, describeError, el, formatDate, request, say } from "./api.js";

const container = document.querySelector("[data-page]");
const page = container?.getAttribute("data-page");
const siteRoot = new URL("../", import.meta.url);
const ROLES = ["player", "modder", "moderator", "admin"];

function fail(error) {
  say(describeError(error), { error: true });
}

/** The session of an admin, or null after saying what is missing. */
async function requireAdmin() {
  const session = await currentSession();
  if (!session) {
    document
      .getElementById("message")
      .replaceChildren(
        "You need to sign in with an admin account. ",
        el("a", "Sign in", { href: new URL("account/signin/", siteRoot).href }),
      );
    return null;
  }
  if (!(session.roles ?? []).includes("admin")) {
    say("This page needs the admin role, and your account does not have it.", { error: true });
    return null;
  }
  return session;
}

/** Links under the portal's own base URL become links into this site, whatever host and port serve it. */
function siteHref(url) {
  if (typeof url !== "string") return null;
  const base = (container?.getAttribute("data-base-url") || "").replace(/\/+$/, "");
  if (base && url.startsWith(`${base}/`)) return new URL(url.slice(base.length + 1), siteRoot).href;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "https:" || parsed.origin === location.origin ? parsed.href : null;
  } catch {
    return null;
  }
}

/**
 * Keyset paging behind a "Show more" button: a page is fetched once, only with the cursor the
 * previous answer gave, never while another is on its way; a fresh load drops late answers.
 */
function pager(button, fetchPage, showPage) {
  let cursor = null;
  let generation = 0;
  let loading = false;
  const load = async (append) => {
    if (append && (loading || !cursor)) return;
    const mine = append ? generation : ++generation;
    loading = true;
    button.disabled = true;
    try {
      const data = await fetchPage(append ? cursor : null);
      if (mine !== generation) return;
      cursor = data.nextCursor ?? null;
      showPage(data, append);
      button.hidden = !cursor;
    } finally {
      if (mine === generation) {
        loading = false;
        button.disabled = false;
      }
    }
  };
  button.addEventListener("click", () => load(true).catch(fail));
  return {
    reload: () => {
      cursor = null;
      button.hidden = true;
      return load(false);
    },
  };
}

// ---------------------------------------------------------------- publish

const OUTCOME_WORDS = {
  published: "Published",
  merged: "Merged: the publish workflow publishes it",
  failed: "Failed",
};

async function publishPage() {
  let session;
  try {
    session = await requireAdmin();
  } catch (error) {
    fail(error);
    return;
  }
  if (!session) return;
  const rows = document.getElementById("approved-rows");
  const button = document.getElementById("publish-button");
  const loadApproved = async () => {
    const data = await request("GET", "moderation/releases?state=approved&limit=100");
    const items = Array.isArray(data?.items) ? data.items : [];
    rows.replaceChildren();
    for (const item of items) {
      const row = el("tr");
      const mod = el("td");
      mod.append(
        el("a", item.modId, {
          href: new URL(`moderation/review/?id=${encodeURIComponent(item.submissionId)}`, siteRoot).href,
        }),
      );
      row.append(
        mod,
        el("td", item.version),
        el("td", formatDate(item.createdAt)),
        el("td", item.packageSha256, { class: "hash" }),
      );
      rows.append(row);
    }
    document.getElementById("approved-table").hidden = items.length === 0;
    document.getElementById("approved-empty").hidden = items.length > 0;
    document.getElementById("approved").hidden = false;
    button.disabled = items.length === 0;
    button.textContent =
      items.length === 0
        ? "Nothing to publish"
        : `Publish ${items.length}${data?.nextCursor ? "+" : ""} approved release${items.length === 1 ? "" : "s"}`;
    return items.length;
  };
  // Wired before loadApproved() shows the form: it is never on screen without its handler.
  document.getElementById("publish").addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    say("Publishing…");
    try {
      const result = await request("POST", "catalog/publish", { csrf: session.csrfToken });
      showResult(result);
      await loadApproved();
    } catch (error) {
      fail(error);
      button.disabled = false;
    }
  });
  try {
    const waiting = await loadApproved();
    say(`${waiting} approved release${waiting === 1 ? "" : "s"} waiting for publication.`);
  } catch (error) {
    fail(error);
  }
}

function showResult(result) {
  const results = Array.isArray(result?.results) ? result.results : [];
  const rows = document.getElementById("result-rows");
  rows.replaceChildren();
  for (const r of results) {
    const details = el("td");
    if (r.outcome === "published") {
      const href = siteHref(r.packageUrl);
      details.append(
        href ? el("a", r.packageUrl, { href }) : el("span", r.packageUrl ?? ""),
        el("br"),
        `SHA-256 ${r.sha256}, ${r.sizeBytes} bytes`,
      );
    } else if (r.outcome === "merged") {
      const href = siteHref(r.pullRequestUrl);
      details.append(href ? el("a", "pull request", { href }) : "", ` merge commit ${r.mergeCommit ?? "—"}`);
    } else {
      details.append(el("code", r.code ?? "failed"), `: ${r.message ?? ""}`);
    }
    const row = el("tr");
    row.dataset.outcome = r.outcome;
    row.append(
      el("td", r.modId),
      el("td", r.version),
      el("td", OUTCOME_WORDS[r.outcome] ?? r.outcome),
      details,
    );
    rows.append(row);
  }
  const published = Number(result?.published ?? 0);
  const failed = Number(result?.failed ?? 0);
  const merged = Number(result?.merged ?? 0);
  const summary = results.length
    ? `Published ${published}, ${merged ? `merged ${merged}, ` : ""}failed ${failed}.`
    : "There was nothing approved to publish.";
  document.getElementById("result-summary").textContent = summary;
  const section = document.getElementById("result");
  section.hidden = false;
  section.focus();
  say(summary, { error: failed > 0 });
}

// ---------------------------------------------------------------- roles

async function rolesPage() {
  let session;
  try {
    session = await requireAdmin();
  } catch (error) {
    fail(error);
    return;
  }
  if (!session) return;
  const table = document.getElementById("accounts");
  const rows = document.getElementById("account-rows");

  const setBoxes = (row, roles) => {
    for (const box of row.querySelectorAll('input[type="checkbox"]')) box.checked = roles.includes(box.value);
  };

  const addRow = (account) => {
    const name = account.displayName || account.email || account.id;
    const row = el("tr");
    row.dataset.accountId = account.id;
    const roleCell = el("td");
    const set = el("fieldset", null, { class: "inline" });
    set.append(el("legend", `Roles of ${name}`, { class: "visually-hidden" }));
    for (const role of ROLES) {
      const id = `role-${account.id}-${role}`;
      const box = el("input", null, { type: "checkbox", id, value: role });
      const choice = el("span", null, { class: "choice" });
      choice.append(box, el("label", role, { for: id }));
      set.append(choice, " ");
    }
    roleCell.append(set);
    let saved = Array.isArray(account.roles) ? account.roles : [];
    setBoxes(set, saved);
    const save = el("button", "Save", { type: "button", class: "secondary" });
    save.setAttribute("aria-label", `Save roles of ${name}`);
    save.addEventListener("click", async () => {
      const roles = [...row.querySelectorAll('input[type="checkbox"]:checked')].map((b) => b.value);
      if (roles.length === 0) {
        say(`Choose at least one role for ${name}.`, { error: true });
        return;
      }
      save.disabled = true;
      try {
        const result = await request("PUT", `accounts/${encodeURIComponent(account.id)}/roles`, {
          body: { roles },
          csrf: session.csrfToken,
        });
        saved = result?.account?.roles ?? roles;
        setBoxes(row, saved);
        say(`Saved: ${name} now has the roles ${saved.join(", ")}.`);
      } catch (error) {
        // Nothing changed on the server: the boxes go back to what it holds.
        setBoxes(row, saved);
        fail(error);
      } finally {
        save.disabled = false;
      }
    });
    const action = el("td");
    action.append(save);
    row.append(
      el("td", account.displayName),
      el("td", account.email ?? "—"),
      el("td", account.verifiedAt ? formatDate(account.verifiedAt) : "not verified"),
      roleCell,
      action,
    );
    rows.append(row);
  };

  const accounts = pager(
    document.getElementById("accounts-more"),
    (cursor) => request("GET", `accounts?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`),
    (data, append) => {
      if (!append) rows.replaceChildren();
      const seen = new Set([...rows.children].map((r) => r.dataset.accountId));
      for (const account of data?.accounts ?? []) if (!seen.has(account.id)) addRow(account);
      table.hidden = rows.children.length === 0;
      say(`${rows.children.length} account${rows.children.length === 1 ? "" : "s"} shown.`);
    },
  );
  await accounts.reload().catch(fail);
}

// ---------------------------------------------------------------- audit

const FILTERS = ["action", "actorAccountId", "targetType", "targetId", "since", "until", "limit"];

/** datetime-local works in the reader's time; the route takes ISO instants. */
function toLocalInput(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  return new Date(date.getTime() - date.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

function fromLocalInput(value) {
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? "" : date.toISOString();
}

async function auditPage() {
  let session;
  try {
    session = await requireAdmin();
  } catch (error) {
    fail(error);
    return;
  }
  if (!session) return;
  const form = document.getElementById("audit-filter");
  const table = document.getElementById("events");
  const rows = document.getElementById("event-rows");

  // Filters live in the address, so a filtered view can be linked (e.g. one submission's events).
  const fromAddress = new URLSearchParams(location.search);
  for (const name of FILTERS) {
    const value = fromAddress.get(name);
    const field = form.elements.namedItem(name);
    if (!value || !field) continue;
    field.value = name === "since" || name === "until" ? toLocalInput(value) : value;
  }
  const query = () => {
    const data = new FormData(form);
    const params = new URLSearchParams();
    for (const name of FILTERS) {
      let value = String(data.get(name) || "").trim();
      if (value && (name === "since" || name === "until")) value = fromLocalInput(value);
      if (value) params.set(name, value);
    }
    return params;
  };

  const filterLink = (name, value, text) =>
    el("a", text ?? value, { href: `?${new URLSearchParams({ [name]: value })}` });

  const addRow = (event) => {
    const row = el("tr");
    row.dataset.eventId = event.id;
    const actor = el("td");
    actor.append(event.actorAccountId ? filterLink("actorAccountId", event.actorAccountId) : "system");
    const target = el("td");
    target.append(`${event.targetType} `, filterLink("targetId", event.targetId));
    const metadata = Object.entries(event.metadata ?? {})
      .map(([key, value]) => `${key}: ${typeof value === "string" ? value : JSON.stringify(value)}`)
      .join("\n");
    const action = el("td", null, { class: "action" });
    action.append(filterLink("action", event.action));
    row.append(
      el(
        "td",
        String(event.createdAt ?? "")
          .slice(0, 19)
          .replace("T", " "),
        { class: "time" },
      ),
      action,
      actor,
      target,
      el("td", metadata, { class: "metadata" }),
    );
    rows.append(row);
  };

  const events = pager(
    document.getElementById("events-more"),
    (cursor) => {
      const params = query();
      if (cursor) params.set("cursor", cursor);
      return request("GET", `audit/events?${params}`);
    },
    (data, append) => {
      if (!append) rows.replaceChildren();
      const seen = new Set([...rows.children].map((r) => r.dataset.eventId));
      for (const event of data?.events ?? []) if (!seen.has(event.id)) addRow(event);
      table.hidden = rows.children.length === 0;
      const n = rows.children.length;
      say(
        n === 0
          ? "No events match."
          : `${n} event${n === 1 ? "" : "s"} shown${data?.nextCursor ? "; older ones are available" : ""}.`,
      );
    },
  );

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const params = query();
    history.replaceState(null, "", `${location.pathname}${params.size ? `?${params}` : ""}`);
    events.reload().catch(fail);
  });
  form.addEventListener("reset", () => {
    history.replaceState(null, "", location.pathname);
    // The form is cleared after this event; read it on the next turn.
    setTimeout(() => events.reload().catch(fail));
  });
  form.hidden = false;
  await events.reload().catch(fail);
}

const handlers = { publish: publishPage, roles: rolesPage, audit: auditPage };
handlers[page]?.();
