/** Group commit (db.batch): a promise that resolves means the write is stored (synced) — also when the disk fills. */
import { afterAll, describe, expect, test } from "bun:test";
import { fstatSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Database } from "bun:sqlite";
import { openDatabase } from "./client";
import { walSync } from "./wal-sync";

const dir = mkdtempSync(join(tmpdir(), "sb-client-"));
/** A database of its own in `dir` with one table `t (id)`, and its insert. */
function tableDb(file: string) {
  const db = openDatabase(join(dir, file));
  db.$client.exec("CREATE TABLE t (id INTEGER PRIMARY KEY)");
  return { db, insert: db.$client.prepare("INSERT INTO t (id) VALUES (?)") };
}
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
    outcomes.forEach((o, i) =>
      o.status === "fulfilled" ? stored.push(ids[i]!) : refused.push({ id: ids[i]!, code: (o.reason as { code?: string }).code ?? String(o.reason) }),
    );
  }
  const rows = (db.$client.query("SELECT id FROM t ORDER BY id").all() as { id: number }[]).map((r) => r.id);
  expect(rows).toEqual(stored);
  expect(refused.length).toBeGreaterThan(0);
  expect(new Set(refused.map((r) => r.code))).toEqual(new Set(["SQLITE_FULL"]));
  expect((db.$client.query("PRAGMA integrity_check").get() as { integrity_check: string }).integrity_check).toBe("ok");
  db.close();
});

test("a group commits lazily and is answered after its WAL sync; the connection is FULL again for every other commit", async () => {
  const { db, insert } = tableDb("lazy.db");
  const seen: number[] = [];
  const sync = () => (db.$client.query("PRAGMA synchronous").get() as { synchronous: number }).synchronous;
  await Promise.all([1, 2, 3].map((id) => db.batch(() => (seen.push(sync()), insert.run(id)))));
  expect(seen).toEqual([1, 1, 1]); // NORMAL inside the group
  expect(sync()).toBe(2); // FULL after it, for plain db.tx commits
  db.tx(() => insert.run(4));
  expect(sync()).toBe(2);
  expect(db.$client.query("SELECT count(*) AS n FROM t").get()).toEqual({ n: 4 });
  db.close();
});

describe("walSync", () => {
  const wal = join(dir, "sync-test.db-wal");
  writeFileSync(wal, "x");
  type Call = { fd: number; cb: (err: NodeJS.ErrnoException | null) => void };
  const fake = () => {
    const calls: Call[] = [];
    return { calls, datasync: ((fd: number, cb: Call["cb"]) => calls.push({ fd, cb })) as unknown as typeof import("node:fs").fdatasync };
  };
  const settled = async (ps: Promise<unknown>[]) => {
    const state = ps.map(() => "pending");
    ps.forEach((p, i) =>
      p.then(
        () => (state[i] = "ok"),
        () => (state[i] = "failed"),
      ),
    );
    await Bun.sleep(1);
    return state;
  };

  test("one sync at a time; callers that arrive while it runs wait for the next one, which covers their commits", async () => {
    const { calls, datasync } = fake();
    const w = walSync(wal, datasync);
    const first = w.sync();
    expect(calls.length).toBe(1);
    const later = [w.sync(), w.sync()];
    expect(calls.length).toBe(1); // the running sync may have started before their commits
    expect(await settled([first, ...later])).toEqual(["pending", "pending", "pending"]);
    calls[0]!.cb(null);
    expect(await settled([first, ...later])).toEqual(["ok", "pending", "pending"]);
    expect(calls.length).toBe(2);
    calls[1]!.cb(null);
    expect(await settled(later)).toEqual(["ok", "ok"]);
    w.close();
  });

  test("a failed sync fails its callers (not acknowledged); the next callers get a sync of their own", async () => {
    const { calls, datasync } = fake();
    const w = walSync(wal, datasync);
    const a = w.sync();
    const b = w.sync();
    calls[0]!.cb(Object.assign(new Error("EIO"), { code: "EIO" }));
    expect(await settled([a, b])).toEqual(["failed", "pending"]);
    expect(await a.catch((e) => e.code)).toBe("SQLITE_IOERR_FSYNC"); // 503 STORAGE_UNAVAILABLE, as SQLite's own
    calls[1]!.cb(null);
    expect(await settled([b])).toEqual(["ok"]);
    w.close();
  });

  test("a WAL file replaced at its path is reopened: the sync goes to the file SQLite writes", async () => {
    const { calls, datasync } = fake();
    const w = walSync(wal, datasync);
    const a = w.sync();
    calls[0]!.cb(null);
    await a;
    rmSync(wal);
    writeFileSync(wal, "y");
    const b = w.sync();
    calls[1]!.cb(null);
    await b;
    expect(fstatSync(calls[1]!.fd).ino).toBe(statSync(wal).ino);
    w.close();
  });

  test("closed while a sync runs: the file stays open until the sync has finished", async () => {
    const { calls, datasync } = fake();
    const w = walSync(wal, datasync);
    const a = w.sync();
    w.close();
    expect(() => fstatSync(calls[0]!.fd)).not.toThrow(); // the thread pool still syncs this descriptor
    calls[0]!.cb(null);
    await a;
    expect(() => fstatSync(calls[0]!.fd)).toThrow();
  });

  test("durable(): at once when nothing waits for a sync; else after the sync that covers every commit so far", async () => {
    const { calls, datasync } = fake();
    const w = walSync(wal, datasync);
    expect(await settled([w.durable()])).toEqual(["ok"]); // nothing committed
    w.committed();
    const a = w.durable(); // a commit not yet synced: starts a sync
    expect(calls.length).toBe(1);
    const b = w.durable(); // no commit since that sync started: the running one covers it
    expect(calls.length).toBe(1);
    w.committed();
    const c = w.durable(); // a commit after it started: the next one
    calls[0]!.cb(null);
    expect(await settled([a, b, c])).toEqual(["ok", "ok", "pending"]);
    expect(calls.length).toBe(2);
    calls[1]!.cb(null);
    expect(await settled([c, w.durable()])).toEqual(["ok", "ok"]);
    expect(calls.length).toBe(2);
    w.close();
  });
});

