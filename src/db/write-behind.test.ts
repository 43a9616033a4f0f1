/** writeBehind and db.beforeCommit: kept-back writes land once per key at COMMIT, and never outlive a rollback. */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "./client";
import { writeBehind } from "./write-behind";

const dir = mkdtempSync(join(tmpdir(), "sb-write-behind-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Counters `c (k, n)` whose increments are kept back, written by the asynchronous contract; `writes` counts the UPDATEs. */
function counters(file: string) {
  const db = openDatabase(join(dir, file));
  db.$client.exec("CREATE TABLE c (k TEXT PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO c VALUES ('a', 0), ('b', 0)");
  const writes: { key: string; values: number[] }[] = [];
  const wb = writeBehind<number>(db, async (key, values) => {
    writes.push({ key, values });
    await db.sql("UPDATE c SET n = n + ? WHERE k = ?").run(
      values.reduce((s, v) => s + v, 0),
      key,
    );
  });
  const n = (k: string) => (db.$client.query("SELECT n FROM c WHERE k = ?").get(k) as { n: number }).n;
  return { db, wb, writes, n };
}

test("values added in a unit are written once per key, just before its COMMIT", async () => {
  const { db, wb, writes, n } = counters("commit.db");
  await db.unit(async () => {
    await wb.add("a", 1);
    await wb.add("b", 10);
    await wb.add("a", 2);
    expect(writes).toEqual([]);
    expect(n("a")).toBe(0); // not written yet: a reader of the row calls flush() first
  });
  expect(writes).toEqual([
    { key: "a", values: [1, 2] },
    { key: "b", values: [10] },
  ]);
  expect([n("a"), n("b")]).toEqual([3, 10]);
  db.close();
});

test("flush() writes what is kept at once; what is added after it, at COMMIT", async () => {
  const { db, wb, writes, n } = counters("flush.db");
  await db.unit(async () => {
    await wb.add("a", 1);
    await wb.flush();
    expect(n("a")).toBe(1);
    await wb.add("a", 5);
  });
  expect(writes.map((w) => w.values)).toEqual([[1], [5]]);
  expect(n("a")).toBe(6);
  db.close();
});

test("outside a unit a value is written at once", async () => {
  const { db, wb, n } = counters("plain.db");
  await wb.add("b", 4);
  expect(n("b")).toBe(4);
  db.close();
});

test("a savepoint that rolls back drops what it added; the rest is written", async () => {
  const { db, wb, n } = counters("savepoint.db");
  await db.unit(async () => {
    await wb.add("a", 1);
    const undone = db.unit(async () => {
      await wb.add("a", 100);
      await wb.add("b", 100);
      throw new Error("undo");
    });
    await expect(undone).rejects.toThrow("undo");
    await wb.add("b", 2);
  });
  expect([n("a"), n("b")]).toEqual([1, 2]);
  db.close();
});

test("a flush inside a savepoint that rolls back: SQLite undoes its write, and the values added outside it are written again at COMMIT", async () => {
  const { db, wb, n } = counters("flush-undone.db");
  await db.unit(async () => {
    await wb.add("a", 1);
    const undone = db.unit(async () => {
      await wb.add("a", 100);
      await wb.flush(); // writes 101 inside the savepoint
      throw new Error("undo");
    });
    await expect(undone).rejects.toThrow("undo");
    expect(n("a")).toBe(0);
  });
  expect(n("a")).toBe(1);
  db.close();
});

test("a unit that rolls back writes nothing, and leaves nothing for the next one", async () => {
  const { db, wb, writes, n } = counters("rollback.db");
  const undone = db.unit(async () => {
    await wb.add("a", 7);
    throw new Error("undo");
  });
  await expect(undone).rejects.toThrow("undo");
  await db.unit(() => wb.add("b", 1));
  expect(writes).toEqual([{ key: "b", values: [1] }]);
  expect([n("a"), n("b")]).toEqual([0, 1]);
  db.close();
});

test("a group commit writes its items' values once, at its COMMIT; an item that throws has its own dropped", async () => {
  const { db, wb, writes, n } = counters("group.db");
  const items = [1, 2, 3, 4].map((v) =>
    db.unit(async () => {
      await wb.add("a", v);
      if (v === 3) throw new Error("refused");
    }),
  );
  const outcomes = await Promise.allSettled(items);
  expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "fulfilled", "rejected", "fulfilled"]);
  expect(n("a")).toBe(7);
  // The optimistic run was undone (nothing written: the write comes at COMMIT); its replay wrote once.
  expect(writes).toEqual([{ key: "a", values: [1, 2, 4] }]);
  db.close();
});

test("db.beforeCommit: runs once, inside the transaction, however often registered; awaited when async; a throw fails the unit", async () => {
  const db = openDatabase(join(dir, "before.db"));
  db.$client.exec("CREATE TABLE t (id INTEGER PRIMARY KEY)");
  let runs = 0;
  const fn = async () => {
    runs++;
    expect(db.inUnit()).toBe(true);
    await db.sql("INSERT INTO t VALUES (?)").run(runs);
    await db.sql("INSERT INTO t VALUES (?)").run(100 + runs); // after an await: still before COMMIT
  };
  await db.unit(async () => {
    db.beforeCommit(fn);
    await db.unit(async () => db.beforeCommit(fn)); // a savepoint's registration is the transaction's
    db.beforeCommit(fn);
  });
  expect(runs).toBe(1);
  expect(db.$client.query("SELECT id FROM t ORDER BY id").values()).toEqual([[1], [101]]);
  const refused = db.unit(async () => {
    await db.sql("INSERT INTO t VALUES (2)").run();
    db.beforeCommit(async () => {
      await Bun.sleep(0);
      throw new Error("refused at commit");
    });
  });
  await expect(refused).rejects.toThrow("refused at commit");
  expect(db.$client.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 2 });
  expect(() => db.beforeCommit(fn)).toThrow("outside a transaction");
  db.close();
});
