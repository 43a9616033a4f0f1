/**
 * Hand-over: a job enqueued inside a transaction while its type and group have a free slot is stored
 * already claimed and starts once that transaction is durable, without a claim.
 */
import { afterEach, beforeEach, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase, type Db } from "../../db/client";
import { migrate } from "../../db/migrate";
import { silentLogger } from "../logger";
import { createQueue } from "./queue";

let dir: string;
let db: Db;
let claims: number; // claim statements run (UPDATE … SET status = 'running' …)
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "sb-handover-"));
  db = openDatabase(join(dir, "q.db"));
  migrate(db);
  claims = 0;
  const statement = db.sql.bind(db);
  db.sql = (sql: string) => {
    const st = statement(sql);
    if (!/^UPDATE jobs SET status = 'running'/.test(sql.trim())) return st;
    return { ...st, all: (...args) => (claims++, st.all(...args)) };
  };
});
afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const newQueue = () => createQueue({ db, now: () => new Date(), log: silentLogger, workers: 8, maxAttempts: 3, leaseMs: 60_000, pollMs: 60_000 });
const rows = async () => (await db.sql("SELECT status, attempts FROM jobs ORDER BY created_at, id").all()) as { status: string; attempts: number }[];
const until = async (ok: () => boolean | Promise<boolean>) => {
  for (let i = 0; i < 400 && !(await ok()); i++) await Bun.sleep(5);
  expect(await ok()).toBe(true);
};

test("a job enqueued while its group has room runs without a claim, after its transaction; the rest wait as pending", async () => {
  const queue = newQueue();
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const ran: string[] = [];
  let concurrent = 0;
  let peak = 0;
  queue.register("test.handover", {
    concurrency: 4,
    groupConcurrency: 1,
    async handle(job) {
      peak = Math.max(peak, ++concurrent);
      ran.push(job.payload.n);
      await gate;
      concurrent--;
    },
  });
  queue.start();
  await Bun.sleep(10); // the start's own pass
  claims = 0;
  await db.unit(async () => {
    for (const n of ["a", "b", "c"]) await queue.enqueueJob({ type: "test.handover", payload: { n }, groupKey: "g" });
    expect(ran).toEqual([]); // not before the unit ends
  });
  await until(async () => ran.length === 1);
  expect(ran).toEqual(["a"]);
  expect(claims).toBe(0);
  expect(await rows()).toEqual([
    { status: "running", attempts: 1 },
    { status: "pending", attempts: 0 },
    { status: "pending", attempts: 0 },
  ]);
  release();
  await until(async () => ran.length === 3 && (await rows()).length === 0);
  expect(ran).toEqual(["a", "b", "c"]);
  expect(peak).toBe(1);
  await queue.stop();
});

test("a transaction that is undone starts nothing and gives its slot back", async () => {
  const queue = newQueue();
  const ran: string[] = [];
  queue.register("test.undone", {
    concurrency: 1,
    groupConcurrency: 1,
    async handle(job) {
      ran.push(job.payload.n);
    },
  });
  queue.start();
  await expect(
    db.unit(async () => {
      await queue.enqueueJob({ type: "test.undone", payload: { n: "undone" }, groupKey: "g" });
      throw new Error("refused");
    }),
  ).rejects.toThrow("refused");
  await db.unit(() => queue.enqueueJob({ type: "test.undone", payload: { n: "kept" }, groupKey: "g" }));
  await until(async () => ran.length === 1 && (await rows()).length === 0);
  await Bun.sleep(20);
  expect(ran).toEqual(["kept"]); // the slot the undone one took is free again, and it never ran
  expect(claims).toBe(0);
  await queue.stop();
});

test("a handed-over job whose process died is run by the next start, once", async () => {
  const crashed = newQueue();
  // Never finishes: the process "dies" meanwhile. Its one slot stays taken, so its loop (still live in this
  // process, unlike a dead one's) claims nothing while the next start below awaits its units.
  crashed.register("test.crash", {
    concurrency: 1,
    async handle() {
      await new Promise(() => {});
    },
  });
  crashed.start();
  await db.unit(() => crashed.enqueueJob({ type: "test.crash", payload: {} }));
  expect(await rows()).toEqual([{ status: "running", attempts: 1 }]);
  const next = newQueue();
  let runs = 0;
  next.register("test.crash", {
    async handle() {
      runs++;
    },
  });
  expect(await next.releaseOrphans()).toBe(1);
  await next.drain();
  expect(runs).toBe(1);
  expect(await rows()).toEqual([]);
});

test("jobs handed over but not started yet when the queue stops are given back at once, not run", async () => {
  const queue = newQueue();
  const ran: string[] = [];
  let stopped: Promise<void> | undefined;
  queue.register("test.handover.stop", {
    concurrency: 8,
    async handle(job) {
      ran.push(job.payload.n);
      const t = performance.now();
      while (performance.now() - t < db.backgroundSlice() + 1); // longer than a start slice: the next jobs start a turn later
      stopped ??= queue.stop(); // a stop arrives while the first one runs
    },
  });
  queue.start();
  await db.unit(async () => {
    for (let n = 0; n < 5; n++) await queue.enqueueJob({ type: "test.handover.stop", payload: { n: String(n) } });
  });
  await until(async () => stopped !== undefined);
  await stopped;
  expect(ran).toEqual(["0"]);
  expect(await rows()).toEqual(Array(4).fill({ status: "pending", attempts: 0 }));
});
