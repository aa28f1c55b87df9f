import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import * as net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createClamdScanner, parseClamdTarget } from "../../src/validation/antivirus/clamd.ts";
import { createClamscanScanner } from "../../src/validation/antivirus/clamscan.ts";
import { parseClamResult } from "../../src/validation/antivirus/scanner.ts";
import { tarChunks } from "../../src/validation/antivirus/tar-batch.ts";
import {
  clamdPath,
  clamscanPath,
  eicar,
  makeSignatureDatabase,
  type RunningClamd,
  SIGNATURE_NAME,
  shouldSkip,
  startClamd,
} from "./clamav.ts";
import { buildZip } from "./zip-builder.ts";

const clean = Buffer.from("just an ordinary text file\n".repeat(100));
const deflatedPackage = () =>
  buildZip([
    { name: "readme.txt", data: clean },
    { name: "x.txt", data: eicar(), method: 8 },
  ]);
const nestedPackage = () =>
  buildZip([{ name: "inner.zip", data: buildZip([{ name: "deep/x.txt", data: eicar() }]), method: 8 }]);

describe("parsing ClamAV answers", () => {
  it("understands OK, FOUND and ERROR, and treats anything else as an error", () => {
    expect(parseClamResult("OK")).toEqual({ status: "clean" });
    expect(parseClamResult(" Eicar-Sig FOUND\0")).toEqual({ status: "infected", signature: "Eicar-Sig" });
    expect(parseClamResult("INSTREAM size limit exceeded. ERROR")).toMatchObject({ status: "error" });
    expect(parseClamResult("")).toMatchObject({ status: "error" });
    expect(parseClamResult("PONG")).toMatchObject({ status: "error" });
  });

  it("parses clamd addresses", () => {
    expect(parseClamdTarget("/run/clamav/clamd.ctl")).toEqual({
      kind: "unix",
      path: "/run/clamav/clamd.ctl",
    });
    expect(parseClamdTarget("unix:/tmp/c.sock")).toEqual({ kind: "unix", path: "/tmp/c.sock" });
    expect(parseClamdTarget("127.0.0.1:3310")).toEqual({ kind: "tcp", host: "127.0.0.1", port: 3310 });
    expect(parseClamdTarget("tcp://clamav:3310")).toEqual({ kind: "tcp", host: "clamav", port: 3310 });
    expect(() => parseClamdTarget("host:99999")).toThrow();
  });
});

describe.skipIf(shouldSkip(clamdPath, "clamd"))("clamd adapter (real clamd, test signature database)", () => {
  let clamd: RunningClamd;
  let port: number;
  beforeAll(async () => {
    port = 20000 + Math.floor(Math.random() * 20000);
    clamd = await startClamd({ tcpPort: port });
  });
  afterAll(async () => {
    await clamd?.stop();
  });

  it("answers clean for clean bytes and names the signature for EICAR, over a unix socket", async () => {
    const scanner = createClamdScanner({ kind: "unix", path: clamd.socket });
    expect(await scanner.ping()).toBe(true);
    expect(await scanner.scan("clean.txt", clean)).toEqual({ status: "clean" });
    const hit = await scanner.scan("x.txt", eicar());
    expect(hit.status).toBe("infected");
    expect(hit.signature).toContain(SIGNATURE_NAME);
  });

  it("finds EICAR deflated inside a ZIP and nested in a ZIP inside a ZIP, over TCP", async () => {
    const scanner = createClamdScanner({ kind: "tcp", host: "127.0.0.1", port });
    expect((await scanner.scan("pkg.zip", deflatedPackage())).status).toBe("infected");
    expect((await scanner.scan("pkg.zip", nestedPackage())).status).toBe("infected");
    expect((await scanner.scan("pkg.zip", buildZip([{ name: "a.txt", data: clean }]))).status).toBe("clean");
  });

  it("streams large inputs in chunks", async () => {
    const scanner = createClamdScanner({ kind: "unix", path: clamd.socket }, { chunkBytes: 64 * 1024 });
    const big = Buffer.concat([Buffer.alloc(5 * 1024 * 1024, 0x20), eicar()]);
    expect((await scanner.scan("big", big)).status).toBe("infected");
  });

  it("fails closed when the stream exceeds clamd's StreamMaxLength", async () => {
    const small = await startClamd({ streamMaxLength: "1M" });
    try {
      const r = await createClamdScanner({ kind: "unix", path: small.socket }).scan(
        "big",
        Buffer.alloc(3 * 1024 * 1024, 1),
      );
      expect(r.status).toBe("error");
      expect(r.message).toMatch(/size limit/i);
    } finally {
      await small.stop();
    }
  });

  it("fails closed once the daemon is stopped", async () => {
    const other = await startClamd();
    const scanner = createClamdScanner({ kind: "unix", path: other.socket });
    expect((await scanner.scan("a", clean)).status).toBe("clean");
    await other.stop();
    const r = await scanner.scan("a", clean);
    expect(r).toMatchObject({ status: "error", errorKind: "unreachable" });
  });
});

