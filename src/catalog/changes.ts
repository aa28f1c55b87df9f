import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { formatIssues, type SchemaRegistry } from "../contracts/schemas.ts";
import { CHANGES_PAGE_SIZE, type ChangesPage } from "../contracts/changes.ts";
import { SvcError } from "../errors.ts";
import { CHANGES_PAGES_PER_FOLDER, RECORD_PATHS } from "../contracts/records.ts";
import { layoutOutdated } from "./records.ts";

/**
 * The page numbers records/changes holds, ascending (directory listings, no file read): pages live
 * in folders of CHANGES_PAGES_PER_FOLDER (records/changes/{floor(page/1000)}/{page}.json). A page at
 * the top of records/changes is the layout before sharding (records_layout_outdated).
 */
export function changesPageNumbers(recordsDir: string): number[] {
  const dir = join(recordsDir, RECORD_PATHS.changesDir);
  if (!existsSync(dir)) return [];
  const pages: number[] = [];
  for (const name of readdirSync(dir)) {
    if (/^(0|[1-9]\d*)\.json$/.test(name))
      throw layoutOutdated(recordsDir, `${RECORD_PATHS.changesDir}/${name}`);
    const folder = /^(0|[1-9]\d*)$/.exec(name);
    if (!folder) continue;
    for (const page of readdirSync(join(dir, name))) {
      const m = /^(0|[1-9]\d*)\.json$/.exec(page);
      if (!m) continue;
      const n = Number(m[1]);
      if (Math.floor(n / CHANGES_PAGES_PER_FOLDER) !== Number(folder[1]))
        throw new SvcError(
          "invalid_payload",
          `${join(dir, name, page)} is in the wrong folder: page ${n} belongs in records/${RECORD_PATHS.changesPage(n)}`,
        );
      pages.push(n);
    }
  }
  return pages.sort((a, b) => a - b);
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
        `records/${RECORD_PATHS.changesPage(page.page)} is not full but is not the last page`,
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
