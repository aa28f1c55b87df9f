// The moderation queue and the review page, over moderation_queue, upload_status and
// moderation_decision (svc.upload-submission.v1). All data is shown through textContent.
import {
  currentSession,
  describeError,
  el,
  formatDate,
  formatDuration as formatSeconds,
  request,
  STATE_WORDS,
  say,
} from "./api.js";

const page = document.querySelector("[data-page]")?.getAttribute("data-page");
const signInHref = new URL("../account/signin/", import.meta.url).href;

/** Which decisions make sense from a state; the server has the final word. */
const DECISIONS_BY_STATE = {
  pending_review: ["approve", "request_changes", "reject"],
  published: ["hide"],
  superseded: ["hide"],
  hidden: ["unhide"],
};

/** How the uploader stands to the mod (svc.upload-submission.v1 ownership), in words; null when unknown. */
function describeClaim(ownership, modId) {
  switch (ownership?.claim) {
    case "new_mod":
      return `The uploader claims the new mod id ${modId}.`;
    case "owner":
      return `The uploader is an owner of ${modId}.`;
    case "collaborator":
      return `The uploader is a collaborator on ${modId}.`;
    case "not_permitted":
      return `The uploader is not an owner or collaborator of ${modId}: its publication will be refused.`;
    default:
      return null;
  }
}

function describePrincipal(principal) {
  return principal?.account ? `account ${principal.account}` : `@${principal?.github}`;
}

function fail(error) {
  say(describeError(error), { error: true });
}

function checkCounts(submission) {
  const checks = Array.isArray(submission.validationChecks) ? submission.validationChecks : [];
  const failed = checks.filter((c) => c.status === "failed").length;
  const passed = checks.filter((c) => c.status === "passed").length;
  return { checks, failed, passed };
}

async function requireModerator() {
  const session = await currentSession();
  if (!session) {
    const region = document.getElementById("message");
    region.replaceChildren(
      "You need to sign in with a moderator account. ",
      el("a", "Sign in", { href: signInHref }),
    );
    return null;
  }
  return session;
}

async function queuePage() {
  let session;
  try {
    session = await requireModerator();
  } catch (error) {
    fail(error);
    return;
  }
  if (!session) return;
  const filter = document.getElementById("queue-filter");
  const select = document.getElementById("state-filter");
  const table = document.getElementById("queue");
  const rows = document.getElementById("queue-rows");
  const empty = document.getElementById("queue-empty");
  const more = document.getElementById("queue-more");
  const median = document.getElementById("queue-median");
  let cursor = null;
  /** Rows on the page, by submission id: a page is only ever appended once. */
  const listed = new Set();
  /** Bumped by every fresh load, so the answer to a superseded request is dropped. */
  let generation = 0;
  let loading = false;

  const addRow = (item) => {
    if (listed.has(item.submissionId)) return;
    listed.add(item.submissionId);
    const row = el("tr");
    const mod = el("td");
    const link = el("a", item.modId, { href: `review/?id=${encodeURIComponent(item.submissionId)}` });
    // The row's text stays what it was; the review page says the claim in words.
    const claim = describeClaim(item.ownership, item.modId);
    if (claim) link.title = claim;
    mod.append(link);
    const waiting = el("td", formatSeconds(item.ageSeconds));
    waiting.title = `submitted ${formatDate(item.createdAt)}`;
    const failed = Array.isArray(item.failedChecks) ? item.failedChecks : [];
    row.append(
      el("td", item.queuePosition ?? "—"),
      mod,
      el("td", item.version),
      el("td", STATE_WORDS[item.state] ?? item.state),
      waiting,
      el("td", failed.length ? `failed: ${failed.map((c) => c.id).join(", ")}` : "none failed"),
    );
    rows.append(row);
  };

  // "Show more" continues from the cursor of the last page read; without one there is nothing
  // more, and a click while a page is on its way would fetch (and append) that page twice.
  const load = async (append) => {
    if (append && (loading || !cursor)) return;
    const mine = append ? generation : ++generation;
    loading = true;
    more.disabled = true;
    try {
      const params = new URLSearchParams();
      if (select.value) params.set("state", select.value);
      if (append) params.set("cursor", cursor);
      const query = params.toString();
      const data = await request("GET", `moderation/releases${query ? `?${query}` : ""}`);
      if (mine !== generation) return;
      if (!append) {
        rows.replaceChildren();
        listed.clear();
      }
      const items = Array.isArray(data?.items) ? data.items : [];
      for (const item of items) addRow(item);
      cursor = data?.nextCursor ?? null;
      const shown = listed.size;
      more.hidden = !cursor;
      table.hidden = shown === 0;
      empty.hidden = shown > 0;
      median.textContent =
        typeof data?.medianWaitSeconds === "number"
          ? `Median wait for a decision over the last 30 days: ${formatSeconds(data.medianWaitSeconds)}.`
          : "No decisions in the last 30 days.";
      say(`${shown} submission${shown === 1 ? "" : "s"} shown${cursor ? "; more are available" : ""}.`);
    } finally {
      if (mine === generation) {
        loading = false;
        more.disabled = false;
      }
    }
  };
  const run = (append) => load(append).catch(fail);

  select.addEventListener("change", () => {
    cursor = null;
    more.hidden = true;
    run(false);
  });
  more.addEventListener("click", () => run(true));
  filter.hidden = false;
  await run(false);
}

