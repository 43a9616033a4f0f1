/**
 * Anchors (JobAnchor): a type's jobs kept on the business rows they are about. A job lives on its row until
 * its first attempt ends; a counted retry, a dead job and an expired hold become jobs rows, fenced by the
 * hold's token. The rows here are a table of the test's own, with the anchor written as the dispatch's is.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Db } from "../../db/client";
import { migrate } from "../../db/migrate";
import { silentLogger } from "../logger";
import { createQueue, type JobAnchor, type JobHandler, type Queue } from "./queue";

let dir: string;
let db: Db;
let clock: number;
let queues: Queue[];
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "sb-anchor-"));
  db = openDatabase(join(dir, "q.db"));
  migrate(db);
  await db.sql(`CREATE TABLE items (id TEXT PRIMARY KEY, grp TEXT NOT NULL, state TEXT NOT NULL, lease_until INTEGER, lease_token TEXT)`).run();
  clock = Date.parse("2026-11-26T12:00:00Z");
  queues = [];
});
afterEach(async () => {
  for (const q of queues) await q.stop(100);
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

type P = { id: string };
const ON = "state = 'waiting' AND lease_until IS NOT NULL";
// (Asynchronous, as an anchor on the asynchronous store contract answers: the queue awaits each answer.)
const anchor: JobAnchor<P> = {
  claim: async (group, now, limit, token, until) =>
    (
      (await db
        .sql(
          `UPDATE items SET lease_token = ?1, lease_until = ?2 WHERE id IN (SELECT id FROM items WHERE ${ON} AND grp = ?3 AND lease_token IS NULL AND lease_until <= ?4 ORDER BY lease_until LIMIT ?5) RETURNING id`,
        )
        .all(token, until, group, now, limit)) as { id: string }[]
    ).map((r) => ({ id: r.id })),
  groups: async () =>
    (
      (await db.sql(`SELECT grp, min(CASE WHEN lease_token IS NULL THEN lease_until END) AS first FROM items WHERE ${ON} GROUP BY grp`).all()) as {
        grp: string;
        first: number | null;
      }[]
    ).map((r) => ({
      groupKey: r.grp,
      first: r.first,
    })),
  renew: async ({ id }, token, until) =>
    (await db.sql(`UPDATE items SET lease_until = ? WHERE id = ? AND lease_token = ? AND state = 'waiting'`).run(until, id, token)).changes > 0,
  release: async ({ id }, token, at) =>
    (await db.sql(`UPDATE items SET lease_token = NULL, lease_until = ? WHERE id = ? AND lease_token = ? AND state = 'waiting'`).run(at, id, token)).changes >
    0,
  expired: async (group, before, limit) =>
    (
      (await db
        .sql(`SELECT id, lease_token FROM items WHERE ${ON} AND grp = ? AND lease_token IS NOT NULL AND lease_until < ? LIMIT ?`)
        .all(group, before, limit)) as { id: string; lease_token: string }[]
    ).map((r) => ({ payload: { id: r.id }, token: r.lease_token })),
  count: async () =>
    (await db.sql(`SELECT count(*) - count(lease_token) AS pending, count(lease_token) AS running FROM items WHERE ${ON}`).get()) as {
      pending: number;
      running: number;
    },
};

const LEASE = 60_000;
function newQueue(handle: JobHandler<P>["handle"], opts: { maxAttempts?: number; leaseMs?: number } = {}): Queue {
  const q = createQueue({
    db,
    now: () => new Date(clock),
    log: silentLogger,
    workers: 8,
    maxAttempts: opts.maxAttempts ?? 3,
    leaseMs: opts.leaseMs ?? LEASE,
    pollMs: 60_000,
  });
  q.register("test.anchored", { handle: handle as never, concurrency: 4, groupConcurrency: 2, anchor, backoffMs: () => 1000 });
  queues.push(q);
  return q;
}

/** The business transaction: the item's row, written after enqueue (which may hand it over). */
function add(q: Queue, id: string, grp = "g"): Promise<void> {
  return db.unit(async () => {
    let lease: { token: string | null; until: number } | undefined;
    await q.enqueueJob({ type: "test.anchored", payload: { id }, groupKey: grp, hold: (l) => (lease = l) });
    await db.sql(`INSERT INTO items VALUES (?, ?, 'waiting', ?, ?)`).run(id, grp, lease!.until, lease!.token);
  });
}
const done = async (id: string): Promise<void> => {
  await db.sql(`UPDATE items SET state = 'done' WHERE id = ?`).run(id);
};
const item = async (id: string) =>
  (await db.sql(`SELECT state, lease_until AS leaseUntil, lease_token AS leaseToken FROM items WHERE id = ?`).get(id)) as {
    state: string;
    leaseUntil: number | null;
    leaseToken: string | null;
  };
