// One submission's review page, over upload_status (svc.upload-submission.v1 with release,
// packageFiles, releaseDiff, uploader and earlierSubmissions), moderation_package,
// moderation_decision and the upload suspension routes. All data is shown through textContent.
import { apiUrl, el, formatBytes, formatDate, request, STATE_WORDS, say } from "./api.js";
import { describeClaim, describePrincipal, fail, requireModerator } from "./moderation.js";

const page = document.querySelector("[data-page]")?.getAttribute("data-page");

/** Which decisions make sense from a state; the server has the final word. */
const DECISIONS_BY_STATE = {
  pending_review: ["approve", "request_changes", "reject"],
  published: ["hide"],
  superseded: ["hide"],
  hidden: ["unhide"],
};

/** States in which the package still lies in private staging (the download answers 404 after). */
const STAGED_STATES = [
  "uploaded",
  "validating",
  "validation_failed",
  "pending_review",
  "changes_requested",
  "approved",
  "rejected",
];

const SEVERITY_WORDS = { high: "Look closely: ", notice: "Notice: ", info: "" };

/**
 * A name as the archive has it, with control, invisible and direction-changing characters shown
 * as \u{...}: a failed package's names are untrusted, and "evil\u{202E}gnp.dll" must not read as
 * "evilldll.png".
 */
function visible(text) {
  return String(text).replace(
    /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/g,
    (c) => `\\u{${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}}`,
  );
}

/** https: links only, as the mod page allows them (the schema already keeps others out). */
function externalLink(url, text) {
  try {
    const parsed = new URL(url);
    if (parsed.protocol === "https:" && !parsed.username && !parsed.password)
      return el("a", text, { href: parsed.href, rel: "noopener noreferrer nofollow" });
  } catch {
    // not a URL: shown as text
  }
  return el("span", text);
}

function fact(list, term, value) {
  const dd = el("dd");
  if (value instanceof Node) dd.append(value);
  else dd.textContent = value === null || value === undefined || value === "" ? "—" : String(value);
  list.append(el("dt", term), dd);
}

function joined(nodes, separator = ", ") {
  const span = el("span");
  nodes.forEach((node, i) => {
    if (i > 0) span.append(separator);
    span.append(node);
  });
  return span;
}

function plural(count, one, many = `${one}s`) {
  return `${count} ${count === 1 ? one : many}`;
}

function signedBytes(delta) {
  if (delta === null || delta === undefined) return "";
  if (delta === 0) return "no change";
  return `${delta > 0 ? "+" : "−"}${formatBytes(Math.abs(delta))}`;
}

function shortHash(sha256) {
  const code = el("code", `${String(sha256).slice(0, 12)}…`, { class: "hash" });
  code.title = sha256;
  return code;
}

function fileName(path, native) {
  const cell = el("td");
  cell.append(el("code", visible(path)));
  if (native) cell.append(" ", el("span", "native", { class: "badge native" }));
  return cell;
}

function person(name, accountId) {
  return name ? `${name} (${accountId})` : accountId;
}

// ---------------------------------------------------------------- the submission

function renderFacts(s) {
  document.getElementById("title").textContent = `Review ${s.modId} ${s.version}`;
  const facts = document.getElementById("facts");
  facts.replaceChildren();
  fact(facts, "Submission", s.submissionId);
  fact(facts, "State", STATE_WORDS[s.state] ?? s.state);
  fact(facts, "Queue position", s.review?.queuePosition ?? "not in the queue");
  fact(facts, "Uploader", s.uploader ? person(s.uploader.displayName, s.ownerAccountId) : s.ownerAccountId);
  fact(facts, "Submitted", formatDate(s.createdAt));
  fact(facts, "Last change", formatDate(s.updatedAt));
  fact(facts, "Package", s.package ? `${s.package.fileName} (${formatBytes(s.package.sizeBytes)})` : null);
  fact(facts, "Package SHA-256", s.packageSha256);
  const claim = describeClaim(s.ownership, s.modId);
  if (claim) {
    fact(facts, "Claim", claim);
    const owners = Array.isArray(s.ownership.owners) ? s.ownership.owners : [];
    fact(
      facts,
      s.ownership.claim === "new_mod" ? "Owner once published" : "Owners",
      owners.map(describePrincipal).join(", "),
    );
  }
  if (s.publication?.pageUrl) fact(facts, "Published page", s.publication.pageUrl);
  const download = document.getElementById("package-download");
  download.hidden = !STAGED_STATES.includes(s.state) || Boolean(s.release?.packageUrl);
  document
    .getElementById("package-link")
    .setAttribute("href", apiUrl(`moderation/releases/${encodeURIComponent(s.submissionId)}/package`));
  document.getElementById("submission").hidden = false;
}

