import { createHmac } from "node:crypto";
import { createServer } from "node:http";
import { describe, expect, it } from "vitest";
import {
  apiKeyDisplayPrefix,
  generateApiKey,
  isWellFormedApiKey,
} from "../../src/accounts/api-key-format.ts";
import {
  createDevDelivery,
  createWebhookDelivery,
  EmailDeliveryError,
  magicLinkPath,
  signWebhookBody,
  verifyEmailLinkPath,
} from "../../src/accounts/email.ts";
import { effectiveRoles } from "../../src/accounts/roles.ts";
import {
  constantTimeEqual,
  csrfTokenFor,
  defaultRandomBytes,
  newSecretToken,
} from "../../src/accounts/secrets.ts";
import { listen } from "../../src/http/server.ts";

/** A deterministic byte source (named as a fake: it only replaces crypto.randomBytes in unit tests). */
function seededRandom(seed: number) {
  let x = seed;
  return (size: number) => {
    const out = Buffer.alloc(size);
    for (let i = 0; i < size; i++) {
      x = (x * 1103515245 + 12345) & 0x7fffffff;
      out[i] = x & 0xff;
    }
    return out;
  };
}

describe("API key format", () => {
  it("is svc_ + 32 base62 + a 6-character CRC32 checksum, and the checksum catches every single-character typo", () => {
    const key = generateApiKey(seededRandom(7));
    expect(key).toMatch(/^svc_[0-9A-Za-z]{38}$/);
    expect(isWellFormedApiKey(key)).toBe(true);
    expect(apiKeyDisplayPrefix(key)).toBe(key.slice(0, 10));
    const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    for (let i = 4; i < key.length; i++) {
      for (const c of alphabet) {
        if (c === key[i]) continue;
        expect(isWellFormedApiKey(key.slice(0, i) + c + key.slice(i + 1))).toBe(false);
      }
    }
    expect(isWellFormedApiKey(`${key} `)).toBe(false);
    expect(isWellFormedApiKey(key.replace("svc_", "SVC_"))).toBe(false);
  });

  it("draws different keys from real randomness", () => {
    const keys = new Set(Array.from({ length: 200 }, () => generateApiKey(defaultRandomBytes)));
    expect(keys.size).toBe(200);
  });
});

describe("secrets", () => {
  it("compares in constant time and derives per-session CSRF tokens", () => {
    expect(constantTimeEqual("abc", "abc")).toBe(true);
    expect(constantTimeEqual("abc", "abd")).toBe(false);
    expect(constantTimeEqual("abc", "abcd")).toBe(false);
    const a = newSecretToken(seededRandom(1));
    const b = newSecretToken(seededRandom(2));
    expect(csrfTokenFor(a)).not.toBe(csrfTokenFor(b));
    expect(csrfTokenFor(a)).toBe(csrfTokenFor(a));
  });

  it("keeps privileged roles ineffective until verification", () => {
    expect(effectiveRoles(["player", "moderator", "admin"], false)).toEqual(["player"]);
    expect(effectiveRoles(["modder", "admin"], true)).toEqual(["modder", "admin"]);
  });
});

describe("email links", () => {
  it("point to the verify and confirm pages with URL-encoded values the pages read back", () => {
    expect(verifyEmailLinkPath("acct_1", "tok_-9")).toBe("/account/verify/?account=acct_1&token=tok_-9");
    expect(magicLinkPath("tok_-9")).toBe("/account/confirm/?token=tok_-9");
    const odd = "a+b/c=&d e#f?g";
    const verify = new URL(verifyEmailLinkPath("acct x&y", odd), "https://portal.test");
    expect(verify.pathname).toBe("/account/verify/");
    expect(verify.hash).toBe("");
    expect(Object.fromEntries(verify.searchParams)).toEqual({ account: "acct x&y", token: odd });
    const confirm = new URL(magicLinkPath(odd), "https://portal.test");
    expect(confirm.pathname).toBe("/account/confirm/");
    expect(Object.fromEntries(confirm.searchParams)).toEqual({ token: odd });
  });

  it("are what the developer email mode prints", async () => {
    const lines: string[] = [];
    const delivery = createDevDelivery("return-token", (line) => lines.push(line));
    await delivery.send({
      type: "magic_link",
      to: "a@example.com",
      accountId: "acct_1",
      token: "tok",
      expiresAt: "2026-11-21T00:15:00.000Z",
      linkPath: magicLinkPath("tok"),
    });
    await delivery.send({ type: "sign_in_unavailable", to: "b@example.com" });
    expect(lines).toEqual([
      "[dev email] magic_link for a@example.com (acct_1): token tok (expires 2026-11-21T00:15:00.000Z), link /account/confirm/?token=tok",
      "[dev email] sign_in_unavailable for b@example.com",
    ]);
  });
});

describe("email webhook", () => {
  it("POSTs JSON signed with HMAC-SHA256 over the raw body", async () => {
    const received: Array<{ raw: Buffer; signature: string | undefined }> = [];
    const server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c) => chunks.push(c));
      req.on("end", () => {
        received.push({ raw: Buffer.concat(chunks), signature: req.headers["x-svc-signature"] as string });
        res.writeHead(204).end();
      });
    });
    const { port } = await listen(server, 0, "127.0.0.1");
    try {
      const delivery = createWebhookDelivery({
        url: `http://127.0.0.1:${port}/hook`,
        secret: "s3cret",
        newId: () => "mail_1",
        now: () => new Date("2026-11-21T00:00:00Z"),
      });
      await delivery.send({
        type: "magic_link",
        to: "a@example.com",
        token: "tok",
        accountId: "acct_1",
        linkPath: magicLinkPath("tok"),
      });
      expect(received).toHaveLength(1);
      const { raw, signature } = received[0]!;
      expect(signature).toBe(`sha256=${createHmac("sha256", "s3cret").update(raw).digest("hex")}`);
      expect(signature).toBe(signWebhookBody(raw, "s3cret"));
      expect(JSON.parse(raw.toString())).toEqual({
        schema: "svc.email-webhook.v1",
        id: "mail_1",
        createdAt: "2026-11-21T00:00:00.000Z",
        type: "magic_link",
        to: "a@example.com",
        token: "tok",
        accountId: "acct_1",
        linkPath: "/account/confirm/?token=tok",
      });
    } finally {
      server.close();
    }
  });

  it("throws on non-2xx answers and on timeouts", async () => {
    const server = createServer((req, res) => {
      if (req.url === "/slow") return; // never answers
      res.writeHead(500).end("no");
    });
    const { port } = await listen(server, 0, "127.0.0.1");
    try {
      const make = (path: string) =>
        createWebhookDelivery({
          url: `http://127.0.0.1:${port}${path}`,
          secret: "s",
          newId: () => "m",
          timeoutMs: 300,
        });
      await expect(make("/fail").send({ type: "verify_email", to: "a@example.com" })).rejects.toBeInstanceOf(
        EmailDeliveryError,
      );
      const started = Date.now();
      await expect(make("/slow").send({ type: "verify_email", to: "a@example.com" })).rejects.toThrow(
        /unreachable/,
      );
      expect(Date.now() - started).toBeLessThan(3000);
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});
