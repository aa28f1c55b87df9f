// The portal API from the browser: same origin by default, or the origin in
// <meta name="svc-api-base"> when the API layer is deployed apart from the pages (then the API must
// allow this origin with credentials; see docs/pages.md). Every text shown comes through
// textContent, never innerHTML.

const configured = document.querySelector('meta[name="svc-api-base"]')?.getAttribute("content") || "";
const siteRoot = new URL("../", import.meta.url);
const apiRoot = configured ? new URL(`${configured.replace(/\/+$/, "")}/`) : siteRoot;
const crossOrigin = apiRoot.origin !== location.origin;

export class ApiError extends Error {
  constructor(status, code, message, retryAfter) {
    super(message);
    this.status = status;
    this.code = code;
    this.retryAfter = retryAfter;
  }
}

export function apiUrl(path) {
  return new URL(`api/v1/${path}`, apiRoot).href;
}

/** One JSON request. csrf: the token from the session response, sent as x-svc-csrf. */
export async function request(method, path, { body, csrf } = {}) {
  const headers = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  if (csrf) headers["x-svc-csrf"] = csrf;
  let response;
  try {
    response = await fetch(apiUrl(path), {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
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
};

/** A sentence for the user: plain words for the known codes, the server's message otherwise. */
export function describeError(error) {
  if (error instanceof ApiError) {
    const plain = PLAIN[error.code];
    return plain ? plain(error) : `${error.message} (${error.code})`;
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