/** The release text as the mod page renders it: plain text, line breaks kept (class "text"). */
function renderRelease(s) {
  const r = s.release;
  document.getElementById("release").hidden = !r;
  if (!r) return;
  document.getElementById("release-name").textContent = `${r.name} ${s.version}`;
  document.getElementById("release-summary").textContent = r.summary;
  // The mod page shows the summary where the description is empty.
  document.getElementById("release-description").textContent =
    r.description.trim() === "" ? r.summary : r.description;
  document.getElementById("release-notes").textContent = r.releaseNotes;
  const facts = document.getElementById("release-facts");
  facts.replaceChildren();
  fact(facts, "Game build", r.targetGameBuild);
  fact(
    facts,
    r.authors.length === 1 ? "Author" : "Authors",
    joined(
      r.authors.map((a) => {
        const span = el("span");
        span.append(a.url ? externalLink(a.url, a.name) : a.name);
        if (a.github) span.append(" (", externalLink(`https://github.com/${a.github}`, `@${a.github}`), ")");
        return span;
      }),
    ),
  );
  fact(facts, "Tags", r.tags.join(", "));
  const links = [
    ["Homepage", r.links.homepage],
    ["Source code", r.links.source],
    ["Issue tracker", r.links.issues],
  ].filter(([, url]) => url);
  fact(
    facts,
    "Links",
    links.length
      ? joined(
          links.map(([label, url]) => externalLink(url, label)),
          " · ",
        )
      : null,
  );
  fact(facts, "License", r.license ?? "none declared (the catalog does not publish it)");
  fact(
    facts,
    "Dependencies",
    r.dependencies.map((d) => `${d.modId} ${d.versionRange}${d.optional ? " (optional)" : ""}`).join(", ") ||
      "None",
  );
  fact(facts, "Entry points", r.entrypoints.map((e) => `${visible(e.path)} (${e.kind})`).join(", "));
  fact(
    facts,
    "Config options",
    r.modConfig
      ? `${visible(r.modConfig.file)}: ${r.modConfig.settings.map((o) => o.key).join(", ")}`
      : "None",
  );
  if (r.packageUrl) fact(facts, "Package URL", externalLink(r.packageUrl, r.packageUrl));
}

// ---------------------------------------------------------------- the uploader

function renderUploader(s, session) {
  const u = s.uploader;
  const section = document.getElementById("uploader");
  section.hidden = !u;
  if (!u) return;
  const facts = document.getElementById("uploader-facts");
  facts.replaceChildren();
  const h = u.history;
  fact(facts, "Name", person(u.displayName, u.accountId));
  fact(
    facts,
    "Account age",
    u.accountAgeDays === null
      ? null
      : `${plural(u.accountAgeDays, "day")} (since ${formatDate(u.createdAt)})`,
  );
  fact(
    facts,
    "Other submissions",
    `${h.submissions}: ${h.published} published, ${h.rejected} rejected, ${h.validationFailed} failed validation, ${h.cancelled} cancelled`,
  );
  fact(
    facts,
    "Decisions against them",
    `rejected ${plural(h.timesRejected, "time")}, hidden ${plural(h.timesHidden, "time")} (${h.hiddenNow} hidden now), changes requested ${plural(h.changesRequested, "time")}`,
  );
  fact(facts, "Upload suspensions", h.suspensions === 0 ? "never" : plural(h.suspensions, "suspension"));
  const recent = document.getElementById("uploader-recent-list");
  recent.replaceChildren(
    ...h.recent.map((r) => {
      const item = el("li");
      item.append(
        el("a", `${r.modId} ${r.version}`, { href: `./?id=${encodeURIComponent(r.submissionId)}` }),
        ` — ${STATE_WORDS[r.state] ?? r.state}, ${formatDate(r.createdAt)}`,
      );
      return item;
    }),
  );
  document.getElementById("uploader-recent").hidden = h.recent.length === 0;
  const suspended = document.getElementById("uploader-suspension");
  suspended.hidden = !u.suspension;
  if (u.suspension)
    suspended.textContent = `Uploads suspended since ${formatDate(u.suspension.suspendedAt)} by ${person(u.suspension.suspendedByDisplayName, u.suspension.suspendedByAccountId)}: ${u.suspension.reason}`;
  const self = session.accountId === u.accountId;
  document.getElementById("suspend").hidden = Boolean(u.suspension) || self;
  document.getElementById("lift").hidden = !u.suspension || !session.roles?.includes("admin");
}

