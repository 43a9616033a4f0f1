/** Group commit (db.batch): a promise that resolves means the write is stored — also when the disk fills. */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "./client";

const dir = mkdtempSync(join(tmpdir(), "sb-client-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("when the disk fills in the middle of a group, every item answered as stored is stored, and none other", async () => {
  const db = openDatabase(join(dir, "full.db"));
  db.$client.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)");
  const pages = (db.$client.query("PRAGMA page_count").get() as { page_count: number }).page_count;
  db.$client.exec(`PRAGMA max_page_count = ${pages + 3}`); // a full file system, a few pages from now
  const insert = db.$client.prepare("INSERT INTO t (id, body) VALUES (?, ?)");
  const stored: number[] = [];
  const refused: { id: number; code: string }[] = [];
  for (let round = 0; round < 20; round++) {
    // One event-loop turn: one group, one transaction, an item per row.
    const ids = Array.from({ length: 5 }, (_, i) => round * 5 + i);
    const outcomes = await Promise.allSettled(ids.map((id) => db.batch(() => insert.run(id, "x".repeat(700)))));
    outcomes.forEach((o, i) => (o.status === "fulfilled" ? stored.push(ids[i]!) : refused.push({ id: ids[i]!, code: (o.reason as { code?: string }).code ?? String(o.reason) })));
  }
  const rows = (db.$client.query("SELECT id FROM t ORDER BY id").all() as { id: number }[]).map((r) => r.id);
  expect(rows).toEqual(stored);
  expect(refused.length).toBeGreaterThan(0);
  expect(new Set(refused.map((r) => r.code))).toEqual(new Set(["SQLITE_FULL"]));
  expect((db.$client.query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check).toBe("ok");
  db.close();
});
