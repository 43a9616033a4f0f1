/**
 * Inline jobs (JobHandler.inline: run inside the transaction that takes them) and the claim hints that let
 * a pump skip types with nothing due.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import type { Queue } from "./queue";

let app: TestApp;
/** The app's queue, untyped: these tests run job types of their own (not in the app's JobMap). */
const queue = (): Queue => app.deps.queue;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

const rowOf = async (id: string) =>
  (await app.deps.db.sql(`SELECT status, attempts, run_at, last_error, lease_token FROM jobs WHERE id = ?`).get(id)) as {
    status: string;
    attempts: number;
    run_at: number;
    last_error: string | null;
    lease_token: string | null;
  } | null;

test("an inline job's writes and its removal commit together; a throw rolls its writes back and retries with backoff until dead", async () => {
  const db = app.deps.db;
  await db.sql(`CREATE TABLE inline_effects (job_id TEXT, n INTEGER)`).run();
  let failUntil = 0;
  queue().register("test.inline", {
    maxAttempts: 3,
    backoffMs: () => 1000,
    async inline(job) {
      await db.sql(`INSERT INTO inline_effects VALUES (?, ?)`).run(job.id, job.payload.n);
      if (job.attempts <= failUntil) throw new Error(`boom ${job.attempts}`);
    },
  });
  const ok = await app.deps.db.unit(() => queue().enqueueJob({ type: "test.inline", payload: { n: 1 } }));
  expect(await queue().drain()).toBe(1);
  expect(await rowOf(ok)).toBeNull();
  expect(await db.sql(`SELECT n FROM inline_effects WHERE job_id = ?`).all(ok)).toEqual([{ n: 1 }]);

  failUntil = 1;
  const flaky = await app.deps.db.unit(() => queue().enqueueJob({ type: "test.inline", payload: { n: 2 } }));
  await queue().drain();
  expect(await rowOf(flaky)).toMatchObject({ status: "pending", attempts: 1, last_error: "boom 1", lease_token: null });
  expect((await rowOf(flaky))!.run_at).toBe(app.clock.now().getTime() + 1000);
  expect(await db.sql(`SELECT count(*) AS n FROM inline_effects WHERE job_id = ?`).get(flaky)).toEqual({ n: 0 }); // rolled back
  app.clock.advance(1000);
  await queue().drain();
  expect(await rowOf(flaky)).toBeNull();
  expect(await db.sql(`SELECT count(*) AS n FROM inline_effects WHERE job_id = ?`).get(flaky)).toEqual({ n: 1 });

  failUntil = 99;
  const doomed = await app.deps.db.unit(() => queue().enqueueJob({ type: "test.inline", payload: { n: 3 } }));
  for (let i = 0; i < 3; i++) {
    await queue().drain();
    app.clock.advance(1000);
  }
  expect(await rowOf(doomed)).toMatchObject({ status: "dead", attempts: 3, last_error: "boom 3" });
});

test("a shareable type's inline run: on PostgreSQL its jobs go side by side (one after another on SQLite); a throw still fails that job alone", async () => {
  const db = app.deps.db;
  await db.sql(`CREATE TABLE side_effects (job_id TEXT, n INTEGER)`).run();
  let started = 0;
  let startedBeforeFirstEnded = 0;
  queue().register("test.side", {
    shareable: true,
    maxAttempts: 1, // (dead at once: nothing of this type is left for the tests after it)
    async inline(job) {
      started++;
      await db.sql(`INSERT INTO side_effects VALUES (?, ?)`).run(job.id, job.payload.n);
      startedBeforeFirstEnded ||= started;
      if (job.payload.n === 3) throw new Error("job 3 refused");
    },
  });
  const ids = await app.deps.db.unit(async () => {
    const out: string[] = [];
    for (const n of [1, 2, 3, 4]) out.push(await queue().enqueueJob({ type: "test.side", payload: { n } }));
    return out;
  });
  await queue().drain();
  // Side by side, all four had started before the first one's insert came back (PostgreSQL), then the throw ran the
  // run again with each job in a savepoint; one after another, each had ended before the next began.
  expect(startedBeforeFirstEnded).toBe(app.deps.db.engine === "postgres" ? 4 : 1);
  expect(await rowOf(ids[2]!)).toMatchObject({ status: "dead", attempts: 1, last_error: "job 3 refused" });
  for (const i of [0, 1, 3]) expect(await rowOf(ids[i]!)).toBeNull();
  expect((await db.sql(`SELECT n FROM side_effects ORDER BY n`).all()).map((r) => r.n)).toEqual([1, 2, 4]);
});

