/** Deterministic formatting (no locale or clock), so a rebuild writes the same bytes. */

export { formatBytes } from "../lib/format-bytes.ts";

export function groupDigits(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
}

/** YYYY-MM-DD of an ISO timestamp (UTC). */
export function formatDate(iso: string): string {
  return /^\d{4}-\d{2}-\d{2}/.exec(iso)?.[0] ?? iso;
}

export function plural(count: number, one: string, many = `${one}s`): string {
  return `${groupDigits(count)} ${count === 1 ? one : many}`;
}