test("within: its own transaction when none is open; inside one, no savepoint — the caller's tx undoes it", () => {
  const { db, insert } = tableDb("within.db");
  const ids = () => (db.$client.query("SELECT id FROM t ORDER BY id").all() as { id: number }[]).map((r) => r.id);
  const failing = (id: number) => () => {
    insert.run(id);
    throw new Error("refused");
  };
  // Alone: a transaction of its own, rolled back on the throw.
  expect(() => db.within(failing(1))).toThrow("refused");
  expect(db.$client.inTransaction).toBe(false);
  expect(ids()).toEqual([]);
  // Inside a tx whose caller catches the throw and goes on: its write stays (no savepoint of its own)…
  db.tx(() => {
    insert.run(2);
    expect(() => db.within(failing(3))).toThrow("refused");
  });
  expect(ids()).toEqual([2, 3]);
  // …which is why a caller that goes on wraps it in a tx: then its write is undone alone.
  db.tx(() => {
    insert.run(4);
    expect(() => db.tx(() => db.within(failing(5)))).toThrow("refused");
  });
  expect(ids()).toEqual([2, 3, 4]);
  // A throw that reaches the outer tx undoes everything of it, and counts as a rollback.
  const before = db.rollbacks();
  expect(() => db.tx(() => (insert.run(6), db.within(failing(7))))).toThrow("refused");
  expect(ids()).toEqual([2, 3, 4]);
  expect(db.rollbacks()).toBe(before + 1);
  db.close();
});

test("dataVersion follows other connections' commits, also right after a transaction of ours (read once inside one)", () => {
  const path = join(dir, "version.db");
  const db = openDatabase(path);
  db.$client.exec("CREATE TABLE t (id INTEGER PRIMARY KEY)");
  const other = new Database(path);
  const v0 = db.dataVersion();
  other.exec("INSERT INTO t (id) VALUES (1)");
  const v1 = db.dataVersion();
  expect(v1).not.toBe(v0);
  const inside = db.tx(() => {
    db.$client.exec("INSERT INTO t (id) VALUES (2)");
    return [db.dataVersion(), db.dataVersion()];
  });
  expect(inside).toEqual([v1, v1]); // our own commits do not move it
  other.exec("INSERT INTO t (id) VALUES (3)"); // after our transaction ended: seen at once
  expect(db.dataVersion()).not.toBe(v1);
  expect(() =>
    db.tx(() =>
      db.within(() => {
        throw new Error("no");
      }),
    ),
  ).toThrow("no");
  const v2 = db.dataVersion();
  other.exec("INSERT INTO t (id) VALUES (4)"); // and after one that rolled back
  expect(db.dataVersion()).not.toBe(v2);
  other.close();
  db.close();
});

