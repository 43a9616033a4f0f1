/** Per-group concurrency (JobHandler.groupConcurrency): a busy group never holds up other groups of the same type. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { openDatabase } from "../../db/client";
import { migrate } from "../../db/migrate";
import { silentLogger } from "../logger";
import { createQueue, type Queue } from "./queue";

let app: TestApp;
/** The app's queue, untyped: these tests run job types of their own (not in the app's JobMap). */
const queue = (): Queue => app.deps.queue;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

test("at most groupConcurrency jobs per group run at once; ungrouped jobs are not limited by it", async () => {
  const running = new Map<string, number>();
  const peak = new Map<string, number>();
  queue().register("test.grouped", {
    concurrency: 10,
    groupConcurrency: 2,
    async handle(job) {
      const g = job.payload.g;
      running.set(g, (running.get(g) ?? 0) + 1);
      peak.set(g, Math.max(peak.get(g) ?? 0, running.get(g)!));
      await Bun.sleep(5);
      running.set(g, running.get(g)! - 1);
    },
  });
  await app.deps.db.unit(async () => {
    for (let i = 0; i < 12; i++) await queue().enqueueJob({ type: "test.grouped", payload: { g: "a" }, groupKey: "a" });
    for (let i = 0; i < 12; i++) await queue().enqueueJob({ type: "test.grouped", payload: { g: "b" }, groupKey: "b" });
    for (let i = 0; i < 6; i++) await queue().enqueueJob({ type: "test.grouped", payload: { g: "none" } });
  });
  expect(await queue().drain()).toBe(30);
  expect(peak.get("a")).toBe(2);
  expect(peak.get("b")).toBe(2);
  expect(peak.get("none")!).toBeGreaterThan(2);
});

test("a group's backlog ahead in run_at order does not block a later group", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const done: string[] = [];
  queue().register("test.backlog", {
    concurrency: 4,
    groupConcurrency: 1,
    async handle(job) {
      if (job.payload.g === "slow") await gate;
      done.push(job.payload.g);
    },
  });
  const t = app.clock.now().getTime();
  await app.deps.db.unit(async () => {
    for (let i = 0; i < 500; i++) await queue().enqueueJob({ type: "test.backlog", payload: { g: "slow" }, groupKey: "slow", runAt: new Date(t - 1000) });
    for (let i = 0; i < 5; i++) await queue().enqueueJob({ type: "test.backlog", payload: { g: "fast" }, groupKey: "fast" });
  });
  const draining = queue().drain();
  for (let i = 0; i < 100 && done.length < 5; i++) await Bun.sleep(5);
  expect(done).toEqual(["fast", "fast", "fast", "fast", "fast"]);
  release();
  await draining;
  expect(done.length).toBe(505);
});

test("a claim's scan finds due jobs by walking the groups, never through the backlog of the full ones", async () => {
  // A queue of its own, on a database that keeps the scan statement's text (the walk over the groups).
  // Before: the scan walked the due jobs in run_at order skipping the full groups — all of their backlog,
  // on every full pass and on every pump while the type's room was filled.
  const dir = mkdtempSync(join(tmpdir(), "sb-scan-"));
  const db = openDatabase(join(dir, "q.db"));
  try {
    migrate(db);
    let walk = "";
    const statement = db.sql.bind(db);
    db.sql = (sql: string) => {
      if (sql.includes("WITH RECURSIVE g(k)")) walk = sql;
      return statement(sql);
    };
    const queue = createQueue({ db, now: () => new Date(), log: silentLogger, workers: 8, maxAttempts: 3, leaseMs: 60_000, pollMs: 60_000 });
    let done = 0;
    queue.register("test.busy", {
      concurrency: 4,
      groupConcurrency: 4,
      async handle() {
        await Bun.sleep(0);
        done++;
      },
    });
    await db.unit(async () => {
      for (let i = 0; i < 300; i++) await queue.enqueueJob({ type: "test.busy", payload: {}, groupKey: i % 2 ? "a" : "b" });
    });
    // Rows an older version left without a group: start() gives each a group of its own, or no scan finds them.
    await db.sql("UPDATE jobs SET group_key = NULL WHERE id IN (SELECT id FROM jobs ORDER BY id LIMIT 3)").run();
    queue.start();
    for (let i = 0; i < 1000 && done < 300; i++) await Bun.sleep(5);
    await queue.stop();
    expect(done).toBe(300);
    // The walk is index searches over the group keys (jobs_group_idx), never a scan of the jobs.
    const plan = ((await db.sql(`EXPLAIN QUERY PLAN ${walk}`).all("test.busy")) as { detail: string }[]).map((r) => r.detail).filter((d) => d.includes("jobs"));
    expect(plan.length).toBe(3); // the first key, the next key, a group's oldest run_at
    for (const step of plan) expect(step).toStartWith("SEARCH jobs USING COVERING INDEX jobs_group_idx");
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a job's slot is free once its outcome has committed, without waiting for the sync that makes it durable", async () => {
  // A database whose group commits are answered 500 ms after their COMMIT (a slow disk's sync): one sync
  // and two stay far enough apart that a busy CI machine's stalls do not blur them.
  const dir = mkdtempSync(join(tmpdir(), "sb-slots-"));
  const db = openDatabase(join(dir, "q.db"));
  try {
    migrate(db);
    const SYNC_MS = 500;
    const slow = Object.create(db) as typeof db;
    // (A unit nested in a unit is a savepoint: no commit of its own, answered at once.)
    slow.unit = (fn, options) => (db.inUnit() ? db.unit(fn, options) : db.unit(fn, options).then(async (v) => (await Bun.sleep(SYNC_MS), v)));
    const queue = createQueue({ db: slow, now: () => new Date(), log: silentLogger, workers: 8, maxAttempts: 3, leaseMs: 60_000, pollMs: 60_000 });
    const spans: { start: number; end: number }[] = [];
    queue.register("test.slot", {
      concurrency: 4,
      groupConcurrency: 1,
      async handle() {
        spans.push({ start: performance.now(), end: 0 });
        spans.at(-1)!.end = performance.now();
      },
    });
    await db.unit(async () => {
      for (let i = 0; i < 3; i++) await queue.enqueueJob({ type: "test.slot", payload: {}, groupKey: "a" });
    });
    queue.start();
    for (let i = 0; i < 800 && spans.length < 3; i++) await Bun.sleep(5);
    await queue.stop();
    expect(spans.length).toBe(3);
    // The next job waits for its own claim's sync (the message it sends must be durable), not for the
    // previous job's: one sync between them, not two.
    for (const [a, b] of [
      [spans[0]!, spans[1]!],
      [spans[1]!, spans[2]!],
    ] as const) {
      expect(b.start - a.end).toBeGreaterThanOrEqual(SYNC_MS - 5);
      expect(b.start - a.end).toBeLessThan(2 * SYNC_MS - 150);
    }
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
