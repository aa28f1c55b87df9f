import type { CliIo } from "./io.ts";

/** What a long step reports: its phase and how many of its bytes are done. */
export interface ByteProgress {
  phase: string;
  doneBytes: number;
  totalBytes: number;
}

/**
 * A progress bar on stderr for a step that reports bytes in phases: one bar a phase, its name
 * padded to `phaseWidth`, done and total in MiB; each bar clears when its phase completes. The caller
 * decides whether one is worth drawing (a terminal, enough bytes).
 */
export async function byteProgressBar(io: CliIo, phaseWidth: number): Promise<(p: ByteProgress) => void> {
  const { default: cliProgress } = await import("cli-progress");
  const bar = new cliProgress.SingleBar(
    {
      stream: io.stderr,
      format: "{phase} [{bar}] {percentage}% {doneMiB}/{totalMiB} MiB",
      clearOnComplete: true,
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  let phase = "";
  const mib = (n: number) => (n / 1048576).toFixed(1);
  return (p) => {
    if (p.phase !== phase) {
      if (phase) bar.stop();
      phase = p.phase;
      bar.start(p.totalBytes, 0, {
        phase: phase.padEnd(phaseWidth),
        doneMiB: "0.0",
        totalMiB: mib(p.totalBytes),
      });
    }
    bar.update(p.doneBytes, {
      phase: phase.padEnd(phaseWidth),
      doneMiB: mib(p.doneBytes),
      totalMiB: mib(p.totalBytes),
    });
    if (p.doneBytes >= p.totalBytes) bar.stop();
  };
}