test("a job's writes and its outcome commit together; writes that throw are rolled back whole and the attempt is recorded alone", async () => {
  const db = app.deps.db;
  await db.sql(`CREATE TABLE writes_effects (job_id TEXT, n INTEGER)`).run();
  const failUntil = 1;
  queue().register("test.writes", {
    maxAttempts: 3,
    backoffMs: () => 1000,
    async handle(job) {
      return {
        writes: async () => {
          await db.sql(`INSERT INTO writes_effects VALUES (?, ?)`).run(job.id, job.payload.n);
          if (job.attempts <= failUntil) throw new Error(`boom ${job.attempts}`);
        },
      };
    },
  });
  const id = await app.deps.db.unit(() => queue().enqueueJob({ type: "test.writes", payload: { n: 1 } }));
  await queue().drain();
  expect(await rowOf(id)).toMatchObject({ status: "pending", attempts: 1, last_error: "boom 1", lease_token: null });
  expect(await db.sql(`SELECT count(*) AS n FROM writes_effects WHERE job_id = ?`).get(id)).toEqual({ n: 0 }); // rolled back
  app.clock.advance(1000);
  await queue().drain();
  expect(await rowOf(id)).toBeNull();
  expect(await db.sql(`SELECT n FROM writes_effects WHERE job_id = ?`).all(id)).toEqual([{ n: 1 }]);
});

test("an inline job can come back later without counting an attempt", async () => {
  let runs = 0;
  queue().register("test.inline.later", {
    inline: () => (++runs === 1 ? { retryAt: new Date(app.clock.now().getTime() + 5000), countAttempt: false } : undefined),
  });
  const id = await app.deps.db.unit(() => queue().enqueueJob({ type: "test.inline.later", payload: {} }));
  await queue().drain();
  expect(await rowOf(id)).toMatchObject({ status: "pending", attempts: 0 });
  await queue().drain();
  expect(runs).toBe(1); // not due yet
  app.clock.advance(5000);
  await queue().drain();
  expect(runs).toBe(2);
  expect(await rowOf(id)).toBeNull();
});

test.each([
  ["an inline", true],
  ["a claimed", false],
])("%s job that comes back with a payload runs again with that payload", async (_kind, inline) => {
  const seen: number[][] = [];
  const type = `test.payload.${inline ? "inline" : "claimed"}`;
  const handler = (job: { payload: { left: number[] } }) => {
    seen.push(job.payload.left);
    const [, ...rest] = job.payload.left;
    return rest.length ? { retryAt: new Date(app.clock.now().getTime() + 1000), countAttempt: false, payload: { left: rest } } : undefined;
  };
  queue().register(type, inline ? { inline: handler } : { handle: async (job) => handler(job) });
  const id = await app.deps.db.unit(() => queue().enqueueJob({ type, payload: { left: [1, 2, 3] } }));
  for (let i = 0; i < 3; i++) {
    await queue().drain();
    app.clock.advance(1000);
  }
  expect(seen).toEqual([[1, 2, 3], [2, 3], [3]]);
  expect(await rowOf(id)).toBeNull();
});

test("an inline job left running by a process that stopped is taken again once its lease expired", async () => {
  let runs = 0;
  queue().register("test.inline.orphan", { inline: () => void runs++ });
  const id = await app.deps.db.unit(() => queue().enqueueJob({ type: "test.inline.orphan", payload: {} }));
  const t = app.clock.now().getTime();
  await app.deps.db.sql(`UPDATE jobs SET status = 'running', lease_token = 'gone', lease_until = ?1, run_at = ?1 WHERE id = ?2`).run(t + 30_000, id);
  await queue().drain();
  expect(runs).toBe(0);
  app.clock.advance(30_001);
  await queue().drain();
  expect(runs).toBe(1);
  expect(await rowOf(id)).toBeNull();
});

test("a handler gives exactly one of handle and inline", () => {
  expect(() => queue().register("test.both", { inline: () => undefined, handle: async () => undefined } as never)).toThrow("exactly one");
  expect(() => queue().register("test.neither", {} as never)).toThrow("exactly one");
});