test("batch's onCommit runs after the group's COMMIT, before its answer; not for an item that failed", async () => {
  const { db, insert } = tableDb("oncommit.db");
  const seen: string[] = [];
  const ok = db
    .batch(
      () => insert.run(1),
      () => seen.push(`committed 1, in transaction: ${db.$client.inTransaction}`),
    )
    .then(() => seen.push("answered 1"));
  const failed = db
    .batch(
      () => insert.run(1),
      () => seen.push("committed 2"),
    )
    .catch(() => seen.push("refused 2")); // duplicate key
  await Promise.all([ok, failed]);
  expect(seen).toEqual(["committed 1, in transaction: false", "answered 1", "refused 2"]);
  db.close();
});

describe("background items (db.batch's third argument)", () => {
  /** Busy for twice the group's background slice now. */
  const long = (db: ReturnType<typeof tableDb>["db"]) => {
    const t = performance.now();
    const ms = db.backgroundSlice() * 2;
    while (performance.now() - t < ms);
  };

  test("run after the group's foreground items, one at least and the rest of the slice; what is left runs in later groups, after the requests that came meanwhile", async () => {
    const { db, insert } = tableDb("background.db");
    const seen: string[] = [];
    const item = (name: string, id: number, background: boolean, then?: () => void) =>
      db.batch(
        () => {
          seen.push(`run ${name}`);
          if (background) long(db);
          return insert.run(id).changes;
        },
        () => (seen.push(`commit ${name}`), then?.()),
        background,
      );
    let late: Promise<number> | undefined;
    const all = [
      item("bg1", 1, true, () => (late = item("fg2", 11, false))), // a request that arrives after the first group
      item("bg2", 2, true),
      item("bg3", 3, true),
      item("fg1", 10, false),
    ];
    expect(await Promise.all(all)).toEqual([1, 1, 1, 1]);
    expect(await late).toBe(1);
    expect(seen).toEqual([
      "run fg1",
      "run bg1",
      "commit fg1",
      "commit bg1", // queued first, the background items wait for fg1; bg1 fills the slice
      "run fg2",
      "run bg2",
      "commit fg2",
      "commit bg2",
      "run bg3",
      "commit bg3",
    ]);
    expect((db.$client.query("SELECT count(*) AS n FROM t").get() as { n: number }).n).toBe(5);
    db.close();
  });

  test("the slice is short while requests are writing, and long again once none has for a while", async () => {
    const { db, insert } = tableDb("slice.db");
    const quiet = db.backgroundSlice();
    await db.batch(() => insert.run(1)); // a request's write
    const busy = db.backgroundSlice();
    await Bun.sleep(150);
    expect({ quiet, busy, after: db.backgroundSlice() }).toEqual({ quiet: 8, busy: 1, after: 8 });
    await db.batch(() => insert.run(2), undefined, true); // background writes do not shorten it
    expect(db.backgroundSlice()).toBe(8);
    db.close();
  });

  test("an item the replay of its group had no slice left for is run again later, not answered from the undone run", async () => {
    const { db, insert } = tableDb("background-replay.db");
    const runs = [0, 0, 0];
    const answers = await Promise.all([
      db.batch(() => (runs[0]!++, insert.run(1).changes), undefined, true),
      db.batch(() => (runs[1]!++, insert.run(2).changes), undefined, true),
      db.batch(
        () => {
          runs[2]!++;
          long(db); // the slice is spent when the group runs again…
          try {
            db.attempt(() => {
              throw new Error("caught by the item");
            }); // …which this makes it do, isolated
          } catch {}
          return insert.run(3).changes;
        },
        undefined,
        true,
      ),
    ]);
    expect(answers).toEqual([1, 1, 1]);
    expect(runs).toEqual([2, 2, 2]); // the second and third ran again in a later group
    expect((db.$client.query("SELECT id FROM t ORDER BY id").all() as { id: number }[]).map((r) => r.id)).toEqual([1, 2, 3]);
    db.close();
  });

  test("foreground items are never cut: all of one turn's run in one group, however long", async () => {
    const { db, insert } = tableDb("foreground.db");
    const seen: string[] = [];
    const item = (id: number) =>
      db.batch(
        () => (seen.push(`run ${id}`), long(db), insert.run(id)),
        () => seen.push(`commit ${id}`),
      );
    await Promise.all([item(1), item(2), item(3)]);
    expect(seen).toEqual(["run 1", "run 2", "run 3", "commit 1", "commit 2", "commit 3"]);
    db.close();
  });

  test("one that throws is refused alone; the others of its group and those left for later are stored", async () => {
    const { db, insert } = tableDb("background-throws.db");
    const outcomes = await Promise.allSettled([
      db.batch(() => (long(db), insert.run(1)), undefined, true),
      db.batch(() => insert.run(1), undefined, true), // duplicate key
      db.batch(() => (long(db), insert.run(2)), undefined, true),
      db.batch(() => insert.run(3)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled", "fulfilled"]);
    expect((db.$client.query("SELECT id FROM t ORDER BY id").all() as { id: number }[]).map((r) => r.id)).toEqual([1, 2, 3]);
    db.close();
  });
});

describe("a group's items", () => {
  const statements = (db: ReturnType<typeof tableDb>["db"]) => {
    const seen: string[] = [];
    const note = (sql: string) => /^(SAVEPOINT|RELEASE|ROLLBACK)/.test(sql) && seen.push(sql);
    const { query, exec } = db.$client;
    db.$client.query = ((sql: string) => (note(sql), query.call(db.$client, sql))) as typeof query;
    db.$client.exec = ((sql: string) => (note(sql), exec.call(db.$client, sql))) as typeof exec;
    return seen;
  };
  /** One group of items (one event-loop turn); how often each ran, and each one's outcome. */
  const group = async (db: ReturnType<typeof tableDb>["db"], items: (() => unknown)[]) => {
    const runs = items.map(() => 0);
    const outcomes = await Promise.allSettled(items.map((fn, i) => db.batch(() => (runs[i]!++, fn()))));
    return { runs, outcomes: outcomes.map((o) => (o.status === "fulfilled" ? "ok" : ((o.reason as { code?: string }).code ?? String(o.reason)))) };
  };
  const ids = (db: ReturnType<typeof tableDb>["db"]) => (db.$client.query("SELECT id FROM t ORDER BY id").all() as { id: number }[]).map((r) => r.id);

  test("run without a savepoint each when none throws: once each, all committed", async () => {
    const { db, insert } = tableDb("optimistic.db");
    const seen = statements(db);
    const r = await group(db, [() => insert.run(1), () => insert.run(2), () => insert.run(3)]);
    expect(r).toEqual({ runs: [1, 1, 1], outcomes: ["ok", "ok", "ok"] });
    expect(seen).toEqual([]);
    expect(ids(db)).toEqual([1, 2, 3]);
    db.close();
  });

  test("one throws: the group is undone and run again without it, each item in a savepoint; a second later, optimistic again", async () => {
    const { db, insert } = tableDb("replay.db");
    insert.run(9);
    const seen = statements(db);
    // The second item's own write happens before it throws: the replay must not keep it.
    const r = await group(db, [() => insert.run(1), () => (insert.run(2), insert.run(9)), () => insert.run(3)]);
    expect(r.outcomes).toEqual(["ok", "SQLITE_CONSTRAINT_PRIMARYKEY", "ok"]);
    expect(r.runs).toEqual([2, 1, 1]); // the first ran before the throw and again; the third only in the replay
    expect(ids(db)).toEqual([1, 3, 9]);
    expect(seen).toEqual(["ROLLBACK", "SAVEPOINT sp1", "RELEASE sp1", "SAVEPOINT sp1", "RELEASE sp1"]);
    // Within a second of a refusal, groups isolate their items from the start: a refused one costs no replay.
    seen.length = 0;
    const next = await group(db, [() => insert.run(4), () => insert.run(9), () => insert.run(5)]);
    expect(next).toEqual({ runs: [1, 1, 1], outcomes: ["ok", "SQLITE_CONSTRAINT_PRIMARYKEY", "ok"] });
    expect(seen).toEqual(["SAVEPOINT sp1", "RELEASE sp1", "SAVEPOINT sp1", "ROLLBACK TO sp1; RELEASE sp1", "SAVEPOINT sp1", "RELEASE sp1"]);
    await Bun.sleep(1050);
    seen.length = 0;
    expect(await group(db, [() => insert.run(6), () => insert.run(7)])).toEqual({ runs: [1, 1], outcomes: ["ok", "ok"] });
    expect(seen).toEqual([]);
    expect(ids(db)).toEqual([1, 3, 4, 5, 6, 7, 9]);
    db.close();
  });

  test("an attempt that throws and is caught: the group runs again, the attempt in a savepoint; its writes undone, the item's kept", async () => {
    const { db, insert } = tableDb("attempt.db");
    insert.run(9);
    const caught: string[] = [];
    const item = () => {
      insert.run(1);
      try {
        db.attempt(() => (insert.run(2), insert.run(9)));
      } catch (e) {
        caught.push((e as { code: string }).code);
      }
      insert.run(3);
    };
    const seen = statements(db);
    const r = await group(db, [item, () => insert.run(4)]);
    expect(r).toEqual({ runs: [2, 1], outcomes: ["ok", "ok"] }); // the second item ran in the replay only
    expect(caught).toEqual(["SQLITE_CONSTRAINT_PRIMARYKEY", "SQLITE_CONSTRAINT_PRIMARYKEY"]);
    expect(seen).toEqual(["ROLLBACK", "SAVEPOINT sp1", "SAVEPOINT sp2", "ROLLBACK TO sp2; RELEASE sp2", "RELEASE sp1", "SAVEPOINT sp1", "RELEASE sp1"]);
    expect(ids(db)).toEqual([1, 3, 4, 9]);
    // Outside a group's optimistic run an attempt is a savepoint.
    seen.length = 0;
    db.tx(() => {
      insert.run(5);
      expect(() => db.attempt(() => (insert.run(6), insert.run(9)))).toThrow();
    });
    expect(seen).toEqual(["SAVEPOINT sp1", "ROLLBACK TO sp1; RELEASE sp1"]);
    expect(ids(db)).toEqual([1, 3, 4, 5, 9]);
    db.close();
  });

  test("a group of one that throws is refused without a replay, and the next groups stay optimistic", async () => {
    const { db, insert } = tableDb("single.db");
    insert.run(9);
    expect(await group(db, [() => (insert.run(1), insert.run(9))])).toEqual({ runs: [1], outcomes: ["SQLITE_CONSTRAINT_PRIMARYKEY"] });
    const seen = statements(db);
    expect(await group(db, [() => insert.run(2), () => insert.run(3)])).toEqual({ runs: [1, 1], outcomes: ["ok", "ok"] });
    expect(seen).toEqual([]);
    expect(ids(db)).toEqual([2, 3, 9]);
    db.close();
  });
});

test("read: its reads share one snapshot (another connection's commit meanwhile is not seen); inside a transaction, fn as is", () => {
  const { db, insert } = tableDb("read.db");
  insert.run(1);
  const other = new Database(join(dir, "read.db"));
  const count = () => (db.$client.query("SELECT count(*) AS n FROM t").get() as { n: number }).n;
  const seen = db.read(() => {
    const before = count();
    other.exec("INSERT INTO t (id) VALUES (2)");
    return [before, count(), db.$client.inTransaction];
  });
  expect(seen).toEqual([1, 1, true]);
  expect(count()).toBe(2);
  expect(db.$client.inTransaction).toBe(false);
  db.tx(() => expect(db.read(() => (insert.run(3), count()))).toBe(3)); // the caller's transaction: its own write seen
  other.close();
  db.close();
});

describe("afterCommit", () => {
  test("a plain transaction: committed after its COMMIT; a rolled-back savepoint's hooks: rolledBack; a released one's wait for the outer end", () => {
    const db = openDatabase(join(dir, "after.db"));
    const seen: string[] = [];
    const hook = (name: string) =>
      db.afterCommit(
        () => seen.push(`${name} committed, in tx ${db.$client.inTransaction}`),
        () => seen.push(`${name} rolled back`),
      );
    expect(() => hook("outside")).toThrow("outside a transaction");
    db.tx(() => {
      hook("a");
      db.tx(() => hook("b")); // released: waits for the outer COMMIT
      expect(() =>
        db.tx(() => {
          hook("c");
          throw new Error("no");
        }),
      ).toThrow("no");
      expect(seen).toEqual(["c rolled back"]);
    });
    expect(seen).toEqual(["c rolled back", "a committed, in tx false", "b committed, in tx false"]);
    seen.length = 0;
    expect(() =>
      db.tx(() => {
        db.tx(() => hook("d"));
        throw new Error("outer");
      }),
    ).toThrow("outer");
    expect(seen).toEqual(["d rolled back"]);
    db.close();
  });

  test("a group commit: committed after its sync, before the items are answered; a refused item's hooks, and those of the run it undid: rolledBack", async () => {
    const { db, insert } = tableDb("after-group.db");
    const seen: string[] = [];
    const item = (name: string, id: number) => () => {
      db.afterCommit(
        () => seen.push(`${name} committed`),
        () => seen.push(`${name} rolled back`),
      );
      insert.run(id);
    };
    const ok = db.batch(item("first", 1)).then(() => seen.push("first answered"));
    const refused = db.batch(item("second", 1)).catch(() => seen.push("second refused")); // duplicate key, after its hook
    await Promise.all([ok, refused]);
    // The group ran both items without savepoints, the second threw, so all of it rolled back; the first ran
    // again (in its savepoint) and committed.
    expect(seen).toEqual(["first rolled back", "second rolled back", "first committed", "first answered", "second refused"]);
    db.close();
  });
});

describe("db.unit: the asynchronous unit of work", () => {
  test("units whose stores answer at once share one group commit, and each sees its own writes", async () => {
    const { db, insert } = tableDb("unit-group.db");
    const count = () => (db.$client.query("SELECT count(*) AS n FROM t").get() as { n: number }).n;
    const store = { add: async (id: number) => insert.run(id).changes, count: async () => count() };
    let commits = 0;
    const exec = db.$client.query.bind(db.$client);
    db.$client.query = ((sql: string) => (sql === "COMMIT" && commits++, exec(sql))) as typeof db.$client.query;
    const seen = await Promise.all(
      [1, 2, 3].map((id) =>
        db.unit(async () => {
          await store.add(id);
          return store.count();
        }),
      ),
    );
    expect(seen).toEqual([1, 2, 3]);
    expect(commits).toBe(1);
    db.close();
  });

  test("a unit inside a unit is a savepoint: its failure, caught, undoes its writes alone", async () => {
    const { db, insert } = tableDb("unit-nested.db");
    await db.unit(async () => {
      insert.run(1);
      await expect(
        db.unit(async () => {
          insert.run(2);
          await Promise.resolve();
          throw new Error("refused");
        }),
      ).rejects.toThrow("refused");
      await db.join(async () => insert.run(3)); // join: the caller's transaction, no savepoint
    });
    expect((db.$client.query("SELECT id FROM t ORDER BY id").all() as { id: number }[]).map((r) => r.id)).toEqual([1, 3]);
    db.close();
  });

  test("a unit nested in a group's optimistic run takes no savepoint; when it throws, the group runs again with one", async () => {
    const { db, insert } = tableDb("unit-nested-group.db");
    const runs = [0, 0, 0];
    const savepoints: string[] = [];
    const query = db.$client.query.bind(db.$client);
    db.$client.query = ((sql: string) => (sql.startsWith("SAVEPOINT") && savepoints.push(sql), query(sql))) as typeof db.$client.query;
    const item = (round: number, i: number, fails: boolean) =>
      db.unit(async () => {
        runs[i]!++;
        insert.run(100 * round + 10 * i);
        await db
          .unit(async () => {
            insert.run(100 * round + 10 * i + 1);
            if (fails) throw new Error("refused");
          })
          .catch(() => {});
      });
    await Promise.all([item(0, 0, false), item(0, 1, false)]);
    expect([runs, savepoints]).toEqual([[1, 1, 0], []]); // one optimistic run, no savepoint at all
    await Promise.all([item(1, 0, false), item(1, 1, false), item(1, 2, true)]);
    expect(runs).toEqual([3, 3, 2]); // the optimistic run, then the isolated one
    expect(savepoints.length).toBeGreaterThan(0);
    // The failed nested unit's write undone alone; its item's own write and the others' kept.
    expect((db.$client.query("SELECT id FROM t WHERE id >= 100 ORDER BY id").all() as { id: number }[]).map((r) => r.id)).toEqual([100, 101, 110, 111, 120]);
    db.close();
  });

  test("while a unit awaits, a synchronous transaction from another chain is refused, not joined; units wait their turn", async () => {
    const { db, insert } = tableDb("unit-foreign.db");
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const first = db.unit(async () => {
      insert.run(1);
      await gate; // a store that really waits (PostgreSQL's network)
      insert.run(2);
    });
    await Bun.sleep(5); // the group is open and waiting
    expect(() => db.tx(() => insert.run(3))).toThrow("outside the unit of work");
    expect(() => db.within(() => insert.run(3))).toThrow("outside the unit of work");
    const second = db.unit(async () => insert.run(4)); // queued behind the first group
    release();
    await Promise.all([first, second]);
    expect((db.$client.query("SELECT id FROM t ORDER BY id").all() as { id: number }[]).map((r) => r.id)).toEqual([1, 2, 4]);
    db.close();
  });

  test("a unit that throws after awaiting is refused alone; the group's other units are stored", async () => {
    const { db, insert } = tableDb("unit-fail.db");
    const outcomes = await Promise.allSettled([
      db.unit(async () => insert.run(1)),
      db.unit(async () => {
        insert.run(2);
        await Promise.resolve();
        insert.run(1); // duplicate key
      }),
      db.unit(async () => insert.run(3)),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((db.$client.query("SELECT id FROM t ORDER BY id").all() as { id: number }[]).map((r) => r.id)).toEqual([1, 3]);
    db.close();
  });
});

describe("db.track: a unit waits for the work started on its behalf", () => {
  test("an asynchronous subscriber's writes commit with the unit; its failure fails the unit; a synchronous tx refuses it", async () => {
    const { db, insert } = tableDb("track.db");
    const subscriber = async (id: number) => {
      await Promise.resolve();
      insert.run(id);
    };
    await db.unit(async () => {
      insert.run(1);
      db.track(subscriber(2)); // events.emit does this for a subscriber that returns a promise
    });
    await expect(
      db.unit(async () => {
        insert.run(3);
        db.track(subscriber(1)); // duplicate key: the unit fails, 3 is undone
      }),
    ).rejects.toThrow();
    expect((db.$client.query("SELECT id FROM t ORDER BY id").all() as { id: number }[]).map((r) => r.id)).toEqual([1, 2]);
    // NB! A synchronous transaction cannot wait: it refuses loudly (4 undone). What the subscriber writes after
    // its first await cannot be stopped — that is why an emitter with asynchronous subscribers must be a unit.
    expect(() =>
      db.tx(() => {
        insert.run(4);
        db.track(subscriber(5));
      }),
    ).toThrow("nothing it calls may await");
    expect(db.$client.query("SELECT id FROM t WHERE id = 4").get()).toBeNull();
    db.close();
  });

  test("a unit that fails while work it tracked still runs waits for that work before rolling back: nothing of it is written outside", async () => {
    const { db, insert } = tableDb("track-abort.db");
    const subscriber = async (id: number) => {
      await Bun.sleep(10); // still running when the unit fails
      insert.run(id);
    };
    const fails = (sync: boolean) =>
      db.unit(() => {
        db.track(subscriber(sync ? 7 : 8));
        if (sync) throw new Error("refused at once");
        return Promise.reject(new Error("refused after awaiting"));
      });
    await expect(fails(true)).rejects.toThrow("refused at once");
    await expect(fails(false)).rejects.toThrow("refused after awaiting");
    await Bun.sleep(30);
    expect(db.$client.query("SELECT id FROM t").all()).toEqual([]);
    db.close();
  });
});
