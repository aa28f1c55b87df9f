// A modder's pages over list_uploads, create_upload, upload_status and cancel_upload: upload a release, the
// list of one's submissions, one submission followed from validation to publication. Every write
// carries the session's CSRF token; every text is set through textContent.
import {
  currentSession,
  describeError,
  el,
  formatBytes,
  formatDate,
  formatDuration,
  request,
  STATE_WORDS,
  say,
} from "./api.js";
import { readManifest, sha256Hex } from "./package.js";

const container = document.querySelector("[data-page]");
const page = container?.getAttribute("data-page");
const siteRoot = new URL("../", import.meta.url);
const SUBMISSION_ID = /^sub_[0-9a-z]{16,40}$/;
/** Validation is still running in these: the submission page checks again on its own. */
const IN_FLIGHT = ["draft", "uploaded", "validating"];
/** The state machine's moves for a modder (workflow.json); the server has the final word. */
const CANCELLABLE = ["draft", "uploaded", "validation_failed", "changes_requested"];
const RESUBMITTABLE = ["validation_failed", "changes_requested", "pending_review", "approved"];
const POLL_MS = 2000;
const NOTICE_KEY = "svc.upload-notice";

function fail(error) {
  say(describeError(error), { error: true });
}

function busy(form, on) {
  for (const control of form.querySelectorAll("button, input, textarea, select")) {
    if (on) {
      control.dataset.wasDisabled = control.disabled ? "1" : "";
      control.disabled = true;
    } else if (control.dataset.wasDisabled !== undefined) {
      control.disabled = control.dataset.wasDisabled === "1";
      delete control.dataset.wasDisabled;
    }
  }
}

/** The session, or null after showing the sign-in prompt. */
async function signedIn() {
  const session = await currentSession();
  if (!session) document.getElementById("signed-out").hidden = false;
  return session;
}

// The list comes from list_uploads. The browser keeps only what the modder typed into the upload
// form (per account and submission, no secret), so a new revision's form starts filled in.
const REMEMBERED_MAX = 50;
const memoryKey = (session) => `svc.submissions.${session.accountId}`;

function remembered(session) {
  try {
    const list = JSON.parse(localStorage.getItem(memoryKey(session)) || "[]");
    return Array.isArray(list) ? list.filter((e) => SUBMISSION_ID.test(e?.id ?? "") && e.details) : [];
  } catch {
    return [];
  }
}

