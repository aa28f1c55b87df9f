import { readFileSync } from "node:fs";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join } from "node:path";

/**
 * The guides of the code this server runs (docs/*.md), at /docs/{name}.md. A portal on this machine
 * (a loopback baseUrl) links its pages' "modder's guide" and reason links here: the GitHub links a
 * public portal uses name portal.config.json's repository, which in a fresh checkout is still the
 * template's placeholder, so they led nowhere. Sent as plain text (a browser shows text/markdown
 * as a download); the sources (src/http) and the bundle (dist/) each find docs/ beside them.
 */
const DOCS_DIRS = [join(import.meta.dirname, "..", "..", "docs"), join(import.meta.dirname, "..", "docs")];
const GUIDE_PATH = /^\/docs\/([a-z][a-z0-9-]*\.md)$/;

/** Answers GET/HEAD /docs/{name}.md when that guide exists; false otherwise (the site goes on). */
export function serveGuide(req: IncomingMessage, res: ServerResponse, pathname: string): boolean {
  const name = GUIDE_PATH.exec(pathname)?.[1];
  if (!name) return false;
  for (const dir of DOCS_DIRS) {
    let body: Buffer;
    try {
      body = readFileSync(join(dir, name));
    } catch {
      continue;
    }
    res.writeHead(200, {
      "content-type": "text/plain; charset=utf-8",
      "content-length": body.length,
      "cache-control": "no-cache",
    });
    res.end(req.method === "HEAD" ? undefined : body);
    return true;
  }
  return false;
}
