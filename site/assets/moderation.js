// The moderation queue over moderation_queue (svc.upload-submission.v1 items), and what the review
// page (review.js) shares with it. All data is shown through textContent.
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

/** How the uploader stands to the mod (svc.upload-submission.v1 ownership), in words; null when unknown. */
export function describeClaim(ownership, modId) {
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

export function describePrincipal(principal) {
  return principal?.account ? `account ${principal.account}` : `@${principal?.github}`;
}

export function fail(error) {
  say(describeError(error), { error: true });
}

export async function requireModerator() {
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

if (page === "queue") queuePage();