function remember(session, id, details) {
  const previous = remembered(session).find((e) => e.id === id);
  const list = remembered(session).filter((e) => e.id !== id);
  const kept = details ?? previous?.details;
  if (kept) list.unshift({ id, details: kept });
  try {
    localStorage.setItem(memoryKey(session), JSON.stringify(list.slice(0, REMEMBERED_MAX)));
  } catch {
    // Storage full or disabled: a new revision's form then starts empty.
  }
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

function linkOrText(url, text) {
  const href = siteHref(url);
  return href ? el("a", text, { href }) : el("span", text);
}

// ---------------------------------------------------------------- the list

async function releasesPage() {
  let session;
  try {
    session = await signedIn();
  } catch (error) {
    fail(error);
    return;
  }
  if (!session) return;
  const roles = Array.isArray(session.roles) ? session.roles : [];
  if (!["modder", "moderator", "admin"].some((role) => roles.includes(role))) {
    say(
      "Releases are a modder's: sign up as a modder, or ask an admin to add the modder role to your account.",
      { error: true },
    );
    return;
  }
  document.getElementById("mine").hidden = false;

  const rows = document.getElementById("mine-rows");
  const more = document.getElementById("mine-more");
  let cursor = null;
  let shown = 0;
  const addRow = (item) => {
    const row = el("tr");
    const mod = el("td");
    mod.append(el("a", item.modId, { href: `submission/?id=${encodeURIComponent(item.submissionId)}` }));
    row.append(
      mod,
      el("td", item.version),
      el("td", STATE_WORDS[item.state] ?? item.state),
      el("td", typeof item.queuePosition === "number" ? `position ${item.queuePosition}` : "—"),
      el("td", formatDate(item.updatedAt)),
    );
    rows.append(row);
  };
  // Newest first, one page at a time; "Show more" continues from the last page's cursor and is
  // disabled while a page is on its way, so a double click never appends a page twice.
  const loadPage = async () => {
    more.disabled = true;
    try {
      const query = cursor ? `?cursor=${encodeURIComponent(cursor)}` : "";
      const data = await request("GET", `uploads${query}`);
      for (const item of data.items) addRow(item);
      shown += data.items.length;
      cursor = data.nextCursor ?? null;
      document.getElementById("mine-table").hidden = shown === 0;
      document.getElementById("mine-empty").hidden = shown > 0;
      more.hidden = !cursor;
      say(`${shown} submission${shown === 1 ? "" : "s"}${cursor ? " shown; more are available" : ""}.`);
    } catch (error) {
      fail(error);
    } finally {
      more.disabled = false;
    }
  };
  more.addEventListener("click", () => loadPage());
  await loadPage();
}

// ---------------------------------------------------------------- upload

function describeManifest(manifest) {
  const list = document.getElementById("manifest-facts");
  list.replaceChildren();
  const add = (term, value) => list.append(el("dt", term), el("dd", value));
  add("Mod id", manifest.id);
  add("Name", manifest.name);
  add("Version", manifest.version);
  add("Game build", manifest.targetGameBuild);
  const entrypoints = Array.isArray(manifest.entrypoints) ? manifest.entrypoints : [];
  add("Entry points", entrypoints.map((e) => `${e.kind}: ${e.path}`).join(", ") || "none");
  const dependencies = Array.isArray(manifest.dependencies) ? manifest.dependencies : [];
  add("Dependencies", dependencies.map((d) => `${d.modId} ${d.versionRange}`).join(", ") || "none");
  document.getElementById("manifest").hidden = false;
}

// A new version starts from the last published one: its public detail document fills the fields
// left empty, and what the form has no field for (more authors, homepage and issue links) is kept.
const MOD_ID = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;

/**
 * The mod's public detail document (its last published version); null for a mod not published yet.
 * The mods index (which the catalog page has cached already) says whether there is one, so a new
 * mod costs no 404.
 */
async function lastPublished(modId) {
  if (typeof modId !== "string" || !MOD_ID.test(modId)) return null;
  const get = async (path) => {
    const response = await fetch(new URL(path, siteRoot), { headers: { accept: "application/json" } });
    return response.ok ? response.json() : null;
  };
  try {
    const index = await get("api/v1/mods/index.json");
    if (!Array.isArray(index?.mods) || !index.mods.some((m) => m?.id === modId)) return null;
    const doc = await get(`api/v1/mods/${modId}/index.json`);
    return doc?.schema === "svc.mod-detail.v1" ? doc : null;
  } catch {
    return null;
  }
}

/** Fills each empty field the last published version has a value for; returns how many. */
function fillFromPublished(form, doc) {
  const first = Array.isArray(doc.authors) ? doc.authors[0] : undefined;
  const values = {
    summary: doc.summary,
    description: doc.description,
    tags: Array.isArray(doc.tags) ? doc.tags.join(", ") : "",
    license: doc.license ?? "",
    sourceUrl: doc.links?.source ?? "",
    authorName: first?.name ?? "",
    authorGithub: first?.github ?? "",
  };
  let filled = 0;
  for (const [name, value] of Object.entries(values)) {
    const field = form.elements.namedItem(name);
    if (!field || typeof value !== "string" || value === "" || field.value.trim() !== "") continue;
    field.value = value;
    filled++;
  }
  return filled;
}

/**
 * The sidecar (svc.mod-release-submission.v1) from the form and the package's own svc-mod.json;
 * `published` (the last published version's detail document) supplies what the form cannot show.
 */
function metadataFromForm(data, manifest, published = null) {
  const text = (name) => String(data.get(name) || "").trim();
  const sidecar = {
    schema: "svc.mod-release-submission.v1",
    modId: manifest.id,
    name: manifest.name,
    version: manifest.version,
    targetGameBuild: manifest.targetGameBuild,
    summary: text("summary"),
    releaseNotes: String(data.get("releaseNotes") || "").trim(),
    dependencies: Array.isArray(manifest.dependencies) ? manifest.dependencies : [],
    entrypoints: Array.isArray(manifest.entrypoints) ? manifest.entrypoints : [],
    authors: [
      { name: text("authorName"), ...(text("authorGithub") ? { github: text("authorGithub") } : {}) },
    ],
  };
  const description = String(data.get("description") || "").trim();
  // Against a published version an emptied field is sent empty (it clears); left out, the portal
  // would carry the old value forward.
  if (description || published) sidecar.description = description;
  if (manifest.modConfig) sidecar.modConfig = manifest.modConfig;
  const tags = text("tags")
    .split(",")
    .map((t) => t.trim())
    .filter(Boolean);
  if (tags.length > 0 || published) sidecar.tags = [...new Set(tags)];
  if (text("license")) sidecar.license = text("license");
  const links = { ...(published?.links ?? {}) };
  delete links.source;
  if (text("sourceUrl")) links.source = text("sourceUrl");
  if (Object.keys(links).length > 0 || published) sidecar.links = links;
  if (published && Array.isArray(published.authors)) {
    const [first, ...others] = published.authors;
    const author = sidecar.authors[0];
    // The same first author keeps their link; the co-authors the form cannot show are kept.
    if (first?.url && first.name === author.name) author.url = first.url;
    sidecar.authors = [author, ...others.filter((a) => a?.name !== author.name)];
  }
  return sidecar;
}

/** The fields a person typed, kept to fill the form again for the next revision. */
function typedDetails(data) {
  const keep = {};
  for (const name of [
    "summary",
    "description",
    "releaseNotes",
    "authorName",
    "authorGithub",
    "tags",
    "license",
    "sourceUrl",
  ]) {
    keep[name] = String(data.get(name) || "");
  }
  return keep;
}

function fillDetails(form, details, { onlyEmpty = false } = {}) {
  if (!details || typeof details !== "object") return;
  for (const [name, value] of Object.entries(details)) {
    const field = form.elements.namedItem(name);
    if (!field || typeof value !== "string" || !("value" in field)) continue;
    if (!onlyEmpty || field.value.trim() === "") field.value = value;
  }
}

/** The form's fields from a submission's release (the upload status response), as typedDetails keeps them. */
function detailsOfRelease(release) {
  if (!release || typeof release !== "object") return null;
  const first = Array.isArray(release.authors) ? release.authors[0] : undefined;
  return {
    summary: release.summary ?? "",
    description: release.description ?? "",
    releaseNotes: release.releaseNotes ?? "",
    authorName: first?.name ?? "",
    authorGithub: first?.github ?? "",
    tags: Array.isArray(release.tags) ? release.tags.join(", ") : "",
    license: release.license ?? "",
    sourceUrl: release.links?.source ?? "",
  };
}

async function uploadPage() {
  let session;
  try {
    session = await signedIn();
  } catch (error) {
    fail(error);
    return;
  }
  if (!session) return;
  const roles = Array.isArray(session.roles) ? session.roles : [];
  if (!roles.includes("modder") && !roles.includes("admin")) {
    say(
      "Uploading needs a modder account. Sign up as a modder, or ask an admin to add the modder role to your account.",
      { error: true },
    );
    return;
  }
  const form = document.getElementById("upload");
  const packageInput = document.getElementById("package");
  const facts = document.getElementById("package-facts");
  const fields = document.getElementById("metadata-fields");
  const fileField = document.getElementById("metadata-file-field");
  const metadataInput = document.getElementById("metadata-file");
  const maxBytes = Number(container.getAttribute("data-max-package-bytes"));
  const carriedNote = document.getElementById("carried");
  let manifest = null;
  let measured = null;
  let published = null;

  // A new revision: the page was opened from a submission; fill what this browser remembers.
  const revisionOf = new URLSearchParams(location.search).get("id") || "";
  if (SUBMISSION_ID.test(revisionOf)) {
    fillDetails(form, remembered(session).find((e) => e.id === revisionOf)?.details);
    try {
      const view = await request("GET", `uploads/${encodeURIComponent(revisionOf)}`);
      // Whatever this browser does not remember comes from what the portal holds for the submission.
      fillDetails(form, detailsOfRelease(view.release), { onlyEmpty: true });
      say(
        `New revision of ${view.modId} ${view.version}: choose the fixed package (same mod id and version) and upload it.`,
      );
    } catch (error) {
      fail(error);
    }
  }

  const useFile = () => form.elements.namedItem("source").value === "file";
  const showSource = () => {
    fields.disabled = useFile();
    fields.hidden = useFile();
    fileField.hidden = !useFile();
    metadataInput.disabled = !useFile();
    metadataInput.required = useFile();
  };
  for (const radio of form.querySelectorAll('input[name="source"]'))
    radio.addEventListener("change", showSource);
  showSource();

  packageInput.addEventListener("change", async () => {
    manifest = null;
    measured = null;
    published = null;
    carriedNote.hidden = true;
    document.getElementById("manifest").hidden = true;
    const file = packageInput.files?.[0];
    if (!file) return;
    if (file.size > maxBytes) {
      facts.textContent = `${file.name}: ${formatBytes(file.size)}, more than this portal takes (${formatBytes(maxBytes)}).`;
      return;
    }
    facts.textContent = `${file.name}: ${formatBytes(file.size)}; measuring…`;
    const hashing = sha256Hex(file);
    measured = { file, hashing };
    hashing.catch(() => {});
    manifest = await readManifest(file);
    if (manifest && typeof manifest === "object") {
      describeManifest(manifest);
      const found = await lastPublished(manifest.id);
      if (found && measured?.file === file) {
        published = found;
        const filled = fillFromPublished(form, found);
        carriedNote.textContent = `${found.name} ${found.latestVersion} is published: ${filled > 0 ? "the empty fields start from it" : "the fields keep what you typed"}, and its other authors and links are kept. Change only what changes in this version; what you empty is cleared.`;
        carriedNote.hidden = false;
      }
    }
    try {
      const sha256 = await hashing;
      if (measured?.file === file)
        facts.textContent = `${file.name}: ${formatBytes(file.size)}, SHA-256 ${sha256}.`;
    } catch (error) {
      facts.textContent = String(error.message);
    }
  });

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const file = packageInput.files?.[0];
    if (!file) {
      say("Choose the package ZIP first.", { error: true });
      return;
    }
    if (file.size > maxBytes) {
      say(`The package is ${formatBytes(file.size)}; this portal takes at most ${formatBytes(maxBytes)}.`, {
        error: true,
      });
      return;
    }
    // Read before busy(): disabled controls drop out of FormData.
    const data = new FormData(form);
    const fromFile = useFile();
    busy(form, true);
    try {
      say("Measuring the package…");
      const sha256 = await (measured?.file === file ? measured.hashing : sha256Hex(file));
      let sidecar;
      let note = "";
      if (fromFile) {
        const jsonFile = metadataInput.files?.[0];
        if (!jsonFile) throw new Error("Choose the release JSON file, or fill in the form instead.");
        try {
          sidecar = JSON.parse(await jsonFile.text());
        } catch (error) {
          throw new Error(`${jsonFile.name} is not valid JSON: ${error.message}`);
        }
        if (!sidecar || typeof sidecar !== "object" || Array.isArray(sidecar))
          throw new Error(`${jsonFile.name} must hold one JSON object (svc.mod-release-submission.v1).`);
        const stated = sidecar.package && typeof sidecar.package === "object" ? sidecar.package : {};
        if (stated.sha256 && stated.sha256 !== sha256)
          note = ` The JSON file named another SHA-256 (${stated.sha256}); the chosen package's was sent.`;
      } else {
        const found = manifest ?? (await readManifest(file));
        if (!found || typeof found !== "object")
          throw new Error(
            "The package has no readable svc-mod.json at its root, so the form cannot be filled from it. Add svc-mod.json (svc pack checks it), or use a release JSON file.",
          );
        sidecar = metadataFromForm(data, found, published?.id === found.id ? published : null);
      }
      const stated = sidecar.package && typeof sidecar.package === "object" ? sidecar.package : {};
      // The portal names what it stores {modId}-{version}.zip (docs/modders.md); the name on this
      // disk ("lantern-1.0.0-rev2.zip") never becomes the public one. A URL-held package keeps its own.
      const fileName = stated.url ? stated.fileName : `${sidecar.modId}-${sidecar.version}.zip`;
      sidecar.package = { ...stated, fileName, sha256, sizeBytes: file.size };
      const body = new FormData();
      body.append(
        "metadata",
        new Blob([JSON.stringify(sidecar)], { type: "application/json" }),
        "release.json",
      );
      body.append("package", new File([file], fileName, { type: "application/zip" }));
      say(`Uploading ${fileName} (${formatBytes(file.size)})…`);
      const view = await request("POST", "uploads", { body, csrf: session.csrfToken });
      remember(session, view.submissionId, fromFile ? null : typedDetails(data));
      // Shown again on the submission page, beside its live state: it says nothing that can go stale.
      const done = `Uploaded ${view.modId} ${view.version} as ${view.package?.fileName ?? fileName}.${note}`;
      say(`${done} Opening the submission…`);
      // The next page says it again: what the upload changed must not vanish with this page.
      try {
        sessionStorage.setItem(NOTICE_KEY, done);
      } catch {}
      location.assign(`../submission/?id=${encodeURIComponent(view.submissionId)}`);
    } catch (error) {
      fail(error);
      busy(form, false);
    }
  });
  form.hidden = false;
}

