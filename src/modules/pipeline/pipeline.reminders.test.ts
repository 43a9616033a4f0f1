/**
 * Task reminders on the durable job queue with the injected clock: task.due fires once at remindAt, never
 * before, never twice (also when a job runs twice), moves with a reschedule, is cancelled by completing or
 * deleting, and fires after a restart when the appliance was down at that moment.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { signLicense } from "../../../scripts/sign-license";
import { eventsOf } from "../../../test/helpers/messaging";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { TASK_REMINDER_JOB } from "./pipeline.service";

const devKey = readFileSync(join(import.meta.dir, "../../../test/fixtures/license-dev.private.key"), "utf8");
const HOUR = 3_600_000;
const START = new Date("2026-03-02T08:00:00.000Z");
const config = { rate_limit: { requests_per_second: 10_000, burst: 10_000 } };

let app: TestApp;
/** Each test starts a day after the previous one: the clock only moves forward (the rate limiter runs on it). */
let base = START.getTime();
const at = (ms: number) => new Date(base + ms).toISOString();
const nextDay = (a: TestApp) => {
  base = a.clock.now().getTime() + 24 * HOUR;
  a.clock.set(new Date(base));
};
const license = (a: TestApp) =>
  writeFileSync(a.config.license.file, signLicense({ company: "default", modules: ["pipeline"], expiresAt: "2099-01-01T00:00:00.000Z", privateKey: devKey }));
const dueFor = (a: TestApp, taskId: string) => eventsOf(a, "task.due").filter((e) => e.data.task.id === taskId);
const pendingReminders = async (a: TestApp) => (await a.deps.queue.listJobs({ type: TASK_REMINDER_JOB, limit: 1000 })).filter((j) => j.status === "pending");
const task = async (a: TestApp, body: Record<string, unknown>) => {
  const r = await a.request("POST", "/tasks", { body: { title: "Call back", ...body } });
  if (r.status !== 201) throw new Error(JSON.stringify(r.body));
  return r.body.data.id as string;
};

beforeAll(async () => {
  app = await createTestApp({ start: START, config });
  license(app);
});
afterAll(() => app.close());