// ---------------------------------------------------------------- the diff and the files

/** Failed checks first (a malware finding is the first thing to read), then the diff's risks. */
function renderRisks(s) {
  const failed = (Array.isArray(s.validationChecks) ? s.validationChecks : [])
    .filter((c) => c.status === "failed")
    .map((c) => ({
      severity: "high",
      message: `check ${c.id} failed${c.reasonCode ? `: ${c.reasonCode}` : ""}`,
    }));
  const risks = [...failed, ...(Array.isArray(s.releaseDiff?.risks) ? s.releaseDiff.risks : [])];
  const list = document.getElementById("risk-list");
  list.replaceChildren(
    ...risks.map((risk) =>
      el("li", `${SEVERITY_WORDS[risk.severity] ?? ""}${visible(risk.message)}`, {
        class: `risk-${risk.severity}`,
      }),
    ),
  );
  document.getElementById("risks").hidden = risks.length === 0;
}

function diffRow(change, file, size) {
  const row = el("tr");
  row.append(el("td", change), fileName(file.path, file.native), el("td", size));
  const hash = el("td");
  hash.append(shortHash(file.sha256));
  row.append(hash);
  return row;
}

function manifestLines(m) {
  const lines = [];
  const ep = (e) => `${visible(e.path)} (${e.kind})`;
  const dep = (d) => `${d.modId} ${d.versionRange}${d.optional ? " (optional)" : ""}`;
  if (m.entrypoints.added.length) lines.push(`Entry points added: ${m.entrypoints.added.map(ep).join(", ")}`);
  if (m.entrypoints.removed.length)
    lines.push(`Entry points removed: ${m.entrypoints.removed.map(ep).join(", ")}`);
  if (m.dependencies.added.length)
    lines.push(`Dependencies added: ${m.dependencies.added.map(dep).join(", ")}`);
  if (m.dependencies.removed.length)
    lines.push(`Dependencies removed: ${m.dependencies.removed.map(dep).join(", ")}`);
  for (const c of m.dependencies.changed)
    lines.push(`Dependency ${c.modId}: ${dep(c.before)} → ${dep(c.after)}`);
  const o = m.configOptions;
  if (o.added.length) lines.push(`Config options added: ${o.added.join(", ")}`);
  if (o.changed.length) lines.push(`Config options changed: ${o.changed.join(", ")}`);
  if (o.removed.length) lines.push(`Config options removed: ${o.removed.join(", ")}`);
  if (m.configFile)
    lines.push(`Config file: ${m.configFile.before ?? "none"} → ${m.configFile.after ?? "none"}`);
  return lines;
}