// ---------------------------------------------------------------- one submission

const CHECK_ORDER = { failed: 0, running: 1, pending: 2, passed: 3, skipped: 4 };
const DECISION_WORDS = {
  approve: "Approved",
  request_changes: "Changes requested",
  reject: "Rejected",
  hide: "Hidden",
  unhide: "Unhidden",
};

function standing(view) {
  const checks = Array.isArray(view.validationChecks) ? view.validationChecks : [];
  const failed = checks.filter((c) => c.status === "failed" && c.required).length;
  const median = view.review?.medianWaitSeconds;
  const wait =
    typeof median === "number"
      ? ` Moderators have taken a median of ${formatDuration(median)} to decide over the last 30 days.`
      : " No release was decided in the last 30 days, so there is no typical wait yet.";
  switch (view.state) {
    case "draft":
    case "uploaded":
      return "Uploaded: waiting for the validation worker.";
    case "validating":
      return "Validating: the checks are running.";
    case "validation_failed":
      return `Failed validation: ${failed} required check${failed === 1 ? "" : "s"} failed. Read each log below, fix the package and upload a new revision.`;
    case "pending_review":
      return `Waiting for review: position ${view.review?.queuePosition ?? "—"} in the queue.${wait}`;
    case "changes_requested":
      return "Changes requested: read the moderators' notes below, then upload a new revision.";
    case "approved":
      return "Approved: an admin publishes it next.";
    case "published":
      return "Published: it is in the catalog and can be downloaded.";
    case "rejected":
      return "Rejected: the moderators' notes below say why.";
    case "cancelled":
      return "Cancelled: you withdrew this submission.";
    case "hidden":
      return "Hidden: a moderator withdrew it from the catalog.";
    case "superseded":
      return "Superseded: a newer version is current; this one stays downloadable.";
    default:
      return STATE_WORDS[view.state] ?? view.state;
  }
}

