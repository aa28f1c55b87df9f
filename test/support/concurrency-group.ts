/**
 * GitHub's concurrency rule for one group with `cancel-in-progress: false` (publish.yml's and
 * sync.yml's `publish` group), as GitHub documents it: "there can be at most one running and one
 * pending job in a concurrency group at any time. When a concurrent job or workflow is queued, if
 * another job or workflow using the same concurrency group in the repository is in progress, the
 * queued job or workflow will be pending. Any existing pending job or workflow in the same
 * concurrency group, if it exists, will be canceled and the new queued job or workflow will take its
 * place." A cancelled pending run never starts. A fake of Actions' scheduler, named as one.
 */
export type RunConclusion<T> =
  | { run: string; conclusion: "completed"; result: T }
  | { run: string; conclusion: "failed"; error: unknown }
  | { run: string; conclusion: "cancelled" };

interface Queued<T> {
  name: string;
  start: () => Promise<T>;
  settle: (outcome: RunConclusion<T>) => void;
}

export class ConcurrencyGroup<T> {
  private running: Queued<T> | null = null;
  private pending: Queued<T> | null = null;
  /** Every run in the order it was queued, and how it ended (filled as they end). */
  readonly log: Array<{ run: string; event: "queued" | "started" | "cancelled" | "completed" }> = [];

  constructor(readonly name: string) {}

  /** Queues a run; resolves when it completed or was cancelled while pending. */
  queue(name: string, start: () => Promise<T>): Promise<RunConclusion<T>> {
    return new Promise((settle) => {
      const run: Queued<T> = { name, start, settle };
      this.log.push({ run: name, event: "queued" });
      if (!this.running) {
        this.begin(run);
        return;
      }
      if (this.pending) {
        this.log.push({ run: this.pending.name, event: "cancelled" });
        this.pending.settle({ run: this.pending.name, conclusion: "cancelled" });
      }
      this.pending = run;
    });
  }

  private begin(run: Queued<T>): void {
    this.running = run;
    this.log.push({ run: run.name, event: "started" });
    run
      .start()
      .then(
        (result) => {
          this.log.push({ run: run.name, event: "completed" });
          run.settle({ run: run.name, conclusion: "completed", result });
        },
        (error: unknown) => {
          this.log.push({ run: run.name, event: "completed" });
          run.settle({ run: run.name, conclusion: "failed", error });
        },
      )
      .finally(() => {
        this.running = null;
        const next = this.pending;
        this.pending = null;
        if (next) this.begin(next);
      });
  }
}
