import { sha256Hex } from "../lib/hash.ts";
import * as semver from "./semver.ts";
import { type SchemaName, type SchemaRegistry, SOURCE_SCHEMA_BASE, schemaRegistry } from "./schemas.ts";
import type { CatalogDocument, ModVersionsDocument, VersionRecord } from "./catalog.ts";
import { portalUrls } from "./urls.ts";
import { type ChangesHeadDocument, type ChangesPage, pageOf } from "./changes.ts";

export interface ManagerCatalogParse {
  ok: boolean;
  errors: string[];
  mods: number;
  versions: number;
  catalog?: CatalogDocument;
}

/**
 * The reference manager reader: as strict as the desktop manager. It accepts a catalog only when
 * it parses as JSON, matches svc.catalog.v1, and every install decision it would make is sound:
 * unique ids and versions, newest first, latestVersion first, dependencies that resolve inside the
 * catalog, artifact URLs that end in the file name, and https everywhere except a loopback portal.
 */
export function parseManagerCatalog(text: string): ManagerCatalogParse {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, errors: [`not JSON: ${(error as Error).message}`], mods: 0, versions: 0 };
  }
  const baseUrl =
    typeof (value as { baseUrl?: unknown })?.baseUrl === "string"
      ? (value as { baseUrl: string }).baseUrl
      : SOURCE_SCHEMA_BASE;
  const result = schemaRegistry(baseUrl).validate<CatalogDocument>("catalog", value);
  if (!result.ok) {
    return {
      ok: false,
      errors: result.issues.slice(0, 50).map((i) => `${i.path} ${i.message}`),
      mods: 0,
      versions: 0,
    };
  }
  const catalog = result.value;
  const errors: string[] = [];
  const loopback = /^http:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?(\/|$)/.test(catalog.baseUrl);
  const ids = new Set<string>();
  let versions = 0;
  for (const mod of catalog.mods) {
    if (ids.has(mod.id)) errors.push(`mods: duplicate id ${mod.id}`);
    ids.add(mod.id);
  }
  for (const mod of catalog.mods) {
    const seen = new Set<string>();
    mod.versions.forEach((v, i) => {
      versions++;
      if (seen.has(v.version)) errors.push(`${mod.id}: duplicate version ${v.version}`);
      seen.add(v.version);
      const next = mod.versions[i + 1];
      if (next && !semver.gt(v.version, next.version))
        errors.push(`${mod.id}: versions are not newest first at ${v.version}`);
      if (!v.packageUrl.endsWith(`/${v.fileName}`))
        errors.push(`${mod.id}@${v.version}: packageUrl does not end in ${v.fileName}`);
      if (!v.packageUrl.startsWith("https://") && !(loopback && v.packageUrl.startsWith(catalog.baseUrl))) {
        errors.push(`${mod.id}@${v.version}: packageUrl must be https`);
      }
      if (v.downloadEnabled && v.artifactStatus !== "published")
        errors.push(`${mod.id}@${v.version}: download enabled without a published artifact`);
      for (const dep of v.dependencies) {
        if (dep.modId === mod.id) errors.push(`${mod.id}@${v.version}: depends on itself`);
        else if (!ids.has(dep.modId) && !dep.optional)
          errors.push(`${mod.id}@${v.version}: dependency ${dep.modId} is not in the catalog`);
        if (semver.validRange(dep.versionRange) === null)
          errors.push(`${mod.id}@${v.version}: dependency range ${dep.versionRange} does not parse`);
      }
    });
    if (mod.versions[0] && mod.latestVersion !== mod.versions[0].version) {
      errors.push(
        `${mod.id}: latestVersion ${mod.latestVersion} is not the newest version ${mod.versions[0].version}`,
      );
    }
    if (!mod.versions.some((v) => v.downloadEnabled))
      errors.push(`${mod.id}: no downloadable version (not manager-installable)`);
  }
  return { ok: errors.length === 0, errors, mods: catalog.mods.length, versions, catalog };
}

/** What a manager keeps of the catalog between refreshes: the feed position and each mod's versions. */
export interface ManagerIndexState {
  catalogUrl: string;
  /** The changes feed sequence this state reflects (every change up to it is applied). */
  sequence: number;
  mods: Record<string, ManagerModState>;
}

export interface ManagerModState {
  latestVersion: string;
  /** sha256 of the exact versions.json bytes the versions came from (catalog.json's versionsSha256). */
  versionsSha256: string;
  versions: VersionRecord[];
}

export type ManagerFetch = (url: string) => Promise<Response>;

export interface ManagerRefresh {
  state: ManagerIndexState;
  /** current: nothing changed; changes: only changed mods were fetched; full: the whole index. */
  mode: "current" | "changes" | "full";
  changedMods: string[];
  /** Why a refresh fell back to a full fetch. */
  reason?: string;
}

class FetchFailed extends Error {}

async function fetchBytes(fetch: ManagerFetch, url: string): Promise<Uint8Array> {
  const response = await fetch(url);
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (!response.ok) throw new FetchFailed(`${url}: HTTP ${response.status}`);
  return bytes;
}

