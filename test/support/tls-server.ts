import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TlsServer {
  url: string;
  /** The self-signed certificate, for NODE_EXTRA_CA_CERTS of the child process. */
  caFile: string;
  /** The path of every request, in order (a download counter). */
  requests: string[];
  stop(): Promise<void>;
}

/**
 * An https server on 127.0.0.1 with a certificate made at test time (openssl): sidecars may only
 * name https package URLs, so a runner-style publication downloads from here. The child trusts the
 * certificate through NODE_EXTRA_CA_CERTS; nothing else is relaxed.
 */
export async function startTlsServer(files: Record<string, Buffer>): Promise<TlsServer> {
  const dir = mkdtempSync(join(tmpdir(), "svc-tls-"));
  const key = join(dir, "key.pem");
  const cert = join(dir, "cert.pem");
  execFileSync(
    "openssl",
    [
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-days",
      "1",
      "-subj",
      "/CN=127.0.0.1",
      "-addext",
      "subjectAltName=IP:127.0.0.1",
      "-keyout",
      key,
      "-out",
      cert,
    ],
    { stdio: "ignore" },
  );
  const requests: string[] = [];
  const server: Server = createServer({ key: readFileSync(key), cert: readFileSync(cert) }, (req, res) => {
    const path = new URL(req.url ?? "/", "https://127.0.0.1").pathname;
    requests.push(path);
    const body = files[path];
    if (!body) return void res.writeHead(404).end();
    res
      .writeHead(200, { "content-type": "application/zip", "content-length": String(body.length) })
      .end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    caFile: cert,
    requests,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
