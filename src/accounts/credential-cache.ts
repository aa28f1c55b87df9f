/**
 * The in-process memory of credentials that were verified against the store: API keys and session
 * ids, keyed by their SHA-256 hash (the plaintext never enters the cache, as it never enters the
 * database). Bounded in two ways: at most `maxEntries` per kind, least recently used out first, and
 * a lifetime of `ttlMs` after which the store is asked again.
 *
 * The lifetime is the revocation bound across processes: a key revoked, a session ended or a role
 * changed through another instance is seen here within `ttlMs`. Through this process the change
 * evicts at once (accounts.ts, sessions.ts and api-keys.ts call forget*).
 */
export interface CredentialCacheOptions {
  /** Entries per kind (API keys, sessions). */
  maxEntries?: number;
  /** How long a verified credential is trusted without asking the store again. */
  ttlMs?: number;
  now: () => Date;
}

/** 30 s: short enough to be the whole revocation delay across instances, long enough for hot keys. */
export const CREDENTIAL_CACHE_TTL_MS = 30_000;
export const CREDENTIAL_CACHE_MAX_ENTRIES = 10_000;

interface Entry<V> {
  value: V;
  /** Epoch ms after which the entry is stale. */
  staleAt: number;
}

/** A Map in least-recently-used order (a hit is re-inserted at the end), capped and timed. */
export class LruTtlMap<V> {
  private readonly entries = new Map<string, Entry<V>>();

  constructor(
    private readonly maxEntries: number,
    private readonly ttlMs: number,
    private readonly now: () => Date,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (this.now().getTime() >= entry.staleAt) {
      this.entries.delete(key);
      return undefined;
    }
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Stores a value for at most ttlMs, or less when `notAfter` (epoch ms) comes first. */
  set(key: string, value: V, notAfter = Number.POSITIVE_INFINITY): void {
    this.entries.delete(key);
    this.entries.set(key, { value, staleAt: Math.min(this.now().getTime() + this.ttlMs, notAfter) });
    while (this.entries.size > this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  /** Revocations are rare and the map is bounded, so a scan beats a second index to keep in step. */
  deleteWhere(predicate: (value: V) => boolean): number {
    let removed = 0;
    for (const [key, entry] of this.entries) {
      if (predicate(entry.value)) {
        this.entries.delete(key);
        removed += 1;
      }
    }
    return removed;
  }

  clear(): void {
    this.entries.clear();
  }
}

/** The two credential kinds AccountService caches, with the evictions its writes need. */
export class CredentialCache<ApiKeyValue extends CachedApiKey, SessionValue extends CachedSession> {
  readonly apiKeys: LruTtlMap<ApiKeyValue>;
  readonly sessions: LruTtlMap<SessionValue>;
  readonly ttlMs: number;
  /**
   * Moves on every eviction. A lookup remembers it before asking the store and caches its row only
   * if it has not moved, so a row read just before a revocation committed is never kept.
   */
  epoch = 0;

  constructor(options: CredentialCacheOptions) {
    const max = options.maxEntries ?? CREDENTIAL_CACHE_MAX_ENTRIES;
    this.ttlMs = options.ttlMs ?? CREDENTIAL_CACHE_TTL_MS;
    this.apiKeys = new LruTtlMap(max, this.ttlMs, options.now);
    this.sessions = new LruTtlMap(max, this.ttlMs, options.now);
  }

  forgetApiKey(apiKeyId: string): void {
    this.epoch += 1;
    this.apiKeys.deleteWhere((entry) => entry.apiKeyId === apiKeyId);
  }

  forgetSession(sessionHash: string): void {
    this.epoch += 1;
    this.sessions.delete(sessionHash);
  }

  /** An account's roles or verification changed: every credential that carries its copy goes. */
  forgetAccount(accountId: string): void {
    this.epoch += 1;
    this.apiKeys.deleteWhere((entry) => entry.accountId === accountId);
    this.sessions.deleteWhere((entry) => entry.accountId === accountId);
  }

  clear(): void {
    this.epoch += 1;
    this.apiKeys.clear();
    this.sessions.clear();
  }
}

export interface CachedApiKey {
  apiKeyId: string;
  accountId: string;
  /** The stored hash, compared in constant time on every hit, as the database row is. */
  keyHash: string;
}

export interface CachedSession {
  accountId: string;
  idHash: string;
}

/**
 * lastUsedAt bookkeeping off the request path: a key is marked at most once per `intervalMs`, marks
 * are written in one statement by `flush()`, which a short timer or shutdown calls. A failed write
 * is logged and dropped (lastUsedAt is informational), never surfaced to a request.
 */
export class UsageRecorder {
  private readonly lastMarked: LruTtlMap<number>;
  private pending = new Map<string, Date>();
  private timer: ReturnType<typeof setTimeout> | null = null;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly options: {
      intervalMs: number;
      /** Delay between the first mark and its write; marks arriving meanwhile share the statement. */
      flushDelayMs: number;
      maxEntries: number;
      now: () => Date;
      write: (marks: ReadonlyMap<string, Date>) => Promise<void>;
      log: (line: string) => void;
    },
  ) {
    // Remembering a mark longer than the interval is pointless: after it the key is marked again.
    this.lastMarked = new LruTtlMap(options.maxEntries, options.intervalMs, options.now);
  }

  /** `storedAt`: what the store last said (null: never used), so a fresh process does not rewrite it. */
  mark(id: string, storedAt: Date | null): void {
    const now = this.options.now();
    const remembered = this.lastMarked.get(id);
    const last = remembered ?? storedAt?.getTime() ?? null;
    if (last !== null && now.getTime() - last < this.options.intervalMs) {
      if (remembered === undefined) this.lastMarked.set(id, last, last + this.options.intervalMs);
      return;
    }
    this.lastMarked.set(id, now.getTime());
    this.pending.set(id, now);
    if (!this.timer) {
      this.timer = setTimeout(() => {
        this.timer = null;
        void this.flush();
      }, this.options.flushDelayMs);
      this.timer.unref?.();
    }
  }

  /** Writes every pending mark; resolves when they (and any write already running) are done. */
  flush(): Promise<void> {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const marks = this.pending;
    this.pending = new Map();
    this.writing = this.writing.then(async () => {
      if (marks.size === 0) return;
      try {
        await this.options.write(marks);
      } catch (error) {
        this.options.log(
          `lastUsedAt: ${marks.size} mark(s) not written: ${error instanceof Error ? error.message : String(error)}`,
        );
      }
    });
    return this.writing;
  }
}
