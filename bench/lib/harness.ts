/**
 * What every bench shares: paired runs of a baseline and a subject (A B A B ...) with the ratio
 * taken pair by pair, min/median/max of each side and of the ratios, a verdict per goal, and a
 * plain table. A verdict that says MISSED sets `process.exitCode = 1`, so no bench can print a
 * missed goal and exit 0.
 *
 * Why pairs: this machine is shared, and its speed drifts by 2-3x within a minute. A baseline timed
 * in one block and the subject in another measures the drift as much as the code (20,000 entries
 * read 2.49x, 1.76x and 3.34x on the same code). Neighbouring runs see nearly the same machine, so
 * each pair's ratio is steadier than the ratio of two medians taken minutes apart.
 */

export interface Stats {
  min: number;
  median: number;
  max: number;
  /** How many values the figures summarize. */
  n: number;
}

export function median(values: readonly number[]): number {
  return summarize(values).median;
}

/** min/median/max; the median of an even count is the lower middle value (a value that was measured). */
export function summarize(values: readonly number[]): Stats {
  if (values.length === 0) throw new Error("no values to summarize");
  const sorted = [...values].sort((a, b) => a - b);
  return {
    min: sorted[0]!,
    median: sorted[Math.floor((sorted.length - 1) / 2)]!,
    max: sorted.at(-1)!,
    n: sorted.length,
  };
}

export interface PairedResult<A, B> {
  baseline: Stats;
  subject: Stats;
  /** subject / baseline, pair by pair. */
  ratio: Stats;
  /** Each run's own result, in order (for what a run reports beside its time). */
  runs: Array<{ baseline: A; subject: B }>;
}

/**
 * Runs baseline and subject alternately, `runs` pairs (A B A B ...), each returning its measured
 * value (seconds, bytes/s, ...) through `value`. The ratio of every pair is subject / baseline.
 */
export async function runPairs<A, B>(options: {
  runs: number;
  baseline: () => Promise<A> | A;
  subject: () => Promise<B> | B;
  baselineValue: (result: A) => number;
  subjectValue: (result: B) => number;
}): Promise<PairedResult<A, B>> {
  const runs: Array<{ baseline: A; subject: B }> = [];
  for (let i = 0; i < options.runs; i++) {
    const baseline = await options.baseline();
    const subject = await options.subject();
    runs.push({ baseline, subject });
  }
  const a = runs.map((r) => options.baselineValue(r.baseline));
  const b = runs.map((r) => options.subjectValue(r.subject));
  return {
    baseline: summarize(a),
    subject: summarize(b),
    ratio: summarize(b.map((value, i) => value / a[i]!)),
    runs,
  };
}

/** Runs one thing `runs` times; its values' min/median/max and every result. */
export async function repeat<T>(
  runs: number,
  run: (index: number) => Promise<T> | T,
  value: (result: T) => number,
): Promise<{ stats: Stats; results: T[] }> {
  const results: T[] = [];
  for (let i = 0; i < runs; i++) results.push(await run(i));
  return { stats: summarize(results.map(value)), results };
}

/** "median (min-max)" with a unit; one value prints alone. */
export function describeStats(stats: Stats, format: (n: number) => string): string {
  if (stats.n === 1) return format(stats.median);
  return `${format(stats.median)} (${format(stats.min)}-${format(stats.max)})`;
}

const verdicts = { met: 0, missed: [] as string[] };

/**
 * MET or MISSED beside a goal; a MISSED sets the exit code to 1. `what` names the row in the
 * closing summary.
 */
export function verdict(met: boolean, goal: string, what = goal): string {
  return `${judge(met, what)} (goal ${goal})`;
}

/** verdict() without the goal's text, for a table that prints the goal in its own column. */
export function judge(met: boolean, what: string): "MET" | "MISSED" {
  if (met) {
    verdicts.met++;
    return "MET";
  }
  verdicts.missed.push(what);
  process.exitCode = 1;
  return "MISSED";
}

/** The closing line: how many goals were met and which were missed (the exit code follows it). */
export function verdictSummary(): string {
  const { met, missed } = verdicts;
  if (missed.length === 0) return `goals: ${met} met, none missed (exit 0)`;
  return `goals: ${met} met, ${missed.length} MISSED (exit 1): ${missed.join("; ")}`;
}

export function printTable(head: string[], rows: string[][]): void {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join("  ")
      .trimEnd();
  console.log(line(head));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of rows) console.log(line(r));
}

export function fmt(n: number, digits = 2): string {
  return n.toFixed(digits);
}
