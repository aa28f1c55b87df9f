// The portal API from the browser: same origin by default, or the origin in
// <meta name="svc-api-base"> when the API layer is deployed apart from the pages (then the API must
// allow this origin with credentials; see docs/pages.md). Every text shown comes through
// textContent, never innerHTML.

const configured = document.querySelector('meta[name="svc-api-base"]')?.getAttribute("content") || "";
const siteRoot = new URL("../", import.meta.url);
const apiRoot = configured ? new URL(`${configured.replace(/\/+$/, "")}/`) : siteRoot;
const crossOrigin = apiRoot.origin !== location.origin;

export class ApiError extends Error {
  constructor(status, code, message, retryAfter, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
    this.details = details ?? null;
  }
}

export function apiUrl(path) {
  return new URL(`api/v1/${path}`, apiRoot).href;
}

/**
 * One request; the answer is JSON. csrf: the token from the session response, sent as x-svc-csrf.
 * A FormData body goes out as multipart/form-data (the browser writes the boundary), anything
 * else as JSON.
 */
export async function request(method, path, { body, csrf } = {}) {
  const headers = { accept: "application/json" };
  const multipart = body instanceof FormData;
  if (body !== undefined && !multipart) headers["content-type"] = "application/json";
  if (csrf) headers["x-svc-csrf"] = csrf;
  let response;
  try {
    response = await fetch(apiUrl(path), {
      method,
      headers,
      body: body === undefined ? undefined : multipart ? body : JSON.stringify(body),
      credentials: crossOrigin ? "include" : "same-origin",
      cache: "no-store",
    });
  } catch {
    throw new ApiError(
      0,
      "network_error",
      "The portal API cannot be reached. Check your connection and try again.",
    );
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    const retry = Number(response.headers.get("retry-after"));
    throw new ApiError(
      response.status,
      typeof data?.code === "string" ? data.code : `http_${response.status}`,
      typeof data?.message === "string" ? data.message : `HTTP ${response.status}`,
      Number.isFinite(retry) && retry > 0 ? retry : null,
      data?.details,
    );
  }
  return data;
}

const PLAIN = {
  network_error: () => "The portal API cannot be reached. Check your connection and try again.",
  rate_limit_exceeded: (e) =>
    `Too many attempts. Try again ${e.retryAfter ? `in ${e.retryAfter} seconds` : "later"}.`,
  email_delivery_unavailable: () =>
    "This portal cannot send email yet, so accounts and sign-in links are not available. Nothing was created.",
  token_invalid: () => "This link is not valid any more: it was already used, has expired, or was cut short.",
  unauthenticated: () => "You are not signed in, or your session has ended.",
  forbidden: () => "Your account does not have the role this needs.",
  csrf_failed: () => "Your session's security token did not match. Reload the page and try again.",
  not_implemented: () => "This part of the portal is not live yet.",
  illegal_transition: (e) => `That is not possible in the release's current state. ${e.message}`,
  not_found: () => "Not found. It may have been removed.",
  last_admin: () =>
    "Not changed: this is the last verified admin, and the portal always keeps one. Give another verified account the admin role first.",
  account_not_verified: () =>
    "Not changed: moderator and admin roles need an account whose email address is verified.",
  uploads_disabled: () =>
    "This portal does not take uploads right now (its operator has not turned them on). Nothing was stored.",
  scanner_unavailable: () =>
    "The antivirus scanner is not reachable, so the portal cannot accept packages now. Try again later.",
  account_suspended: (e) =>
    `A moderator suspended this account's uploads${typeof e.details?.reason === "string" ? `: ${e.details.reason}` : ""}. Nothing was stored; an admin can lift the suspension.`,
};

/** The server's own list of what was wrong (invalid_payload names each field). */
function detailLines(error) {
  const issues = error.details?.issues;
  return Array.isArray(issues) && issues.length > 0 ? `: ${issues.map(String).join("; ")}` : "";
}

/** A sentence for the user: plain words for the known codes, the server's message otherwise. */
export function describeError(error) {
  if (error instanceof ApiError) {
    const plain = PLAIN[error.code];
    return plain ? plain(error) : `${error.message} (${error.code})${detailLines(error)}`;
  }
  return String(error?.message || error);
}

/** Shows a message in the page's live region; errors are styled and announced the same way. */
export function say(text, { error = false } = {}) {
  const region = document.getElementById("message");
  if (!region) return;
  region.classList.toggle("error", error);
  region.textContent = text;
}

/**
 * The page's script has wired `form`: what its HTML held back (data-until-ready: a submit button
 * disabled so that a click before the module script ran could not submit the form natively, and the
 * note that the form is loading) is released. enabled false: the button stays disabled (the page
 * says why in its message).
 */
export function formReady(form, enabled = true) {
  for (const held of form.querySelectorAll("[data-until-ready]")) {
    if (held.localName === "button") {
      held.disabled = !enabled;
      held.removeAttribute("data-until-ready");
    } else held.remove();
  }
}

/** The current session ({ accountId, email, displayName, roles, csrfToken, ... }), or null when signed out. */
export async function currentSession() {
  try {
    return (await request("GET", "auth/session"))?.session ?? null;
  } catch (error) {
    if (error instanceof ApiError && (error.status === 401 || error.code === "unauthenticated")) return null;
    throw error;
  }
}

/** Reads a one-time value from the page's query or fragment, then removes both from the address bar. */
export function takeUrlParams(names) {
  const query = new URLSearchParams(location.search);
  const fragment = new URLSearchParams(location.hash.slice(1));
  const values = {};
  for (const name of names) values[name] = fragment.get(name) || query.get(name) || "";
  if (location.search || location.hash) history.replaceState(null, "", location.pathname);
  return values;
}

export function formatDate(iso) {
  if (!iso) return "—";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toISOString().slice(0, 16).replace("T", " ");
}

/** A duration in seconds as words ("3 min", "5 h", "2 days"); "—" when unknown. */
export function formatDuration(seconds) {
  if (typeof seconds !== "number" || !Number.isFinite(seconds)) return "—";
  return formatAge(new Date(0).toISOString(), seconds * 1000);
}

export function formatBytes(bytes) {
  if (typeof bytes !== "number" || !Number.isFinite(bytes)) return "—";
  if (bytes < 1024) return `${bytes} bytes`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

/** The words a person reads for a submission state (the API's ids stay in the data). */
export const STATE_WORDS = {
  draft: "Draft",
  uploaded: "Uploaded",
  validating: "Validating",
  validation_failed: "Failed validation",
  cancelled: "Cancelled",
  pending_review: "Waiting for review",
  changes_requested: "Changes requested",
  approved: "Approved",
  published: "Published",
  rejected: "Rejected",
  hidden: "Hidden",
  superseded: "Superseded",
};

export function formatAge(iso, now = Date.now()) {
  const ms = now - new Date(iso).getTime();
  if (!Number.isFinite(ms) || ms < 0) return "—";
  const minutes = Math.floor(ms / 60000);
  if (minutes < 60) return `${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return `${hours} h`;
  return `${Math.floor(hours / 24)} days`;
}

/** Creates an element with text content only. */
export function el(tag, text, attrs = {}) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [key, value] of Object.entries(attrs)) node.setAttribute(key, value);
  return node;
}
