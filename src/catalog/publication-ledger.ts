/**
 * The publish pipeline's memory of one submitted version, beside its release record:
 * records/publication/{shard}/{modId}/{version}.json (RECORD_PATHS.ledger), committed with records/ and site/ by the same catalog
 * commit. It holds what the next run must know and the release record cannot say:
 *
 * - `refusal`: why the sidecar was not published, when, how often, and when it may be judged again.
 *   A later run does not download, scan or read the pull request of a refused sidecar until something
 *   changes (its file, the bot's state, a `/svc revalidate`) or its backoff ends.
 * - `visibility`: the moderator's hide or unhide the pipeline applied (the sealed state's time), so
 *   every run can apply a newer one and never undoes a hide that came from elsewhere (the CLI, an
 *   admin); and the withdrawal of the version's bytes from GitHub Releases.
 *
 * No JSON Schema describes it: the file is the pipeline's private state, read only by this module,
 * which is strict. A file it cannot read counts as absent, which only ever costs a judgement again
 * (a refused sidecar is judged afresh, a hidden version is not unhidden): never a publication.
 */
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { writeFileAtomic } from "../lib/atomic-write.ts";
import { parseUntrustedJson } from "../lib/untrusted-json.ts";
import { RECORD_PATHS } from "../contracts/records.ts";
import { layoutOutdated } from "./records.ts";

export const LEDGER_SCHEMA = "svc.publication-ledger.v1";
export const LEDGER_DIR = RECORD_PATHS.publicationDir;

export interface RefusalEntry {
  code: string;
  message: string;
  /** Not in the package or the approval: the same bytes may pass on a later run (a scanner outage). */
  retryable: boolean;
  pullRequest: number | null;
  /** The pull request's author or the person the app's record names, when known: who may ask for a retry. */
  submitter: string | null;
  /** git's blob sha of the sidecar that was refused: another file is judged at once. */
  sidecarBlob: string;
  /** The bot's sealed state of the pull request when it was refused (null when none was read). */
  state: string | null;
  firstRefusedAt: string;
  refusedAt: string;
  /** How many judgements in a row ended in a refusal (the backoff grows with it). */
  attempts: number;
  /** Not judged again before this, unless something changed. */
  retryAt: string;
}

export type WithdrawalOutcome = "deleted" | "gone" | "never_stored" | "not_ours";

export interface VisibilityDecision {
  state: "hidden" | "published";
  pullRequest: number;
  /** The `at` of the app's sealed status comment that decided it: an older one never overrides it. */
  decidedAt: string;
  appliedAt: string;
  /** What the hide did to the version's GitHub release (null for an unhide). */
  withdrawal: { outcome: WithdrawalOutcome; tag: string; at: string } | null;
  /** The sealed unhide that was refused because the bytes are withdrawn (answered once). */
  unhideRefusedAt: string | null;
}

export interface LedgerEntry {
  schema: typeof LEDGER_SCHEMA;
  modId: string;
  version: string;
  refusal: RefusalEntry | null;
  visibility: VisibilityDecision | null;
}

/** Path below records/. */
export function ledgerPath(modId: string, version: string): string {
  return RECORD_PATHS.ledger(modId, version);
}

export function emptyLedgerEntry(modId: string, version: string): LedgerEntry {
  return { schema: LEDGER_SCHEMA, modId, version, refusal: null, visibility: null };
}

const isString = (v: unknown): v is string => typeof v === "string";
const isTime = (v: unknown): v is string => isString(v) && !Number.isNaN(Date.parse(v));
const isCount = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const hasOnly = (v: Record<string, unknown>, keys: readonly string[]) =>
  Object.keys(v).every((k) => keys.includes(k));