function renderDiff(s) {
  const section = document.getElementById("diff");
  const diff = s.releaseDiff;
  section.hidden = diff === undefined;
  renderRisks(s);
  if (diff === undefined) return;
  const heading = document.getElementById("diff-h");
  const summary = document.getElementById("diff-summary");
  const rows = document.getElementById("diff-rows");
  const manifest = document.getElementById("manifest-changes");
  rows.replaceChildren();
  manifest.replaceChildren();
  document.getElementById("diff-table").hidden = true;
  if (diff === null) {
    heading.textContent = "Changes";
    summary.textContent =
      "The comparison with the published version appears once validation has read the whole package.";
    return;
  }
  const pkg = diff.size.packageBytes;
  const f = diff.files;
  if (diff.firstRelease) {
    heading.textContent = "First release";
    summary.textContent = `Nothing of this mod is published yet: every file is new (${plural(f.added.length, "file")}, package ${formatBytes(pkg.after)}).`;
  } else {
    heading.textContent = `Changes since ${diff.baseline.version}`;
    const counts = f
      ? `${f.added.length} added, ${f.changed.length} changed, ${f.removed.length} removed, ${f.unchangedCount} unchanged. `
      : `${diff.baseline.version} was published before per-file hashes were kept: only size and manifest are compared. `;
    summary.textContent = `${counts}Package ${formatBytes(pkg.before)} → ${formatBytes(pkg.after)} (${signedBytes(pkg.delta)}).`;
  }
  if (f) {
    const first = diff.firstRelease;
    for (const file of f.added)
      rows.append(diffRow(first ? "new" : "added", file, formatBytes(file.sizeBytes)));
    for (const file of f.changed)
      rows.append(
        diffRow("changed", file, `${formatBytes(file.before.sizeBytes)} → ${formatBytes(file.sizeBytes)}`),
      );
    for (const file of f.removed) rows.append(diffRow("removed", file, formatBytes(file.sizeBytes)));
    document.getElementById("diff-caption").textContent = first
      ? "Every file of this first release"
      : "Changed files";
    document.getElementById("diff-table").hidden = rows.childElementCount === 0;
  }
  // A first release's manifest is all new: the release facts above already list it.
  if (!diff.firstRelease)
    manifest.replaceChildren(...manifestLines(diff.manifest).map((line) => el("li", line)));
}

function renderFiles(s) {
  const files = s.packageFiles;
  const section = document.getElementById("files");
  section.hidden = files === undefined;
  if (files === undefined) return;
  const summary = document.getElementById("files-summary");
  const rows = document.getElementById("file-rows");
  rows.replaceChildren();
  if (files === null) {
    summary.textContent = s.release?.packageUrl
      ? "This package is named by URL and validated on its pull request: its file list is there."
      : "The file list appears once validation has read the package.";
    document.getElementById("file-table").hidden = true;
    return;
  }
  const natives = files.files.filter((f) => f.native).length;
  summary.textContent = `${plural(files.files.length, "file")}, ${formatBytes(files.totalBytes)} installed${natives ? `, ${plural(natives, "native binary", "native binaries")}` : ""}.${files.complete ? "" : " Only part of the package could be read: the list stops where validation failed."}`;
  for (const file of files.files) {
    const row = el("tr");
    const hash = el("td");
    hash.append(shortHash(file.sha256));
    row.append(
      fileName(file.path, file.native),
      el("td", formatBytes(file.sizeBytes)),
      el("td", file.signature),
      hash,
    );
    rows.append(row);
  }
  document.getElementById("file-table").hidden = files.files.length === 0;
}

// ---------------------------------------------------------------- checks and decisions

function renderChecks(s) {
  const checks = Array.isArray(s.validationChecks) ? s.validationChecks : [];
  const failed = checks.filter((c) => c.status === "failed").length;
  const passed = checks.filter((c) => c.status === "passed").length;
  document.getElementById("checks-summary").textContent = checks.length
    ? `${passed} passed, ${failed} failed, ${checks.length - passed - failed} other, of ${checks.length} checks.`
    : "No validation results yet.";
  const list = document.getElementById("check-list");
  list.replaceChildren();
  // Failed checks first: that is what a moderator reads.
  const ordered = [...checks].sort(
    (a, b) => (a.status === "failed" ? 0 : 1) - (b.status === "failed" ? 0 : 1),
  );
  for (const check of ordered) {
    const item = el("li");
    const heading = el("h3");
    heading.append(el("code", check.id), ` — ${check.status}${check.required ? "" : " (optional)"}`);
    item.append(heading);
    if (check.reasonCode) item.append(el("p", `Reason: ${check.reasonCode}`));
    if (Array.isArray(check.log) && check.log.length > 0) {
      const details = el("details");
      if (check.status === "failed") details.open = true;
      details.append(
        el("summary", `Log (${check.log.length} line${check.log.length === 1 ? "" : "s"})`),
        el("pre", check.log.join("\n"), { class: "log" }),
      );
      item.append(details);
    }
    list.append(item);
  }
  document.getElementById("checks").hidden = false;
}

