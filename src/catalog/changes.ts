import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { formatIssues, type SchemaRegistry } from "../contracts/schemas.ts";
import { portalUrls } from "../contracts/urls.ts";
import { SvcError } from "../errors.ts";
import { RECORD_PATHS } from "./records.ts";

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

/** The page numbers records/changes holds, ascending (a directory listing, no file read). */
export function changesPageNumbers(recordsDir: string): number[] {
  const dir = join(recordsDir, RECORD_PATHS.changesDir);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .map((name) => /^(0|[1-9]\d*)\.json$/.exec(name))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
}

function readPage(recordsDir: string, page: number, registry: SchemaRegistry): ChangesPage {
  const path = join(recordsDir, RECORD_PATHS.changesPage(page));
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(path, "utf8"));
  } catch (error) {
    throw new SvcError("invalid_payload", `${path} is not valid JSON: ${(error as Error).message}`);
  }
  const result = registry.validate<ChangesPage>("changes-page", value);
  if (!result.ok)
    throw new SvcError(
      "invalid_payload",
      `${path} is not a valid changes page:\n${formatIssues(result.issues)}`,
    );
  const doc = result.value;
  const broken = doc.entries.findIndex((e, i) => e.sequence !== page * CHANGES_PAGE_SIZE + i + 1);
  if (doc.page !== page || doc.entries.length > CHANGES_PAGE_SIZE || broken !== -1) {
    throw new SvcError(
      "invalid_payload",
      `${path} must hold page ${page}: sequences ${page * CHANGES_PAGE_SIZE + 1}.. in order, at most ${CHANGES_PAGE_SIZE} entries`,
    );
  }
  return doc;
}

/** Every page of records/changes, checked to be one gapless sequence (what a full build renders). */
export function loadChangesPages(recordsDir: string, registry: SchemaRegistry): ChangesPage[] {
  const numbers = changesPageNumbers(recordsDir);
  const pages = numbers.map((n) => readPage(recordsDir, n, registry));
  pages.forEach((page, i) => {
    const full = page.entries.length === CHANGES_PAGE_SIZE;
    if (i < pages.length - 1 && !full)
      throw new SvcError(
        "invalid_payload",
        `records/changes/${page.page}.json is not full but is not the last page`,
      );
    if (i > 0 && pages[i - 1]!.page !== page.page - 1)
      throw new SvcError("invalid_payload", `records/changes has a gap before page ${page.page}`);
  });
  return pages;
}

/** The newest page of records/changes, or null when the feed is empty: all a publication reads of it. */
export function loadOpenChangesPage(recordsDir: string, registry: SchemaRegistry): ChangesPage | null {
  const last = changesPageNumbers(recordsDir).at(-1);
  return last === undefined ? null : readPage(recordsDir, last, registry);
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
