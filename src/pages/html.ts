/**
 * HTML building blocks for the generated pages. Every interpolated value is escaped unless it is
 * already SafeHtml, so user-supplied text (names, summaries, notes) can only ever be text.
 * Attributes are always double-quoted; the same escaper covers text and quoted attribute values.
 */
export class SafeHtml {
  constructor(readonly text: string) {}
  toString(): string {
    return this.text;
  }
}

export type HtmlPart = SafeHtml | string | number | boolean | null | undefined | readonly HtmlPart[];

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

function renderPart(part: HtmlPart): string {
  if (part === null || part === undefined || part === false || part === true) return "";
  if (part instanceof SafeHtml) return part.text;
  if (Array.isArray(part)) return part.map(renderPart).join("");
  return escapeHtml(String(part));
}

/** Tagged template: literal parts are trusted markup, every value is escaped. */
export function html(strings: TemplateStringsArray, ...values: HtmlPart[]): SafeHtml {
  let out = strings[0] ?? "";
  for (let i = 0; i < values.length; i++) out += renderPart(values[i]) + (strings[i + 1] ?? "");
  return new SafeHtml(out);
}

/** Markup from a trusted constant (never from data). */
export function trusted(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

/**
 * Where the pages may link: https: anywhere, and the portal's own base URL (which may be http on
 * loopback). Anything else (javascript:, data:, http: elsewhere, credentials in the URL, control
 * characters) is refused and the caller shows plain text instead of a link.
 */
export function safeUrl(value: unknown, baseUrl: string): string | null {
  if (typeof value !== "string" || value.length > 2048) return null;
  // Browsers strip these before parsing, which is how "java\tscript:" slips past naive checks.
  if (/[\u0000-\u0020\u007f-\u009f]/.test(value)) return null;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return null;
  }
  if (url.username || url.password) return null;
  if (url.protocol === "https:") return url.href;
  if (value === baseUrl || value.startsWith(`${baseUrl}/`)) return url.href;
  return null;
}

/**
 * A link target as written on a page `depth` directories below the site root: URLs under the
 * portal's own base become relative (so the pages work on any host and port that serves the
 * site), other allowed URLs stay absolute, refused ones are null.
 */
export function pageHref(value: unknown, baseUrl: string, root: string): string | null {
  const allowed = safeUrl(value, baseUrl);
  if (allowed === null || typeof value !== "string") return null;
  if (value.startsWith(`${baseUrl}/`)) return root + value.slice(baseUrl.length + 1);
  return allowed;
}

/** A link when the URL is allowed, plain text otherwise. */
export function link(
  value: unknown,
  label: HtmlPart,
  baseUrl: string,
  root: string,
  attrs: SafeHtml = trusted(""),
): SafeHtml {
  const href = pageHref(value, baseUrl, root);
  if (href === null) return html`<span>${label}</span>`;
  return /^[a-z][a-z0-9+.-]*:/i.test(href)
    ? html`<a href="${href}" rel="noopener noreferrer nofollow"${attrs}>${label}</a>`
    : html`<a href="${href}"${attrs}>${label}</a>`;
}
