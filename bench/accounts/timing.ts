/**
 * bench:timing — how long sign-up and magic-link requests take on each path (new vs taken address;
 * verified vs unverified vs unknown address), measured as interleaved pairs on one PGlite store so
 * drift hits both sides alike. A side channel shows as a median of the paired differences that
 * stays away from zero; the figure printed beside it is the spread of the same pairs.
 *
 *   node --import tsx bench/accounts/timing.ts      (SVC_BENCH_PAIRS=300 by default)
 */
import { AccountService } from "../../src/accounts/account-service.ts";
import type { EmailDelivery } from "../../src/accounts/email.ts";
import { loadPortalConfig } from "../../src/contracts/portal-config.ts";
import { createPgliteStore, migrate } from "../../src/store/index.ts";
import { median } from "../lib/harness.ts";

const PAIRS = Number(process.env.SVC_BENCH_PAIRS ?? 300);

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - started) / 1e6;
}

/** Runs a and b alternately (which goes first alternates too) and reports medians and the paired median difference. */
async function pairs(label: string, a: () => Promise<unknown>, b: () => Promise<unknown>) {
  const ta: number[] = [];
  const tb: number[] = [];
  const diff: number[] = [];
  for (let i = 0; i < PAIRS; i++) {
    let x: number;
    let y: number;
    if (i % 2 === 0) {
      x = await timed(a);
      y = await timed(b);
    } else {
      y = await timed(b);
      x = await timed(a);
    }
    ta.push(x);
    tb.push(y);
    diff.push(x - y);
  }
  const ma = median(ta);
  const mb = median(tb);
  const md = median(diff);
  process.stdout.write(
    `${label}: medians ${ma.toFixed(3)} vs ${mb.toFixed(3)} ms; paired median difference ${md.toFixed(3)} ms (${((100 * md) / mb).toFixed(1)}% of the second)\n`,
  );
}

async function main() {
  const config = loadPortalConfig("portal.config.json");
  const store = await createPgliteStore(null);
  await migrate(store);
  // A FAKE mail system that answers at once, so only the portal's own work is timed.
  const email: EmailDelivery = { mode: "webhook", send: async () => {} };
  const high = { limit: 1e9, windowSeconds: 60 };
  const rateLimits = Object.fromEntries(
    Object.keys(config.limits.rateLimits).map((k) => [k, high]),
  ) as typeof config.limits.rateLimits;
  const accounts = new AccountService({ store, email, bootstrapAdminEmails: [], rateLimits });
  await accounts.createAccount({ email: "taken@example.com", displayName: "T", role: "player" });
  await accounts.createAccount({ email: "unverified@example.com", displayName: "U", role: "player" });
  // Verify through the service with the token the fake mailer would have carried.
  const verifier = new AccountService({
    store,
    email: { mode: "return-token", send: async () => {} },
    bootstrapAdminEmails: [],
    rateLimits,
  });
  const v = await verifier.createAccount({ email: "verified@example.com", displayName: "V", role: "player" });
  await verifier.verifyEmail(v.accountId, v.devToken!);
  let n = 0;
  // Warm-up: JIT and PGlite caches.
  for (let i = 0; i < 50; i++) {
    await accounts.createAccount({ email: `warm${i}@example.com`, displayName: "W", role: "player" });
    await accounts.requestMagicLink("verified@example.com");
  }
  await pairs(
    "create_account taken vs new",
    () => accounts.createAccount({ email: "taken@example.com", displayName: "X", role: "player" }),
    () => accounts.createAccount({ email: `new${n++}@example.com`, displayName: "X", role: "player" }),
  );
  await pairs(
    "request_magic_link unverified vs verified",
    () => accounts.requestMagicLink("unverified@example.com"),
    () => accounts.requestMagicLink("verified@example.com"),
  );
  await pairs(
    "request_magic_link unknown vs verified",
    () => accounts.requestMagicLink(`ghost${n++}@example.com`),
    () => accounts.requestMagicLink("verified@example.com"),
  );
  await store.close();
}

await main();
