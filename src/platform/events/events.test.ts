import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { sweepEvents, uuidV7Floor } from "./events";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ start: new Date("2026-01-01T00:00:00Z") });
});
afterAll(() => app.close());

test("uuidV7Floor sorts below every id made at or after the moment, above every id made before", () => {
  const at = new Date("2026-03-01T12:00:00Z");
  const floor = uuidV7Floor(at);
  const before = Bun.randomUUIDv7("hex", at.getTime() - 1);
  const after = Bun.randomUUIDv7("hex", at.getTime());
  expect(before < floor).toBe(true);
  expect(after >= floor).toBe(true);
});

test("retention deletes outbox events older than the cut-off, keeps newer ones; emit runs inside the caller's transaction", () => {
  const emit = (type: string) => app.deps.db.tx(() => app.deps.events.emit({ companyId: app.company.id, type, data: { n: 1 } }));
  const old = emit("contact.created");
  app.clock.advance(31 * 24 * 3_600_000);
  const recent = emit("contact.updated");
  // Ids are made from the real clock; give the old one an old id as the appliance would have.
  const oldId = Bun.randomUUIDv7("hex", new Date("2026-01-01T00:00:00Z").getTime());
  app.deps.db.$client.query("UPDATE events SET id = ? WHERE id = ?").run(oldId, old.id);
  const removed = sweepEvents(app.deps.db, new Date(app.clock.now().getTime() - 30 * 24 * 3_600_000));
  expect(removed).toBeGreaterThanOrEqual(1);
  const ids = (app.deps.db.$client.query("SELECT id FROM events").all() as { id: string }[]).map((r) => r.id);
  expect(ids).toContain(recent.id);
  expect(ids).not.toContain(oldId);
  expect(app.deps.scheduler.tasks.has("events-retention")).toBe(true);
});