describe("task.due", () => {
  test("fires once at remindAt, not before; remindedAt records it", async () => {
    nextDay(app);
    const id = await task(app, { remindAt: at(HOUR) });
    await app.deps.queue.drain();
    expect(dueFor(app, id)).toHaveLength(0);
    app.clock.set(new Date(at(HOUR - 1)));
    await app.deps.queue.drain();
    expect(dueFor(app, id)).toHaveLength(0);
    app.clock.set(new Date(at(HOUR)));
    await app.deps.queue.drain();
    expect(dueFor(app, id)).toHaveLength(1);
    expect(dueFor(app, id)[0]!.data.task).toMatchObject({ id, remindAt: at(HOUR), remindedAt: at(HOUR), status: "open" });
    app.clock.set(new Date(at(5 * HOUR)));
    await app.deps.queue.drain();
    expect(dueFor(app, id)).toHaveLength(1);
    const listed = (await app.request("GET", "/tasks?status=open")).body.data.find((t: { id: string }) => t.id === id);
    expect(listed.remindedAt).toBe(at(HOUR));
  });

  test("never twice even if the job runs twice (at-least-once delivery) or a stale job is left over", async () => {
    nextDay(app);
    const id = await task(app, { remindAt: at(HOUR) });
    // A duplicate of the job (as after a crash between the handler and the job's deletion).
    await app.deps.db.unit(() =>
      app.deps.queue.enqueueJob({ type: TASK_REMINDER_JOB, payload: { taskId: id, remindAt: base + HOUR }, runAt: new Date(at(HOUR)) }),
    );
    // A stale job for a time the task no longer has.
    await app.deps.db.unit(() =>
      app.deps.queue.enqueueJob({ type: TASK_REMINDER_JOB, payload: { taskId: id, remindAt: base + 30 * 60_000 }, runAt: new Date(at(30 * 60_000)) }),
    );
    app.clock.set(new Date(at(2 * HOUR)));
    await app.deps.queue.drain();
    expect(dueFor(app, id)).toHaveLength(1);
    expect((await pendingReminders(app)).some((j) => j.payload.taskId === id)).toBe(false);
  });

  test("rescheduling moves the reminder (one pending job); a new time after it fired fires again once", async () => {
    nextDay(app);
    const id = await task(app, { remindAt: at(HOUR) });
    const moved = await app.request("PATCH", `/tasks/${id}`, { body: { remindAt: at(3 * HOUR) } });
    expect(moved.body.data.remindAt).toBe(at(3 * HOUR));
    expect((await pendingReminders(app)).filter((j) => j.payload.taskId === id)).toHaveLength(1);
    app.clock.set(new Date(at(2 * HOUR)));
    await app.deps.queue.drain();
    expect(dueFor(app, id)).toHaveLength(0);
    app.clock.set(new Date(at(3 * HOUR)));
    await app.deps.queue.drain();
    expect(dueFor(app, id)).toHaveLength(1);

    await app.request("PATCH", `/tasks/${id}`, { body: { remindAt: at(4 * HOUR) } });
    app.clock.set(new Date(at(4 * HOUR)));
    await app.deps.queue.drain();
    expect(dueFor(app, id).map((e) => e.data.task.remindAt)).toEqual([at(3 * HOUR), at(4 * HOUR)]);
  });

  test("completing, deleting or clearing remindAt cancels; reopening re-arms a reminder that has not fired", async () => {
    nextDay(app);
    const done = await task(app, { remindAt: at(HOUR) });
    const deleted = await task(app, { remindAt: at(HOUR) });
    const cleared = await task(app, { remindAt: at(HOUR) });
    const reopened = await task(app, { remindAt: at(2 * HOUR) });
    expect((await app.request("PATCH", `/tasks/${done}`, { body: { status: "done" } })).body.data.status).toBe("done");
    expect((await app.request("DELETE", `/tasks/${deleted}`)).status).toBe(204);
    expect((await app.request("PATCH", `/tasks/${cleared}`, { body: { remindAt: null } })).body.data.remindAt).toBeNull();
    await app.request("PATCH", `/tasks/${reopened}`, { body: { status: "done" } });
    const ids = new Set([done, deleted, cleared, reopened]);
    expect((await pendingReminders(app)).filter((j) => ids.has(j.payload.taskId as string))).toHaveLength(0);
    await app.request("PATCH", `/tasks/${reopened}`, { body: { status: "open" } });
    app.clock.set(new Date(at(3 * HOUR)));
    await app.deps.queue.drain();
    expect([done, deleted, cleared].map((id) => dueFor(app, id).length)).toEqual([0, 0, 0]);
    expect(dueFor(app, reopened)).toHaveLength(1);
  });

  test("a remindAt already past at creation fires at the next run of the job loop", async () => {
    nextDay(app);
    const id = await task(app, { remindAt: at(-HOUR) });
    await app.deps.queue.drain();
    expect(dueFor(app, id)).toHaveLength(1);
  });
});

describe("across a restart", () => {
  test("a reminder due while the appliance was down fires once after start-up", async () => {
    base = START.getTime();
    const first = await createTestApp({ start: START, config });
    license(first);
    const id = await task(first, { remindAt: at(HOUR) });
    await first.close({ keepData: true });

    const second = await createTestApp({ dataDir: first.dir, start: new Date(at(6 * HOUR)), config });
    try {
      await second.deps.queue.drain();
      expect(dueFor(second, id)).toHaveLength(1);
      await second.deps.queue.drain();
      expect(dueFor(second, id)).toHaveLength(1);
      const listed = (await second.request("GET", "/tasks")).body.data.find((t: { id: string }) => t.id === id);
      expect(listed.remindedAt).toBe(at(HOUR));
    } finally {
      await second.close();
    }
  });
});