function readRefusal(v: unknown): RefusalEntry | null | undefined {
  if (v === null) return null;
  if (!isObject(v)) return undefined;
  const keys = [
    "code",
    "message",
    "retryable",
    "pullRequest",
    "submitter",
    "sidecarBlob",
    "state",
    "firstRefusedAt",
    "refusedAt",
    "attempts",
    "retryAt",
  ] as const;
  if (!hasOnly(v, keys)) return undefined;
  const ok =
    isString(v.code) &&
    /^[a-z][a-z0-9_]*$/.test(v.code) &&
    isString(v.message) &&
    typeof v.retryable === "boolean" &&
    (v.pullRequest === null || (isCount(v.pullRequest) && v.pullRequest > 0)) &&
    (v.submitter === null || isString(v.submitter)) &&
    isString(v.sidecarBlob) &&
    /^[0-9a-f]{40}$/.test(v.sidecarBlob) &&
    (v.state === null || isString(v.state)) &&
    isTime(v.firstRefusedAt) &&
    isTime(v.refusedAt) &&
    isCount(v.attempts) &&
    isTime(v.retryAt);
  return ok ? (v as unknown as RefusalEntry) : undefined;
}

const OUTCOMES: readonly WithdrawalOutcome[] = ["deleted", "gone", "never_stored", "not_ours"];

function readVisibility(v: unknown): VisibilityDecision | null | undefined {
  if (v === null) return null;
  if (!isObject(v)) return undefined;
  if (!hasOnly(v, ["state", "pullRequest", "decidedAt", "appliedAt", "withdrawal", "unhideRefusedAt"]))
    return undefined;
  const w = v.withdrawal;
  const withdrawalOk =
    w === null ||
    (isObject(w) &&
      hasOnly(w, ["outcome", "tag", "at"]) &&
      OUTCOMES.includes(w.outcome as WithdrawalOutcome) &&
      isString(w.tag) &&
      isTime(w.at));
  const ok =
    (v.state === "hidden" || v.state === "published") &&
    isCount(v.pullRequest) &&
    (v.pullRequest as number) > 0 &&
    isTime(v.decidedAt) &&
    isTime(v.appliedAt) &&
    withdrawalOk &&
    (v.unhideRefusedAt === null || isTime(v.unhideRefusedAt));
  return ok ? (v as unknown as VisibilityDecision) : undefined;
}

/** The entry of a version, or null when there is none or it cannot be read (module comment). */
export function readLedgerEntry(recordsDir: string, modId: string, version: string): LedgerEntry | null {
  const path = join(recordsDir, ledgerPath(modId, version));
  if (!existsSync(path)) {
    // Before sharding: records/publication/{modId}/{version}.json.
    const old = `${LEDGER_DIR}/${modId}/${version}.json`;
    if (existsSync(join(recordsDir, old))) throw layoutOutdated(recordsDir, old);
    return null;
  }
  const parsed = parseUntrustedJson(readFileSync(path), { maxBytes: 64 * 1024, maxDepth: 8 });
  if (!parsed.ok || !isObject(parsed.value)) return null;
  const v = parsed.value;
  if (!hasOnly(v, ["schema", "modId", "version", "refusal", "visibility"])) return null;
  if (v.schema !== LEDGER_SCHEMA || v.modId !== modId || v.version !== version) return null;
  const refusal = readRefusal(v.refusal ?? null);
  const visibility = readVisibility(v.visibility ?? null);
  if (refusal === undefined || visibility === undefined) return null;
  return { schema: LEDGER_SCHEMA, modId, version, refusal, visibility };
}

/** Writes the entry atomically; an entry that holds nothing any more is removed. */
export function writeLedgerEntry(recordsDir: string, entry: LedgerEntry): void {
  const path = join(recordsDir, ledgerPath(entry.modId, entry.version));
  if (entry.refusal === null && entry.visibility === null) {
    rmSync(path, { force: true });
    return;
  }
  mkdirSync(dirname(path), { recursive: true });
  writeFileAtomic(path, `${JSON.stringify(entry, null, 2)}\n`);
}
