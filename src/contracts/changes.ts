import { portalUrls } from "./urls.ts";

/**
 * Entries per page. Small on purpose: a current manager downloads the head, the open page and the
 * changed mods' versions.json, and the whole refresh must stay under 10 KB; a full page of 24
 * one-line entries is about 3 KB (4.5 KB with 40-character ids and long prerelease versions).
 */
export const CHANGES_PAGE_SIZE = 24;

export type ChangeKind = "publish" | "hide" | "unhide";

/** One change of a mod's visible versions (svc.changes-page.v1 entries). */
export interface ChangeEntry {
  sequence: number;
  modId: string;
  version: string;
  kind: ChangeKind;
  /** The newest visible version after the change; null when the mod left the catalog. */
  latestVersion: string | null;
  at: string;
}

export interface ChangesPage {
  schema: "svc.changes-page.v1";
  page: number;
  entries: ChangeEntry[];
}

export interface ChangesHeadDocument {
  schema: "svc.changes-head.v1";
  generatedAt: string;
  sequence: number;
  pageSize: number;
  firstSequence: number;
  lastPage: number;
  pageUrlTemplate: string;
  catalogUrl: string;
}

export function pageOf(sequence: number): number {
  return Math.floor((sequence - 1) / CHANGES_PAGE_SIZE);
}

export function lastSequenceOf(page: ChangesPage | null): number {
  return page?.entries.at(-1)?.sequence ?? 0;
}

/** One entry per line: compact for managers, still readable in a diff of records/. */
export function serializeChangesPage(page: ChangesPage): string {
  const entries = page.entries.map((e) => JSON.stringify(e)).join(",\n");
  return `{"schema":${JSON.stringify(page.schema)},"page":${page.page},"entries":[${entries ? `\n${entries}\n` : ""}]}\n`;
}

/** The page to write for one more change: the open page with the entry appended, or a new page. */
export function appendChange(open: ChangesPage | null, change: Omit<ChangeEntry, "sequence">): ChangesPage {
  const sequence = lastSequenceOf(open) + 1;
  const page = pageOf(sequence);
  const entries = open && open.page === page ? open.entries : [];
  return { schema: "svc.changes-page.v1", page, entries: [...entries, { sequence, ...change }] };
}

/** firstPage: the oldest page records/changes keeps (0 unless an operator pruned the feed). */
export function buildChangesHead(
  baseUrl: string,
  firstPage: number,
  lastPage: ChangesPage | null,
  generatedAt: string,
): ChangesHeadDocument {
  const urls = portalUrls(baseUrl);
  const sequence = lastSequenceOf(lastPage);
  return {
    schema: "svc.changes-head.v1",
    generatedAt,
    sequence,
    pageSize: CHANGES_PAGE_SIZE,
    firstSequence: firstPage * CHANGES_PAGE_SIZE + 1,
    lastPage: lastPage ? lastPage.page : -1,
    pageUrlTemplate: urls.changesPageTemplate,
    catalogUrl: urls.catalog,
  };
}