test("an outcome whose commit fails (write lock held elsewhere, disk full) is stored on a later try, and the job is not run again", async () => {
  let runs = 0;
  let failNext = false;
  queue().register("test.commit-fails", {
    handle: async () => {
      runs++;
      failNext = true; // the next group commit — this job's outcome — fails
    },
  });
  const unit = app.deps.db.unit;
  app.deps.db.unit = (fn, options) => {
    if (failNext) {
      failNext = false;
      return Promise.reject(Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" }));
    }
    return unit(fn, options);
  };
  try {
    const id = await app.deps.db.unit(() => queue().enqueueJob({ type: "test.commit-fails", payload: {} }));
    await queue().drain();
    expect(runs).toBe(1);
    expect(await rowOf(id)).toBeNull();
  } finally {
    app.deps.db.unit = unit;
  }
});

test("the running loop skips idle types but still finds jobs that come due, and jobs written by another process", async () => {
  const ran: string[] = [];
  queue().register("test.hinted", { handle: async (job) => void ran.push(job.payload.tag) });
  queue().start();
  try {
    const until = async (n: number) => {
      for (let i = 0; i < 300 && ran.length < n; i++) await Bun.sleep(10);
    };
    // Enqueued here: runs at once.
    await app.deps.db.unit(() => queue().enqueueJob({ type: "test.hinted", payload: { tag: "now" } }));
    await until(1);
    expect(ran).toEqual(["now"]);
    // Due later: the type is idle until then, and runs once the clock reaches it.
    await app.deps.db.unit(() => queue().enqueueJob({ type: "test.hinted", payload: { tag: "later" }, runAt: new Date(app.clock.now().getTime() + 60_000) }));
    await Bun.sleep(50);
    expect(ran).toEqual(["now"]);
    app.clock.advance(60_000);
    queue().nudge();
    await until(2);
    expect(ran).toEqual(["now", "later"]);
    // Written by another connection (the CLI): no nudge reaches this process; the periodic full pass finds it.
    const other = app.openConnection();
    const t = app.clock.now().getTime();
    await other
      .sql(
        `INSERT INTO jobs (id, type, payload, status, run_at, attempts, max_attempts, created_at, updated_at) VALUES ('cli-job', 'test.hinted', '{"tag":"cli"}', 'pending', ?, 0, 5, ?, ?)`,
      )
      .run(t, t, t);
    other.close();
    await until(3);
    expect(ran).toEqual(["now", "later", "cli"]);
  } finally {
    await queue().stop();
  }
});

test("a job that runs longer than a third of its lease has the lease renewed while it runs", async () => {
  const slow = await createTestApp({ config: { jobs: { lease_seconds: 5 } } });
  try {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slowQueue: Queue = slow.deps.queue;
    slowQueue.register("test.slow", { handle: () => gate });
    const id = await slow.deps.db.unit(() => slowQueue.enqueueJob({ type: "test.slow", payload: {} }));
    const t0 = slow.clock.now().getTime();
    const draining = slow.deps.queue.drain();
    const lease = async () => ((await slow.deps.db.sql(`SELECT lease_until FROM jobs WHERE id = ?`).get(id)) as { lease_until: number }).lease_until;
    await Bun.sleep(100);
    expect(await lease()).toBe(t0 + 5000); // the claim's
    slow.clock.advance(3000);
    await Bun.sleep(1800); // one renewal: every 5 s / 3 of real time
    expect(await lease()).toBe(t0 + 3000 + 5000);
    release();
    await draining;
    expect(await slow.deps.db.sql(`SELECT count(*) AS n FROM jobs WHERE id = ?`).get(id)).toEqual({ n: 0 });
  } finally {
    await slow.close();
  }
});

test("inline jobs longer than a group's background slice are run a slice at a time, each once", async () => {
  const ran = new Map<number, number>();
  queue().register("test.inline.slow", {
    inline(job) {
      const t = performance.now();
      while (performance.now() - t < app.deps.db.backgroundSlice()); // each as long as a whole slice
      ran.set(job.payload.n, (ran.get(job.payload.n) ?? 0) + 1);
    },
  });
  await app.deps.db.unit(async () => {
    for (let n = 0; n < 12; n++) await queue().enqueueJob({ type: "test.inline.slow", payload: { n } });
  });
  const unit = app.deps.db.unit;
  let groupsItems = 0;
  app.deps.db.unit = ((fn, options) => (options?.background && groupsItems++, unit(fn, options))) as typeof unit;
  try {
    await queue().drain();
  } finally {
    app.deps.db.unit = unit;
  }
  expect([...ran.values()]).toEqual(Array(12).fill(1));
  expect(groupsItems).toBeGreaterThanOrEqual(6); // at most two a slice (the first always runs)
});
