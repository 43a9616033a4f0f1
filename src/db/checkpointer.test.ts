/** The WAL checkpointer: under back-to-back group commits the WAL still starts over, so it stays bounded. */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "./client";
import { startCheckpointer } from "./checkpointer";
import { silentLogger } from "../platform/logger";

const dir = mkdtempSync(join(tmpdir(), "sb-ckpt-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("groups committed without a pause: the worker's short hold lets the WAL start over, so its file stays bounded", async () => {
  const path = join(dir, "busy.db");
  const db = openDatabase(path);
  db.$client.exec("CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB NOT NULL)");
  const insert = db.$client.prepare("INSERT INTO t (body) VALUES (?)");
  const checkpointer = startCheckpointer({ db, path, log: silentLogger, intervalMs: 20, restartFrames: 200 });
  const body = new Uint8Array(16_000); // 4 pages a row
  const written = () => (db.$client.query("SELECT count(*) AS n FROM t").get() as { n: number }).n * 4;
  let max = 0;
  // Groups back to back (each awaits the one before): ~40× the restart size written in all.
  while (written() < 8000) {
    await Promise.all(Array.from({ length: 20 }, () => db.batch(() => insert.run(body))));
    max = Math.max(max, statSync(`${path}-wal`).size);
  }
  checkpointer.stop();
  const pages = max / 4096;
  // Without the hold the WAL held every page written (8,000+); with it, a few rounds of the restart size.
  expect(pages).toBeLessThan(2000);
  expect((db.$client.query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check).toBe("ok");
  db.close();
});