/** A check's item: status, reason (linked to its section of the validation guide), how to fix, the log. */
function checkItem(check, guide) {
  const item = el("li");
  const heading = el("h3");
  heading.append(el("code", check.id), ` — ${check.status}${check.required ? "" : " (optional)"}`);
  item.append(heading);
  if (check.reasonCode) {
    const reason = el("p", "Reason: ");
    const code = el("code", check.reasonCode);
    if (guide) {
      const link = el("a", "", { href: `${guide}#${check.id}`, rel: "noopener noreferrer nofollow" });
      link.append(code);
      link.setAttribute("aria-label", `${check.reasonCode}: explained in the validation guide`);
      reason.append(link);
    } else {
      reason.append(code);
    }
    item.append(reason);
  }
  const log = Array.isArray(check.log) ? check.log.map(String) : [];
  // Checks end their log with "fix:" (or "fix (reason_code):") lines: the fix, in the check's words.
  const fixes = log.filter((line) => /^fix( \([a-z0-9_]+\))?:/.test(line));
  if (check.status === "failed" && fixes.length > 0) {
    const box = el("div", null, { class: "fix" });
    box.append(el("p", "How to fix:", { class: "fix-h" }));
    const list = el("ul");
    for (const line of fixes) list.append(el("li", line.replace(/^fix( \([a-z0-9_]+\))?:\s*/, "")));
    box.append(list);
    item.append(box);
  }
  if (log.length > 0) {
    const details = el("details");
    if (check.status === "failed") details.open = true;
    details.append(
      el("summary", `Log (${log.length} line${log.length === 1 ? "" : "s"})`),
      el("pre", log.join("\n"), { class: "log" }),
    );
    item.append(details);
  }
  return item;
}

