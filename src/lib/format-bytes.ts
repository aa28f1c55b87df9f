/**
 * Sizes as the pages and the release diff write them: deterministic (no locale), so a rebuild
 * writes the same bytes; a negative size (a shrink) keeps its sign.
 */
export function formatBytes(bytes: number): string {
  const magnitude = Math.abs(bytes);
  if (magnitude < 1024) return `${bytes} bytes`;
  const units = ["KiB", "MiB", "GiB"];
  let value = magnitude / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${bytes < 0 ? "-" : ""}${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}