const jobRows = async () =>
  (await db.sql(`SELECT status, attempts, last_error AS lastError, payload FROM jobs WHERE type = 'test.anchored'`).all()) as {
    status: string;
    attempts: number;
    lastError: string | null;
    payload: string;
  }[];
const until = async (ok: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 400 && !(await ok()); i++) await Bun.sleep(5);
  expect(await ok()).toBe(true);
};
/** Starts `q`, adds the item "a" and waits until one of `q`'s workers holds it on its row. */
async function heldBy(q: Queue): Promise<void> {
  q.start();
  await Bun.sleep(10);
  await add(q, "a");
  await until(async () => (await item("a")).leaseToken !== null);
}
/** A queue that finishes every job it runs, noting the attempt each ran as. */
function finishing(): { q: Queue; attempts: number[] } {
  const attempts: number[] = [];
  const q = newQueue(async (job) => {
    attempts.push(job.attempts);
    return { writes: () => done(job.payload.id) };
  });
  return { q, attempts };
}

test("a job waits on its row, due, with no jobs row; the claim holds the row, and a success writes nothing more", async () => {
  const ran: { id: string; attempts: number }[] = [];
  const q = newQueue(async (job) => {
    ran.push({ id: job.payload.id, attempts: job.attempts });
    const held = await item(job.payload.id);
    expect(held.leaseToken).toBe(job.leaseToken);
    expect(held.leaseUntil).toBe(clock + LEASE);
    return { writes: () => done(job.payload.id) };
  });
  await add(q, "a");
  await add(q, "b");
  expect(await item("a")).toEqual({ state: "waiting", leaseUntil: clock, leaseToken: null });
  expect(await jobRows()).toEqual([]);
  expect((await q.stats())["test.anchored"]).toEqual({ pending: 2, running: 0, dead: 0 });
  expect(await q.drain()).toBe(2);
  expect(ran).toEqual([
    { id: "a", attempts: 1 },
    { id: "b", attempts: 1 },
  ]);
  expect((await item("a")).state).toBe("done");
  expect(await jobRows()).toEqual([]);
  expect((await q.stats())["test.anchored"]).toBeUndefined();
});

test("a job enqueued while its group has room is handed over on its row: held at once, no claim, no jobs row", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const ran: string[] = [];
  const q = newQueue(async (job) => {
    ran.push(job.payload.id);
    await gate;
    return { writes: () => done(job.payload.id) };
  });
  q.start();
  await Bun.sleep(10);
  for (const id of ["a", "b", "c"]) await add(q, id);
  await until(async () => ran.length === 2);
  // Two held (the group's limit) from their accept on; the third waits on its row.
  expect([(await item("a")).leaseToken !== null, (await item("b")).leaseToken !== null, await item("c")]).toEqual([
    true,
    true,
    { state: "waiting", leaseUntil: clock, leaseToken: null },
  ]);
  expect((await q.stats())["test.anchored"]).toEqual({ pending: 1, running: 2, dead: 0 });
  expect(await jobRows()).toEqual([]);
  release();
  await until(async () => ran.length === 3 && (await item("c")).state === "done");
  expect(await jobRows()).toEqual([]);
});

test("a counted retry leaves the row for a jobs row (attempts and error kept); an uncounted one waits on its row again", async () => {
  let calls = 0;
  const q = newQueue(async (job) => {
    calls++;
    if (job.payload.id === "thrown" && job.attempts === 1) throw new Error("provider down");
    if (job.payload.id === "throttled" && calls <= 2) return { retryAt: new Date(clock + 250), countAttempt: false };
    return { writes: () => done(job.payload.id) };
  });
  await add(q, "thrown");
  await add(q, "throttled");
  await q.drain();
  expect(await item("thrown")).toEqual({ state: "waiting", leaseUntil: null, leaseToken: null }); // off the anchor
  expect(await jobRows()).toEqual([{ status: "pending", attempts: 1, lastError: "provider down", payload: JSON.stringify({ id: "thrown" }) }]);
  expect(await item("throttled")).toEqual({ state: "waiting", leaseUntil: clock + 250, leaseToken: null }); // back on its row
  clock += 1000;
  await q.drain();
  expect([(await item("thrown")).state, (await item("throttled")).state]).toEqual(["done", "done"]);
  expect(await jobRows()).toEqual([]);
});

