/**
 * The delivery queue on a real store (PGlite; PostgreSQL too when DATABASE_URL is set, where two
 * pools make two real concurrent instances): redeliveries deduplicated, one delivery per key at a
 * time across concurrent drains, oldest first, retries with backoff, failures listed, dead
 * instances' leases reclaimed.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  claimDelivery,
  type Delivery,
  drainDeliveries,
  enqueueDelivery,
  listDeliveries,
} from "../../src/bot/delivery-queue.ts";
import { createPostgresStore, type Store } from "../../src/store/index.ts";
import { ADAPTERS, openTestStore } from "../support/http-harness.ts";

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe.each(ADAPTERS)("delivery queue on %s", (adapter) => {
  let store: Store;
  /** A second connection pool on the same database: another serverless instance. */
  let other: Store;
  beforeAll(async () => {
    store = await openTestStore(adapter);
    if (adapter === "postgres") {
      const schema = /schema (\w+)/.exec(store.description)![1]!;
      other = await createPostgresStore(process.env.DATABASE_URL!, { schema, max: 4 });
    } else other = store;
  });
  afterAll(async () => {
    if (other !== store) await other.close();
    await store.close();
  });
  beforeEach(async () => {
    await store.exec("DELETE FROM github_deliveries; DELETE FROM github_delivery_keys;");
  });

  const delivery = (id: string, serialKey: string) => ({
    id,
    app: "portal" as const,
    event: "pull_request",
    payload: { id, nested: { ok: true } },
    serialKey,
  });

  it("records a delivery once: a redelivery is a duplicate, a redelivery of a failed one runs again", async () => {
    const now = new Date();
    expect(await enqueueDelivery(store, delivery("d1", "pr:1"), now)).toBe("queued");
    expect(await enqueueDelivery(other, delivery("d1", "pr:1"), now)).toBe("duplicate");
    const summary = await drainDeliveries(
      store,
      async () => {
        throw new Error("GitHub answered 502");
      },
      { deadline: new Date(Date.now() + 10_000), maxAttempts: 2, backoffMs: () => 0 },
    );
    expect(summary).toEqual({ done: [], retried: ["d1"], failed: ["d1"] });
    const [failed] = await listDeliveries(store, "failed");
    expect(failed).toMatchObject({ id: "d1", attempts: 2, lastError: "GitHub answered 502" });
    expect(failed!.payload).toEqual({ id: "d1", nested: { ok: true } });
    expect(await enqueueDelivery(store, delivery("d1", "pr:1"), new Date())).toBe("requeued");
    const again = await drainDeliveries(store, async () => "ok", { deadline: new Date(Date.now() + 10_000) });
    expect(again.done).toEqual(["d1"]);
    expect(await listDeliveries(store, "failed")).toEqual([]);
    expect((await listDeliveries(store, "done"))[0]).toMatchObject({ id: "d1", attempts: 1, result: "ok" });
  });

  it("records the same signed body once, even under another delivery id (a captured delivery replayed)", async () => {
    const now = new Date();
    const body = { ...delivery("d7", "pr:7"), payloadSha256: "b".repeat(64) };
    expect(await enqueueDelivery(store, body, now)).toBe("queued");
    // The delivery id is a header the signature does not cover: a new id is not a new delivery.
    expect(await enqueueDelivery(other, { ...body, id: "d8" }, now)).toBe("duplicate");
    expect((await listDeliveries(store, "queued")).map((d) => d.id)).toEqual(["d7"]);
    // Another body is another delivery; the same body for the other app is that app's own.
    expect(await enqueueDelivery(store, { ...body, id: "d9", payloadSha256: "c".repeat(64) }, now)).toBe(
      "queued",
    );
    expect(await enqueueDelivery(store, { ...body, id: "d10", app: "intake" as const }, now)).toBe("queued");
  });

  it("runs one delivery per key at a time across two concurrent drains, oldest first; other keys in parallel", async () => {
    const base = Date.now();
    for (const [i, id] of ["a1", "b1", "a2", "a3", "b2"].entries()) {
      await enqueueDelivery(store, delivery(id, `pr:${id[0]}`), new Date(base + i));
    }
    const running = new Map<string, string>();
    const order: string[] = [];
    const overlaps: string[] = [];
    let parallelKeys = 0;
    const work = async (d: Delivery) => {
      if (running.has(d.serialKey)) overlaps.push(`${d.id} ran beside ${running.get(d.serialKey)}`);
      running.set(d.serialKey, d.id);
      parallelKeys = Math.max(parallelKeys, running.size);
      order.push(d.id);
      await sleep(40);
      running.delete(d.serialKey);
      return null;
    };
    const deadline = new Date(Date.now() + 20_000);
    const [one, two] = await Promise.all([
      drainDeliveries(store, work, { deadline }),
      drainDeliveries(other, work, { deadline }),
    ]);
    expect(overlaps).toEqual([]);
    expect([...one.done, ...two.done].sort()).toEqual(["a1", "a2", "a3", "b1", "b2"]);
    expect(order.filter((id) => id.startsWith("a"))).toEqual(["a1", "a2", "a3"]);
    expect(order.filter((id) => id.startsWith("b"))).toEqual(["b1", "b2"]);
    expect(parallelKeys).toBe(2);
  });

  it("claims a delivery again once the lease of an instance that died has expired", async () => {
    let now = new Date();
    const clock = () => now;
    await enqueueDelivery(store, delivery("d9", "pr:9"), now);
    const dead = await claimDelivery(store, "instance-that-died", { clock, leaseMs: 60_000 });
    expect(dead?.delivery.id).toBe("d9");
    expect(await claimDelivery(other, "second", { clock, leaseMs: 60_000 })).toBeNull();
    now = new Date(now.getTime() + 61_000);
    const again = await claimDelivery(other, "second", { clock, leaseMs: 60_000 });
    expect(again?.delivery).toMatchObject({ id: "d9", attempts: 2, state: "running" });
  });
});
