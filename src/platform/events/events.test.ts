import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { createEventBus, type DomainEvent, type EventBus } from "./events";

/** A map of the bus's own tests (the app's is EventMap, src/events.ts). */
type TestEvents = {
  "thing.created": { n: number };
  "thing.updated": { n: number };
  "thing.deleted": { n?: number };
  "thing.archived": { n: number };
  "thing.moved": { from: string; to: string };
};

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ start: new Date("2026-01-01T00:00:00Z") });
});
afterAll(() => app.close());

test("emit hands each event to every subscriber, in emit order and subscription order; an unsubscribed subscriber gets nothing", () => {
  const bus = createEventBus<TestEvents>({ now: () => new Date("2026-02-01T00:00:00Z") });
  const calls: string[] = [];
  const first = bus.subscribe((e) => void calls.push(`first ${e.type}`));
  bus.subscribe((e) => void calls.push(`second ${e.type}`));
  const gone = bus.subscribe((e) => void calls.push(`gone ${e.type}`));
  gone();
  const a = bus.emit({ companyId: "c1", type: "thing.created", data: { n: 1 } });
  const b = bus.emit({ companyId: "c1", type: "thing.updated", data: { n: 2 } });
  expect(calls).toEqual(["first thing.created", "second thing.created", "first thing.updated", "second thing.updated"]);
  expect({ ...a } as Record<string, unknown>).toEqual({
    id: expect.any(String),
    companyId: "c1",
    type: "thing.created",
    data: { n: 1 },
    createdAt: new Date("2026-02-01T00:00:00Z"),
  });
  expect(b.id > a.id).toBe(true); // UUID v7: ids sort by emit order

  first();
  bus.emit({ companyId: "c1", type: "thing.deleted", data: {} });
  expect(calls.at(-1)).toBe("second thing.deleted");
});

test("a subscriber's writes commit with the caller's unit and roll back with it (or with its savepoint)", async () => {
  const db = app.deps.db;
  // seq numbers the rows in insert order (SQLite: the rowid itself; PostgreSQL has no rowid).
  await db.sql(`CREATE TABLE subscriber_rows (seq ${db.engine === "postgres" ? "bigserial" : "INTEGER"} PRIMARY KEY, event_id TEXT NOT NULL)`).run();
  // An asynchronous subscriber: its unit waits for its writes (db.track).
  // The app's bus with this file's events: types of its own, which no subscriber of the app reads (the recorder lists them).
  const events = app.deps.events as unknown as EventBus<TestEvents>;
  const unsubscribe = events.subscribe(async (e) => {
    await db.sql("INSERT INTO subscriber_rows (event_id) VALUES (?)").run(e.id);
  });
  const rows = async () => ((await db.sql("SELECT event_id FROM subscriber_rows ORDER BY seq").all()) as { event_id: string }[]).map((r) => r.event_id);
  const emit = (type: "thing.created" | "thing.updated" | "thing.deleted" | "thing.archived") =>
    events.emit({ companyId: app.company.id, type, data: { n: 1 } });
  try {
    const kept = await db.unit(() => emit("thing.created"));
    const lost: DomainEvent<TestEvents>[] = [];
    const failingChange = (type: "thing.updated" | "thing.deleted") => async () => {
      lost.push(emit(type));
      throw new Error("the change fails after its event");
    };
    await expect(db.unit(failingChange("thing.updated"))).rejects.toThrow("the change fails after its event");
    const outer = await db.unit(async () => {
      await expect(db.unit(failingChange("thing.deleted"))).rejects.toThrow("the change fails after its event");
      return emit("thing.archived");
    });
    // In a group commit the outer unit runs twice: its nested unit threw in the optimistic run (no savepoint
    // there), so the group ran again, each unit in a savepoint. Units side by side (Bun.SQL) run it once.
    const replayed = db.concurrentUnits ? [] : ["thing.deleted"];
    expect(lost.map((e): string => e.type)).toEqual(["thing.updated", "thing.deleted", ...replayed]);
    expect(await rows()).toEqual([kept.id, outer.id]);
    // The test app's recorder is a subscriber too: it lists only what committed.
    expect(app.emitted.map((e): string => e.type)).toEqual(["thing.created", "thing.archived"]);
    expect(app.emitted[0] as unknown).toBe(kept);
  } finally {
    unsubscribe();
  }
});

test("on hands a subscriber the events of its types only, typed, in subscription order among every subscriber", async () => {
  const bus = createEventBus<TestEvents>({ now: () => new Date("2026-02-01T00:00:00Z") });
  const calls: string[] = [];
  bus.subscribe((e) => void calls.push(`all ${e.type}`));
  const off = bus.on("thing.moved", (e) => void calls.push(`moved ${e.data.from}→${e.data.to}`));
  bus.on(["thing.created", "thing.updated"], (e) => void calls.push(`thing ${e.type} ${e.data.n}`));
  // A lazy payload: built when a subscriber first reads it, once.
  let built = 0;
  bus.emit({ companyId: "c1", type: "thing.created", data: () => (built++, { n: 1 }) });
  bus.emit({ companyId: "c1", type: "thing.moved", data: { from: "a", to: "b" } });
  bus.emit({ companyId: "c1", type: "thing.deleted", data: {} });
  off();
  bus.emit({ companyId: "c1", type: "thing.moved", data: { from: "b", to: "c" } });
  expect(calls).toEqual(["all thing.created", "thing thing.created 1", "all thing.moved", "moved a→b", "all thing.deleted", "all thing.moved"]);
  expect(built).toBe(1);

  // The compiler checks names and payloads (tsc runs over the tests).
  // @ts-expect-error: no such event type
  expect(() => bus.emit({ companyId: "c1", type: "thing.gone", data: { n: 1 } })).not.toThrow();
  // @ts-expect-error: a wrong payload
  bus.emit({ companyId: "c1", type: "thing.moved", data: { n: 1 } });
  // @ts-expect-error: a subscriber of other events does not get thing.moved's payload
  bus.on(["thing.created"], (e) => void e.data.from);
  bus.subscribe((e) => {
    if (e.type === "thing.moved") expect(typeof e.data.to).toBe("string"); // narrowed by its type
  });
});