function decisionItem(d) {
  const item = el("li");
  item.append(
    el("strong", d.decision),
    ` by ${d.reviewerDisplayName ?? d.reviewerAccountId} on ${formatDate(d.decidedAt)} (${d.fromState} → ${d.toState})`,
  );
  if (d.notes) item.append(el("p", d.notes, { class: "text" }));
  return item;
}

function renderDecisions(s) {
  const decisions = Array.isArray(s.review?.decisions) ? s.review.decisions : [];
  document.getElementById("decision-list").replaceChildren(...decisions.map(decisionItem));
  document.getElementById("history").hidden = decisions.length === 0;
  const earlier = Array.isArray(s.earlierSubmissions) ? s.earlierSubmissions : [];
  document.getElementById("earlier-list").replaceChildren(
    ...earlier.map((e) => {
      const item = el("li");
      item.append(
        el("a", e.submissionId, { href: `./?id=${encodeURIComponent(e.submissionId)}` }),
        ` by ${person(e.ownerDisplayName, e.ownerAccountId)}: ${STATE_WORDS[e.state] ?? e.state}, revision ${e.revision}, submitted ${formatDate(e.createdAt)}`,
      );
      if (e.decisions.length) {
        const list = el("ol", null, { class: "decisions" });
        list.append(...e.decisions.map(decisionItem));
        item.append(list);
      }
      return item;
    }),
  );
  document.getElementById("earlier").hidden = earlier.length === 0;
  const allowed = DECISIONS_BY_STATE[s.state] ?? [];
  for (const input of document.querySelectorAll('input[name="decision"]')) {
    const ok = allowed.includes(input.value);
    input.parentElement.hidden = !ok;
    input.disabled = !ok;
    input.checked = false;
  }
  document.getElementById("decide").hidden = allowed.length === 0;
}

function renderSubmission(s, session) {
  renderFacts(s);
  renderUploader(s, session);
  renderRelease(s);
  renderDiff(s);
  renderFiles(s);
  renderChecks(s);
  renderDecisions(s);
}

// ---------------------------------------------------------------- the page

/** A form that posts once at a time and says what came of it. */
function onSubmit(form, act) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      await act(new FormData(form));
      form.reset();
    } catch (error) {
      fail(error);
    } finally {
      button.disabled = false;
    }
  });
}

async function reviewPage() {
  const id = new URLSearchParams(location.search).get("id") || "";
  if (!/^sub_[0-9a-z]{16,40}$/.test(id)) {
    say("Open a submission from the moderation queue.", { error: true });
    return;
  }
  let session;
  try {
    session = await requireModerator();
  } catch (error) {
    fail(error);
    return;
  }
  if (!session) return;
  let current = null;
  const show = (s) => {
    current = s;
    renderSubmission(s, session);
  };
  const load = async () => show(await request("GET", `uploads/${encodeURIComponent(id)}`));
  // The forms are wired before load() shows them: none is ever on screen without its handler.
  onSubmit(document.getElementById("decision"), async (data) => {
    const decision = data.get("decision");
    if (!decision) throw new Error("Choose a decision first.");
    const result = await request("POST", `moderation/releases/${encodeURIComponent(id)}/decision`, {
      body: { decision, notes: String(data.get("notes") || "") },
      csrf: session.csrfToken,
    });
    show(result);
    say(`Recorded: ${decision}. The release is now ${STATE_WORDS[result?.state] ?? result?.state}.`);
  });
  const suspension = () => `accounts/${encodeURIComponent(current.uploader.accountId)}/upload-suspension`;
  onSubmit(document.getElementById("suspend"), async (data) => {
    await request("POST", suspension(), {
      body: { reason: String(data.get("reason") || ""), submissionId: id },
      csrf: session.csrfToken,
    });
    const name = current.uploader.displayName ?? current.uploader.accountId;
    await load();
    say(`Uploads from ${name} are suspended until an admin lifts it.`);
  });
  onSubmit(document.getElementById("lift"), async (data) => {
    await request("DELETE", suspension(), {
      body: { reason: String(data.get("reason") || "") },
      csrf: session.csrfToken,
    });
    const name = current.uploader.displayName ?? current.uploader.accountId;
    await load();
    say(`${name} may upload again.`);
  });
  try {
    await load();
  } catch (error) {
    fail(error);
  }
}

if (page === "review") reviewPage();
