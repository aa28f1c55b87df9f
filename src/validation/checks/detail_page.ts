import { portalUrls } from "../../contracts/urls.ts";
import type { CatalogDocument } from "../../contracts/catalog.ts";
import type { CheckContext, CheckOutcome, CompleteSidecar, PackageCheck } from "../types.ts";
import { blocked, failuresOf, passed } from "./common.ts";

const ID = "detail_page";

export const detailPage = {
  id: ID,
  scope: "package",
  required: true,
  pack: null,
  description:
    "Everything the public mod detail page needs is present, and the page exists before catalog publication.",
  reasons: {
    detail_page_incomplete: {
      meaning:
        "The sidecar lacks something the public detail page requires (name, summary, description or release notes, authors: a mod's first release names its authors; later versions take them from the last published one when they leave them out).",
      fix: "Fill in each requirement the log marks as missing.",
    },
    markup_in_text: {
      meaning: "The name or summary contains HTML markup; they are shown as plain text.",
      fix: "Remove tags such as <b> or <script> from the name and summary.",
    },
    unsafe_link: {
      meaning:
        "A link is not an https URL (javascript:, data:, http: and relative links are refused) or contains markup.",
      fix: "Use https:// links only.",
    },
  },
  run: checkDetailPage,
} as const satisfies PackageCheck;

const { failed } = failuresOf(detailPage);

export interface DetailPageRequirement {
  id: string;
  satisfied: boolean;
  message: string;
}

const MARKUP = /<\s*[a-z!/?]|javascript:|data:text\/html/i;

/** Why a URL may not reach a public page, or null when it is a plain https link. */
export function unsafeLinkReason(value: string): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return "is not an absolute URL";
  }
  if (url.protocol !== "https:") return `uses ${url.protocol} (only https: is allowed)`;
  if (url.username || url.password) return "carries credentials";
  if (/[\s<>"'`]/.test(value)) return "contains characters that could break out of an HTML attribute";
  return null;
}

/** What the generated public detail page needs from the sidecar; shared with the upload status response. */
export function detailPageRequirements(
  s: CompleteSidecar,
  catalog: CatalogDocument | null,
): DetailPageRequirement[] {
  const req = (id: string, satisfied: boolean, message: string): DetailPageRequirement => ({
    id,
    satisfied,
    message,
  });
  const links: Array<[string, string]> = [
    ...Object.entries(s.links ?? {}).map(([k, v]) => [`links.${k}`, v] as [string, string]),
    ...s.authors.flatMap((a, i) => (a.url ? [[`authors[${i}].url`, a.url] as [string, string]] : [])),
    ...(s.package.url ? [["package.url", s.package.url] as [string, string]] : []),
  ];
  const badLinks = links.flatMap(([where, url]) => {
    const why = unsafeLinkReason(url);
    return why ? [`${where} ${why}`] : [];
  });
  const markup = (["name", "summary"] as const).filter((f) => MARKUP.test(s[f]));
  const pageUrl = catalog ? portalUrls(catalog.baseUrl).modPage(s.modId) : `/mods/${s.modId}/`;
  return [
    req("name", s.name.trim().length > 0, "a display name"),
    req("summary", s.summary.trim().length > 0, "a one-line summary"),
    req(
      "description_or_release_notes",
      (s.description ?? "").trim().length > 0 || s.releaseNotes.trim().length > 0,
      "a description or release notes for the page body",
    ),
    req("release_notes", s.releaseNotes.trim().length > 0, "non-empty release notes for this version"),
    req(
      "authors",
      s.authors.length > 0 && s.authors.every((a) => a.name.trim().length > 0),
      "at least one named author (a first release names them; a later version takes the last published one's)",
    ),
    req(
      "plain_text",
      markup.length === 0,
      markup.length ? `markup in ${markup.join(", ")}` : "name and summary are plain text",
    ),
    req(
      "https_links",
      badLinks.length === 0,
      badLinks.length ? badLinks.join("; ") : `${links.length} link(s), all https`,
    ),
    req("page_url", true, `the page will be published at ${pageUrl}`),
  ];
}

export function checkDetailPage(ctx: CheckContext): CheckOutcome {
  if (!ctx.sidecar.valid)
    return blocked(ID, "sidecar_schema", "the detail page is generated from a valid sidecar");
  const requirements = detailPageRequirements(ctx.sidecar.valid, ctx.catalog);
  const log = requirements.map((r) => `${r.satisfied ? "ok" : "MISSING"} ${r.id}: ${r.message}`);
  const unmet = requirements.filter((r) => !r.satisfied);
  if (unmet.length === 0) return passed(ID, log);
  const first = unmet[0]!.id;
  const code =
    first === "https_links"
      ? "unsafe_link"
      : first === "plain_text"
        ? "markup_in_text"
        : "detail_page_incomplete";
  return failed(code, log);
}