function renderSubmission(view, guide) {
  document.getElementById("title").textContent = `${view.modId} ${view.version}`;
  document.getElementById("standing").textContent = standing(view);
  const facts = document.getElementById("facts");
  facts.replaceChildren();
  const add = (term, value) => facts.append(el("dt", term), el("dd", value ?? "—"));
  add("Submission", view.submissionId);
  add("State", STATE_WORDS[view.state] ?? view.state);
  add("Queue position", view.review?.queuePosition ?? "not in the queue");
  add("Median wait for a decision", formatDuration(view.review?.medianWaitSeconds));
  add("Submitted", formatDate(view.createdAt));
  add("Last change", formatDate(view.updatedAt));
  add("Package", view.package ? `${view.package.fileName} (${formatBytes(view.package.sizeBytes)})` : null);
  add("Package SHA-256", view.packageSha256);
  if (view.source?.pullRequestUrl) {
    facts.append(el("dt", "Pull request"));
    const dd = el("dd");
    dd.append(linkOrText(view.source.pullRequestUrl, view.source.pullRequestUrl));
    facts.append(dd);
  }
  document.getElementById("overview").hidden = false;
  document.getElementById("polling").hidden = !IN_FLIGHT.includes(view.state);

  const publication = view.publication;
  const published = document.getElementById("published");
  published.hidden = !publication;
  if (publication) {
    const list = document.getElementById("published-links");
    list.replaceChildren();
    const item = (node) => {
      const li = el("li");
      li.append(node);
      list.append(li);
    };
    item(linkOrText(publication.pageUrl, `The ${view.modId} page in the catalog`));
    const download = linkOrText(
      publication.packageUrl,
      `Download ${view.package?.fileName ?? "the package"}`,
    );
    download.id = "download";
    item(download);
    item(linkOrText(publication.detailUrl, "Its catalog entry (JSON)"));
    list.append(el("li", `Published ${formatDate(publication.publishedAt)}; SHA-256 ${view.packageSha256}.`));
  }

  const checks = Array.isArray(view.validationChecks) ? view.validationChecks : [];
  const count = (status) => checks.filter((c) => c.status === status).length;
  document.getElementById("checks-summary").textContent = checks.length
    ? `${count("passed")} passed, ${count("failed")} failed, ${checks.length - count("passed") - count("failed")} other, of ${checks.length} checks.`
    : "No validation results yet.";
  // What needs the modder comes first and open; the checks that passed wait folded below.
  const list = document.getElementById("check-list");
  list.replaceChildren();
  const ordered = [...checks].sort((a, b) => (CHECK_ORDER[a.status] ?? 9) - (CHECK_ORDER[b.status] ?? 9));
  const done = ordered.filter((c) => c.status === "passed" || c.status === "skipped");
  for (const check of ordered) if (!done.includes(check)) list.append(checkItem(check, guide));
  const fold = document.getElementById("passed-checks");
  fold.hidden = done.length === 0;
  fold.querySelector("summary").textContent =
    `Checks that passed (${count("passed")})${count("skipped") ? ` and skipped (${count("skipped")})` : ""}`;
  const passedList = document.getElementById("passed-list");
  passedList.replaceChildren();
  for (const check of done) passedList.append(checkItem(check, guide));
  document.getElementById("checks").hidden = false;

  const decisions = Array.isArray(view.review?.decisions) ? view.review.decisions : [];
  const history = document.getElementById("decision-list");
  history.replaceChildren();
  for (const d of decisions) {
    const item = el("li");
    item.append(el("strong", DECISION_WORDS[d.decision] ?? d.decision), ` on ${formatDate(d.decidedAt)}`);
    if (d.notes) item.append(el("p", d.notes, { class: "text" }));
    history.append(item);
  }
  document.getElementById("history").hidden = decisions.length === 0;

  const canResubmit = RESUBMITTABLE.includes(view.state);
  const canCancel = CANCELLABLE.includes(view.state);
  document.getElementById("resubmit").hidden = !canResubmit;
  document.getElementById("resubmit-link").href = `../new/?id=${encodeURIComponent(view.submissionId)}`;
  document.getElementById("cancel-box").hidden = !canCancel;
  document.getElementById("actions").hidden = !canResubmit && !canCancel;
}

