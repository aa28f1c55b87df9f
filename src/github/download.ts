import { createHash } from "node:crypto";

export type FetchLike = (
  url: string,
  init?: { headers?: Record<string, string>; redirect?: "follow"; signal?: AbortSignal },
) => Promise<Response>;

export type DownloadResult =
  | { ok: true; bytes: Buffer; sha256: string; sizeBytes: number }
  | { ok: false; code: "download_failed" | "package_too_large" | "download_url_invalid"; message: string };

/**
 * Downloads a public https asset with a hard byte cap enforced while streaming: one byte over the
 * cap aborts the transfer before anything is kept (a lying or missing Content-Length changes nothing).
 */
export async function downloadCapped(
  url: string,
  maxBytes: number,
  fetchImpl: FetchLike = fetch,
  options: { allowHttp?: boolean } = {},
): Promise<DownloadResult> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { ok: false, code: "download_url_invalid", message: `${url} is not a URL` };
  }
  if (parsed.protocol !== "https:" && !(options.allowHttp && parsed.protocol === "http:")) {
    return { ok: false, code: "download_url_invalid", message: `${url} is not an https URL` };
  }
  const controller = new AbortController();
  let response: Response;
  try {
    response = await fetchImpl(url, {
      redirect: "follow",
      signal: controller.signal,
      headers: { accept: "application/octet-stream" },
    });
  } catch (error) {
    return { ok: false, code: "download_failed", message: `GET ${url} failed: ${(error as Error).message}` };
  }
  if (!response.ok || !response.body) {
    return { ok: false, code: "download_failed", message: `GET ${url} answered ${response.status}` };
  }
  const declared = Number(response.headers.get("content-length") ?? "NaN");
  if (Number.isFinite(declared) && declared > maxBytes) {
    controller.abort();
    return {
      ok: false,
      code: "package_too_large",
      message: `${url} is ${declared} bytes; the limit is ${maxBytes}`,
    };
  }
  const hash = createHash("sha256");
  const chunks: Buffer[] = [];
  let total = 0;
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        controller.abort();
        return {
          ok: false,
          code: "package_too_large",
          message: `${url} is over ${maxBytes} bytes; the download was stopped`,
        };
      }
      hash.update(value);
      chunks.push(Buffer.from(value));
    }
  } catch (error) {
    return {
      ok: false,
      code: "download_failed",
      message: `reading ${url} failed: ${(error as Error).message}`,
    };
  }
  return { ok: true, bytes: Buffer.concat(chunks, total), sha256: hash.digest("hex"), sizeBytes: total };
}
