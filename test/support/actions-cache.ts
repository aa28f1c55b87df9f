/**
 * The Actions cache as actions/cache/restore and actions/cache/save see it (a fake, named as one):
 * an entry is a folder saved under a key and never changed afterwards; a restore takes the exact key
 * or else the newest entry whose key starts with the key, then with each restore key in their order; a save
 * under a key that exists is refused with a warning and fails nothing, as the action does. Stand-ins
 * for workflow-job.ts, keyed by the action's name.
 */
import { cpSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { StandIn } from "./workflow-job.ts";

interface Entry {
  key: string;
  dir: string;
  created: number;
}

export class ActionsCache {
  readonly entries: Entry[] = [];
  readonly warnings: string[] = [];
  private clock = 0;

  /** An entry an earlier run saved. */
  seed(key: string, from: string): void {
    this.put(key, from);
  }

  private put(key: string, from: string): void {
    const dir = mkdtempSync(join(tmpdir(), "svc-cache-entry-"));
    cpSync(from, dir, { recursive: true });
    this.entries.push({ key, dir, created: ++this.clock });
  }

  private find(key: string, restoreKeys: string[]): Entry | undefined {
    const exact = this.entries.find((e) => e.key === key);
    if (exact) return exact;
    // GitHub's docs (dependency caching, "cache action usage"): with no exact match the primary key
    // is matched as a prefix too, before the restore keys in their order.
    for (const prefix of [key, ...restoreKeys]) {
      const match = this.entries
        .filter((e) => e.key.startsWith(prefix))
        .sort((a, b) => b.created - a.created)[0];
      if (match) return match;
    }
    return undefined;
  }

  standIns(): Record<string, StandIn> {
    return {
      "actions/cache/restore": async (inputs): Promise<Record<string, string>> => {
        const restoreKeys = (inputs["restore-keys"] ?? "")
          .split("\n")
          .map((k) => k.trim())
          .filter(Boolean);
        const entry = this.find(inputs.key ?? "", restoreKeys);
        const primary = inputs.key ?? "";
        if (!entry) return { "cache-hit": "false", "cache-primary-key": primary };
        rmSync(inputs.path!, { recursive: true, force: true });
        cpSync(entry.dir, inputs.path!, { recursive: true });
        return {
          "cache-hit": String(entry.key === primary),
          "cache-primary-key": primary,
          "cache-matched-key": entry.key,
        };
      },
      "actions/cache/save": async (inputs) => {
        if (this.entries.some((e) => e.key === inputs.key)) {
          this.warnings.push(`Failed to save: Unable to reserve cache with key ${inputs.key}`);
          return {};
        }
        if (!existsSync(inputs.path!)) {
          this.warnings.push(`Path Validation Error: ${inputs.path} does not exist`);
          return {};
        }
        this.put(inputs.key!, inputs.path!);
        return {};
      },
    };
  }

  cleanup(): void {
    for (const e of this.entries) rmSync(e.dir, { recursive: true, force: true });
  }
}