function parseDocument<T>(registry: SchemaRegistry, schema: SchemaName, url: string, bytes: Uint8Array): T {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw new FetchFailed(`${url}: not JSON`);
  }
  const result = registry.validate<T>(schema, value);
  if (!result.ok) throw new FetchFailed(`${url}: ${result.issues[0]?.path} ${result.issues[0]?.message}`);
  return result.value;
}

function baseOf(catalogUrl: string): string {
  return catalogUrl.replace(/\/api\/v1\/catalog\.json$/, "");
}

async function fetchModVersions(
  fetch: ManagerFetch,
  registry: SchemaRegistry,
  url: string,
): Promise<ManagerModState> {
  const bytes = await fetchBytes(fetch, url);
  const doc = parseDocument<ModVersionsDocument>(registry, "mod-versions", url, bytes);
  return {
    latestVersion: doc.latestVersion,
    versionsSha256: sha256Hex(bytes),
    versions: doc.versions,
  };
}

async function fetchChangesHead(
  fetch: ManagerFetch,
  registry: ReturnType<typeof schemaRegistry>,
  url: string,
): Promise<ChangesHeadDocument> {
  return parseDocument<ChangesHeadDocument>(registry, "changes-head", url, await fetchBytes(fetch, url));
}

/**
 * A full fetch: the changes head (for the sequence, read first so no later change is missed), the
 * catalog, and every mod's versions.json, each checked against the catalog's versionsSha256 (a
 * mismatch means the site changed mid-fetch or drifted; either way the read is refused).
 */
export async function fetchManagerIndex(catalogUrl: string, fetch: ManagerFetch): Promise<ManagerIndexState> {
  const registry = schemaRegistry(baseOf(catalogUrl));
  const urls = portalUrls(baseOf(catalogUrl));
  let sequence = 0;
  try {
    sequence = (await fetchChangesHead(fetch, registry, urls.changesHead)).sequence;
  } catch (error) {
    // A portal without a feed: the state starts at 0 and every refresh is a full fetch.
    if (!(error instanceof FetchFailed)) throw error;
  }
  const catalogText = new TextDecoder().decode(await fetchBytes(fetch, catalogUrl));
  const parsed = parseManagerCatalog(catalogText);
  if (!parsed.ok || !parsed.catalog)
    throw new Error(`${catalogUrl}: ${parsed.errors.slice(0, 5).join("; ")}`);
  const mods: Record<string, ManagerModState> = {};
  for (const mod of parsed.catalog.mods) {
    const state = await fetchModVersions(fetch, registry, mod.versionsUrl);
    if (state.versionsSha256 !== mod.versionsSha256)
      throw new Error(
        `${mod.versionsUrl} does not hash to the catalog's versionsSha256 ${mod.versionsSha256}`,
      );
    mods[mod.id] = state;
  }
  return { catalogUrl, sequence, mods };
}

/**
 * The cheap refresh: the changes head; when it moved, only the feed pages after this state's
 * sequence, then only the changed mods' versions.json. A full fetch when the feed is missing, was
 * reset, or no longer lists every change since this state's sequence.
 */
export async function refreshManagerIndex(
  state: ManagerIndexState,
  fetch: ManagerFetch,
): Promise<ManagerRefresh> {
  const registry = schemaRegistry(baseOf(state.catalogUrl));
  const urls = portalUrls(baseOf(state.catalogUrl));
  const full = async (reason: string): Promise<ManagerRefresh> => {
    const next = await fetchManagerIndex(state.catalogUrl, fetch);
    return { state: next, mode: "full", changedMods: Object.keys(next.mods), reason };
  };
  try {
    const head = await fetchChangesHead(fetch, registry, urls.changesHead);
    if (head.sequence === state.sequence) return { state, mode: "current", changedMods: [] };
    if (head.sequence < state.sequence)
      return await full(`the feed is at ${head.sequence}, behind this state`);
    if (state.sequence < head.firstSequence - 1)
      return await full(`the feed starts at ${head.firstSequence}, after this state's ${state.sequence}`);
    const latest = new Map<string, string | null>();
    let expected = state.sequence + 1;
    for (let page = pageOf(state.sequence + 1); page <= head.lastPage; page++) {
      const url = head.pageUrlTemplate.replace("{page}", String(page));
      const doc = parseDocument<ChangesPage>(registry, "changes-page", url, await fetchBytes(fetch, url));
      for (const entry of doc.entries) {
        if (entry.sequence < expected || entry.sequence > head.sequence) continue;
        if (entry.sequence !== expected)
          return await full(`the feed skips from ${expected - 1} to ${entry.sequence}`);
        latest.set(entry.modId, entry.latestVersion);
        expected++;
      }
    }
    if (expected !== head.sequence + 1)
      return await full(`the feed ends at ${expected - 1}, not ${head.sequence}`);
    const mods = { ...state.mods };
    for (const [modId, latestVersion] of latest) {
      if (latestVersion === null) delete mods[modId];
      else mods[modId] = await fetchModVersions(fetch, registry, urls.modVersions(modId));
    }
    return {
      state: { ...state, sequence: head.sequence, mods },
      mode: "changes",
      changedMods: [...latest.keys()],
    };
  } catch (error) {
    if (error instanceof FetchFailed) return await full(error.message);
    throw error;
  }
}
