/** writeBehind and db.beforeCommit: kept-back writes land once per key at COMMIT, and never outlive a rollback. */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "./client";
import { writeBehind } from "./write-behind";

const dir = mkdtempSync(join(tmpdir(), "sb-write-behind-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Counters `c (k, n)` whose increments are kept back; `writes` counts the UPDATEs. */
function counters(file: string) {
  const db = openDatabase(join(dir, file));
  db.$client.exec("CREATE TABLE c (k TEXT PRIMARY KEY, n INTEGER NOT NULL); INSERT INTO c VALUES ('a', 0), ('b', 0)");
  const writes: { key: string; values: number[] }[] = [];
  const wb = writeBehind<number>(db, (key, values) => {
    writes.push({ key, values });
    db.$client.query("UPDATE c SET n = n + ? WHERE k = ?").run(
      values.reduce((s, v) => s + v, 0),
      key,
    );
  });
  const n = (k: string) => (db.$client.query("SELECT n FROM c WHERE k = ?").get(k) as { n: number }).n;
  return { db, wb, writes, n };
}

test("values added in a transaction are written once per key, just before its COMMIT", () => {
  const { db, wb, writes, n } = counters("commit.db");
  db.tx(() => {
    wb.add("a", 1);
    wb.add("b", 10);
    wb.add("a", 2);
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

test("flush() writes what is kept at once; what is added after it, at COMMIT", () => {
  const { db, wb, writes, n } = counters("flush.db");
  db.tx(() => {
    wb.add("a", 1);
    wb.flush();
    expect(n("a")).toBe(1);
    wb.add("a", 5);
  });
  expect(writes.map((w) => w.values)).toEqual([[1], [5]]);
  expect(n("a")).toBe(6);
  db.close();
});

test("outside a transaction a value is written at once", () => {
  const { db, wb, n } = counters("plain.db");
  wb.add("b", 4);
  expect(n("b")).toBe(4);
  db.close();
});

test("a savepoint that rolls back drops what it added; the rest is written", () => {
  const { db, wb, n } = counters("savepoint.db");
  db.tx(() => {
    wb.add("a", 1);
    expect(() =>
      db.tx(() => {
        wb.add("a", 100);
        wb.add("b", 100);
        throw new Error("undo");
      }),
    ).toThrow("undo");
    wb.add("b", 2);
  });
  expect([n("a"), n("b")]).toEqual([1, 2]);
  db.close();
});

test("a flush inside a savepoint that rolls back: SQLite undoes its write, and the values added outside it are written again at COMMIT", () => {
  const { db, wb, n } = counters("flush-undone.db");
  db.tx(() => {
    wb.add("a", 1);
    expect(() =>
      db.tx(() => {
        wb.add("a", 100);
        wb.flush(); // writes 101 inside the savepoint
        throw new Error("undo");
      }),
    ).toThrow("undo");
    expect(n("a")).toBe(0);
  });
  expect(n("a")).toBe(1);
  db.close();
});

test("a transaction that rolls back writes nothing, and leaves nothing for the next one", () => {
  const { db, wb, writes, n } = counters("rollback.db");
  expect(() =>
    db.tx(() => {
      wb.add("a", 7);
      throw new Error("undo");
    }),
  ).toThrow("undo");
  db.tx(() => wb.add("b", 1));
  expect(writes).toEqual([{ key: "b", values: [1] }]);
  expect([n("a"), n("b")]).toEqual([0, 1]);
  db.close();
});

test("a group commit writes its items' values once, at its COMMIT; an item that throws has its own dropped", async () => {
  const { db, wb, writes, n } = counters("group.db");
  const items = [1, 2, 3, 4].map((v) =>
    db.batch(() => {
      wb.add("a", v);
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

test("db.beforeCommit: runs once, inside the transaction, however often registered; a throw fails the transaction", () => {
  const db = openDatabase(join(dir, "before.db"));
  db.$client.exec("CREATE TABLE t (id INTEGER PRIMARY KEY)");
  let runs = 0;
  const fn = () => {
    runs++;
    expect(db.$client.inTransaction).toBe(true);
  };
  db.tx(() => {
    db.beforeCommit(fn);
    db.tx(() => db.beforeCommit(fn)); // a savepoint's registration is the transaction's
    db.beforeCommit(fn);
  });
  expect(runs).toBe(1);
  expect(() =>
    db.tx(() => {
      db.$client.exec("INSERT INTO t VALUES (1)");
      db.beforeCommit(() => {
        throw new Error("refused at commit");
      });
    }),
  ).toThrow("refused at commit");
  expect(db.$client.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 0 });
  expect(() => db.beforeCommit(fn)).toThrow("outside a transaction");
  db.close();
});