describe("clamd adapter failure modes without clamd", () => {
  it("fails closed on a refused TCP connection", async () => {
    const server = net.createServer();
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as net.AddressInfo;
    await new Promise<void>((r) => server.close(() => r()));
    const r = await createClamdScanner({ kind: "tcp", host: "127.0.0.1", port }).scan("a", clean);
    expect(r).toMatchObject({ status: "error", errorKind: "unreachable" });
  });

  it("fails closed when the daemon never answers (a silent loopback server stands in for a hung clamd)", async () => {
    const sockets: net.Socket[] = [];
    const server = net.createServer((s) => {
      sockets.push(s);
      s.on("data", () => {});
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as net.AddressInfo;
    try {
      const r = await createClamdScanner({ kind: "tcp", host: "127.0.0.1", port }, { timeoutMs: 300 }).scan(
        "a",
        clean,
      );
      expect(r).toMatchObject({ status: "error", errorKind: "timeout" });
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it("fails closed when the connection closes without an answer", async () => {
    const sockets: net.Socket[] = [];
    const server = net.createServer((s) => {
      sockets.push(s);
      s.on("error", () => {});
      s.end();
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const { port } = server.address() as net.AddressInfo;
    try {
      const started = Date.now();
      const r = await createClamdScanner(
        { kind: "tcp", host: "127.0.0.1", port },
        { timeoutMs: 10_000 },
      ).scan("a", clean);
      expect(r.status).toBe("error");
      expect(r.errorKind).not.toBe("timeout");
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});

describe.skipIf(shouldSkip(clamscanPath, "clamscan"))(
  "clamscan adapter (real clamscan, test signature database)",
  () => {
    let dir: string;
    let db: string;
    beforeAll(() => {
      dir = mkdtempSync(join(tmpdir(), "svc-clamscan-"));
      db = makeSignatureDatabase(dir);
    });
    afterAll(() => rmSync(dir, { recursive: true, force: true }));

    it("exit 0 is clean, exit 1 is infected with the signature named", async () => {
      const scanner = createClamscanScanner(clamscanPath!, { database: db });
      expect(await scanner.scan("a", clean)).toEqual({ status: "clean" });
      const hit = await scanner.scan("a", eicar());
      expect(hit.status).toBe("infected");
      expect(hit.signature).toContain(SIGNATURE_NAME);
    });

    it("finds EICAR deflated and nested in ZIPs", async () => {
      const scanner = createClamscanScanner(clamscanPath!, { database: db });
      expect((await scanner.scan("pkg", deflatedPackage())).status).toBe("infected");
      expect((await scanner.scan("pkg", nestedPackage())).status).toBe("infected");
    });

    it("scans a batch in one run and maps verdicts back to items", async () => {
      const scanner = createClamscanScanner(clamscanPath!, { database: db });
      const results = await scanner.scanBatch!([
        { name: "../a", bytes: clean },
        { name: "b", bytes: eicar() },
        { name: "c", bytes: clean },
      ]);
      expect(results.map((r) => r.status)).toEqual(["clean", "infected", "clean"]);
    });

    it("exit 2 (bad database) and a missing binary fail closed", async () => {
      const broken = createClamscanScanner(clamscanPath!, { database: join(dir, "no-such-db") });
      expect((await broken.scan("a", clean)).status).toBe("error");
      expect((await broken.scanBatch!([{ name: "a", bytes: clean }]))[0]!.status).toBe("error");
      const missing = createClamscanScanner(join(dir, "no-clamscan"), { database: db });
      expect(await missing.scan("a", clean)).toMatchObject({ status: "error", errorKind: "unreachable" });
    });
  },
);

describe("tar batches", () => {
  it("are valid ustar streams that tar lists and extracts byte for byte, under generated names", () => {
    const members = [Buffer.from("a"), Buffer.alloc(0), Buffer.alloc(1500, 7), Buffer.from("../not-a-name")];
    const dir = mkdtempSync(join(tmpdir(), "svc-tar-"));
    try {
      writeFileSync(join(dir, "b.tar"), Buffer.concat(tarChunks(members)));
      const listing = execFileSync("tar", ["-tvf", join(dir, "b.tar")], { encoding: "utf8" })
        .trim()
        .split("\n");
      expect(listing.map((l) => l.split(/\s+/).at(-1))).toEqual([
        "m000000.bin",
        "m000001.bin",
        "m000002.bin",
        "m000003.bin",
      ]);
      const third = execFileSync("tar", ["-xOf", join(dir, "b.tar"), "m000002.bin"]);
      expect(third.equals(members[2]!)).toBe(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
