/** Per-group concurrency (JobHandler.groupConcurrency): a busy group never holds up other groups of the same type. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

test("at most groupConcurrency jobs per group run at once; ungrouped jobs are not limited by it", async () => {
  const running = new Map<string, number>();
  const peak = new Map<string, number>();
  app.deps.queue.register<{ g: string }>("test.grouped", {
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
  app.deps.db.tx(() => {
    for (let i = 0; i < 12; i++) app.deps.queue.enqueue({ type: "test.grouped", payload: { g: "a" }, groupKey: "a" });
    for (let i = 0; i < 12; i++) app.deps.queue.enqueue({ type: "test.grouped", payload: { g: "b" }, groupKey: "b" });
    for (let i = 0; i < 6; i++) app.deps.queue.enqueue({ type: "test.grouped", payload: { g: "none" } });
  });
  expect(await app.deps.queue.drain()).toBe(30);
  expect(peak.get("a")).toBe(2);
  expect(peak.get("b")).toBe(2);
  expect(peak.get("none")!).toBeGreaterThan(2);
});

test("a group's backlog ahead in run_at order does not block a later group", async () => {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const done: string[] = [];
  app.deps.queue.register<{ g: string }>("test.backlog", {
    concurrency: 4,
    groupConcurrency: 1,
    async handle(job) {
      if (job.payload.g === "slow") await gate;
      done.push(job.payload.g);
    },
  });
  const t = app.clock.now().getTime();
  app.deps.db.tx(() => {
    for (let i = 0; i < 500; i++) app.deps.queue.enqueue({ type: "test.backlog", payload: { g: "slow" }, groupKey: "slow", runAt: new Date(t - 1000) });
    for (let i = 0; i < 5; i++) app.deps.queue.enqueue({ type: "test.backlog", payload: { g: "fast" }, groupKey: "fast" });
  });
  const draining = app.deps.queue.drain();
  for (let i = 0; i < 100 && done.length < 5; i++) await Bun.sleep(5);
  expect(done).toEqual(["fast", "fast", "fast", "fast", "fast"]);
  release();
  await draining;
  expect(done.length).toBe(505);
});