function fact(list, term, value) {
  list.append(el("dt", term), el("dd", value ?? "—"));
}

function renderSubmission(s) {
  document.getElementById("title").textContent = `Review ${s.modId} ${s.version}`;
  const facts = document.getElementById("facts");
  facts.replaceChildren();
  fact(facts, "Submission", s.submissionId);
  fact(facts, "State", STATE_WORDS[s.state] ?? s.state);
  fact(facts, "Queue position", s.review?.queuePosition ?? "not in the queue");
  fact(facts, "Submitted", formatDate(s.createdAt));
  fact(facts, "Last change", formatDate(s.updatedAt));
  fact(facts, "Package", s.package ? `${s.package.fileName} (${s.package.sizeBytes} bytes)` : null);
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
  document.getElementById("submission").hidden = false;

  const { checks, failed, passed } = checkCounts(s);
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
        el("summary", `Log (${check.log.length} lines)`),
        el("pre", check.log.join("\n"), { class: "log" }),
      );
      item.append(details);
    }
    list.append(item);
  }
  document.getElementById("checks").hidden = false;

  const decisions = Array.isArray(s.review?.decisions) ? s.review.decisions : [];
  const history = document.getElementById("decision-list");
  history.replaceChildren();
  for (const d of decisions) {
    const item = el("li");
    item.append(
      el("strong", d.decision),
      ` by ${d.reviewerAccountId} on ${formatDate(d.decidedAt)} (${d.fromState} → ${d.toState})`,
    );
    if (d.notes) item.append(el("p", d.notes, { class: "text" }));
    history.append(item);
  }
  document.getElementById("history").hidden = decisions.length === 0;

  const allowed = DECISIONS_BY_STATE[s.state] ?? [];
  for (const input of document.querySelectorAll('input[name="decision"]')) {
    const ok = allowed.includes(input.value);
    input.parentElement.hidden = !ok;
    input.disabled = !ok;
    input.checked = false;
  }
  document.getElementById("decide").hidden = allowed.length === 0;
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
  const load = async () => renderSubmission(await request("GET", `uploads/${encodeURIComponent(id)}`));
  try {
    await load();
  } catch (error) {
    fail(error);
    return;
  }
  const form = document.getElementById("decision");
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const decision = data.get("decision");
    if (!decision) {
      say("Choose a decision first.", { error: true });
      return;
    }
    const button = form.querySelector("button");
    button.disabled = true;
    try {
      const result = await request("POST", `moderation/releases/${encodeURIComponent(id)}/decision`, {
        body: { decision, notes: String(data.get("notes") || "") },
        csrf: session.csrfToken,
      });
      form.reset();
      renderSubmission(result);
      say(`Recorded: ${decision}. The release is now ${STATE_WORDS[result?.state] ?? result?.state}.`);
    } catch (error) {
      fail(error);
    } finally {
      button.disabled = false;
    }
  });
}

if (page === "queue") queuePage();
if (page === "review") reviewPage();