test("a job that fails its last attempt, or gives up, is kept as a dead jobs row (listed, retryable)", async () => {
  const q = newQueue(
    async (job) => {
      if (job.payload.id === "gives-up") return { dead: "refused for good" };
      throw new Error("always fails");
    },
    { maxAttempts: 1 },
  );
  await add(q, "gives-up");
  await add(q, "fails");
  await q.drain();
  expect((await jobRows()).map((r) => [r.status, r.attempts, r.lastError]).sort()).toEqual([
    ["dead", 1, "always fails"],
    ["dead", 1, "refused for good"],
  ]);
  expect([(await item("gives-up")).leaseToken, (await item("fails")).leaseUntil]).toEqual([null, null]);
  const dead = await q.listJobs({ dead: true });
  expect(dead).toHaveLength(2);
  expect(await q.retryJob(dead[0]!.id)).toBe(true);
});

test("a hold whose token no longer holds the row writes nothing when its attempt ends (the fence)", async () => {
  const q = newQueue(async (job) => {
    // Another process took the row over meanwhile (its lease had expired).
    await db.sql(`UPDATE items SET lease_token = 'theirs' WHERE id = ?`).run(job.payload.id);
    throw new Error("late failure");
  });
  await add(q, "a");
  await q.drain();
  expect(await item("a")).toEqual({ state: "waiting", leaseUntil: clock + LEASE, leaseToken: "theirs" });
  expect(await jobRows()).toEqual([]);
});

test("a hold left by a process that died: the next full pass makes it a jobs row with its attempt counted, runs it once, and fences the old worker", async () => {
  let releaseOld!: () => void;
  const oldGate = new Promise<void>((r) => (releaseOld = r));
  const old = newQueue(async () => {
    await oldGate; // hangs past its lease (its process is as good as dead)
    throw new Error("too late");
  });
  await heldBy(old);
  const { q: next, attempts } = finishing();
  expect(await next.drain()).toBe(0); // the lease holds: nothing to run
  clock += LEASE + 1;
  expect(await next.drain()).toBe(1);
  expect(attempts).toEqual([2]); // the dead process's attempt counted
  expect((await item("a")).state).toBe("done");
  expect(await jobRows()).toEqual([]);
  releaseOld();
  await Bun.sleep(20);
  expect(await jobRows()).toEqual([]); // the old worker's failure found its hold gone: no retry written
});

test("at start, releaseOrphans puts the holds of the stopped process back on their rows, due now, their attempt not counted", async () => {
  await heldBy(newQueue(() => new Promise(() => {})));
  const { q: next, attempts } = finishing();
  expect(await next.releaseOrphans()).toBe(1);
  expect(await item("a")).toEqual({ state: "waiting", leaseUntil: clock, leaseToken: null });
  expect(await next.drain()).toBe(1);
  expect(attempts).toEqual([1]);
  expect(await jobRows()).toEqual([]);
});

test("stop gives a running held job back to its row, due at once", async () => {
  const q = newQueue(() => new Promise(() => {}));
  await heldBy(q);
  await q.stop(50);
  expect(await item("a")).toEqual({ state: "waiting", leaseUntil: clock, leaseToken: null });
  expect(await jobRows()).toEqual([]);
});

test("a held job's lease is renewed on its row while its handler runs", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const q = newQueue(async (job) => (await gate, { writes: () => done(job.payload.id) }), { leaseMs: 3000 });
  q.start();
  await Bun.sleep(10);
  await add(q, "a");
  const first = (await item("a")).leaseUntil!;
  expect(first).toBe(clock + 3000);
  clock += 500;
  await until(async () => (await item("a")).leaseUntil === clock + 3000); // renewed every third of the lease (1 s)
  release();
  await until(async () => (await item("a")).state === "done");
});

test("an anchor needs a handler with a per-group limit", () => {
  const q = createQueue({ db, now: () => new Date(clock), log: silentLogger, workers: 8, maxAttempts: 3, leaseMs: LEASE });
  expect(() => q.register("test.bad", { anchor, async handle() {} })).toThrow("an anchor needs handle and groupConcurrency");
});