async function submissionPage() {
  const id = new URLSearchParams(location.search).get("id") || "";
  if (!SUBMISSION_ID.test(id)) {
    say("Open a submission from your releases.", { error: true });
    return;
  }
  let session;
  try {
    session = await signedIn();
  } catch (error) {
    fail(error);
    return;
  }
  if (!session) return;
  const guide = (() => {
    const value = container.getAttribute("data-validation-guide") || "";
    // A portal on this machine (http on loopback) serves the guide itself, under its own base URL.
    const base = container.getAttribute("data-base-url") || "";
    return value.startsWith("https://") || (base !== "" && value.startsWith(`${base}/docs/`)) ? value : null;
  })();
  let timer = null;

  const load = async () => {
    clearTimeout(timer);
    const view = await request("GET", `uploads/${encodeURIComponent(id)}`);
    renderSubmission(view, guide);
    if (IN_FLIGHT.includes(view.state)) timer = setTimeout(() => load().catch(fail), POLL_MS);
  };
  try {
    await load();
  } catch (error) {
    fail(error);
    return;
  }
  try {
    const notice = sessionStorage.getItem(NOTICE_KEY);
    sessionStorage.removeItem(NOTICE_KEY);
    if (notice) say(notice);
  } catch {}
  document.getElementById("refresh").addEventListener("click", () => load().catch(fail));
  const cancel = document.getElementById("cancel");
  cancel.addEventListener("click", async () => {
    if (!confirm("Cancel this submission? It leaves the queue; you can upload the release again later."))
      return;
    cancel.disabled = true;
    try {
      const view = await request("POST", `uploads/${encodeURIComponent(id)}/cancel`, {
        csrf: session.csrfToken,
      });
      renderSubmission(view, guide);
      say("");
    } catch (error) {
      fail(error);
    } finally {
      cancel.disabled = false;
    }
  });
}

const handlers = { releases: releasesPage, upload: uploadPage, submission: submissionPage };
handlers[page]?.();
