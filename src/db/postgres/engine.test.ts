/**
 * The asynchronous PostgreSQL engine (engine.ts): units and savepoints routed by the caller's chain, their
 * hooks, retries of a unit that lost a race, drizzle's builder through the proxy, the data version, and an
 * event loop that stays free while a statement waits for a lock held elsewhere.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { eq } from "drizzle-orm";
import { companies } from "../../modules/companies/companies.table";
import { freshPostgresDatabase, postgresAvailable } from "../../../test/helpers/postgres";
import { storeDb } from "../client";
import { openPostgres } from "./engine";
import { migratePostgresAsync } from "./migrate";

describe.skipIf(!postgresAvailable())("the asynchronous PostgreSQL engine", () => {
  let url: string;
  let db: ReturnType<typeof openPostgres>;
  let admin: SQL; // another session, as another instance would be
  const count = async (where = "TRUE") => Number((await db.sql(`SELECT count(*) AS n FROM t WHERE ${where}`).get())!.n);

  beforeAll(async () => {
    url = await freshPostgresDatabase();
    expect((await migratePostgresAsync(url, { version: "test" })).applied).toBeGreaterThan(0);
    expect((await migratePostgresAsync(url, { version: "test" })).applied).toBe(0); // once
    db = openPostgres(url, { poolSize: 6, statementTimeoutMs: 5000 });
    admin = new SQL(url, { max: 2 });
    await admin.unsafe("CREATE TABLE t (id bigint PRIMARY KEY, s text)");
  });
  afterAll(async () => {
    await db?.end();
    await admin?.close();
  });

  test("a unit commits its writes together; a throw undoes all of them; outside a unit a statement runs on the pool", async () => {
    await db.unit(async () => {
      await db.sql("INSERT INTO t (id, s) VALUES (?, ?)").run(1, "a");
      expect(await count("id = 1")).toBe(1); // the unit sees its own write…
      expect(Number((await admin`SELECT count(*) AS n FROM t WHERE id = 1`)[0].n)).toBe(0); // …nobody else yet
      await db.sql("INSERT INTO t (id, s) VALUES (?, ?)").run(2, "b");
    });
    expect(await count()).toBe(2);
    const failed = db.unit(async () => {
      await db.sql("INSERT INTO t (id, s) VALUES (?, ?)").run(3, "c");
      throw new Error("refused");
    });
    await expect(failed).rejects.toThrow("refused");
    expect(await count("id = 3")).toBe(0);
    await db.sql("DELETE FROM t").run();
  });

  test("a unit inside a unit is a savepoint: its throw undoes it alone, and the caller may catch it and go on", async () => {
    const hooks: string[] = [];
    await db.unit(async () => {
      await db.sql("INSERT INTO t (id) VALUES (1)").run();
      db.afterCommit(
        () => hooks.push("outer committed"),
        () => hooks.push("outer rolled back"),
      );
      await db
        .unit(async () => {
          await db.sql("INSERT INTO t (id) VALUES (2)").run();
          db.afterCommit(
            () => hooks.push("inner committed"),
            () => hooks.push("inner rolled back"),
          );
          throw new Error("inner");
        })
        .catch(() => {});
      await db.unit(async () => {
        await db.sql("INSERT INTO t (id) VALUES (3)").run();
        db.afterCommit(
          () => hooks.push("kept committed"),
          () => hooks.push("kept rolled back"),
        );
      });
      expect(hooks).toEqual(["inner rolled back"]); // nothing is committed before the unit is
    });
    expect((await db.sql("SELECT id FROM t ORDER BY id").values()).flat()).toEqual([1, 3]);
    expect(hooks).toEqual(["inner rolled back", "outer committed", "kept committed"]);
    await db.sql("DELETE FROM t").run();
  });

  test("db.join runs in the caller's unit with no savepoint, or in a unit of its own; hooks and writes need a unit", async () => {
    await db.unit(async () => {
      await db.join(async () => db.sql("INSERT INTO t (id) VALUES (1)").run());
      expect(await count()).toBe(1);
    });
    await db.join(async () => db.sql("INSERT INTO t (id) VALUES (2)").run());
    expect(await count()).toBe(2);
    expect(() =>
      db.afterCommit(
        () => {},
        () => {},
      ),
    ).toThrow(/outside a unit/);
    expect(() => db.tx(() => 1)).toThrow(/synchronous transaction/);
    await db.sql("DELETE FROM t").run();
  });

  test("a unit waits for the work it tracked and for what runs before its commit; a tracked failure fails it", async () => {
    const order: string[] = [];
    await db.unit(async () => {
      db.track(
        (async () => {
          await Bun.sleep(20);
          await db.sql("INSERT INTO t (id) VALUES (1)").run(); // still inside: the subscriber's chain
          order.push("tracked");
        })(),
      );
      db.beforeCommit(async () => {
        order.push("before commit");
        await db.sql("UPDATE t SET s = 'flushed'").run();
      });
      order.push("body");
    });
    expect(order).toEqual(["body", "tracked", "before commit"]);
    expect((await db.sql("SELECT s FROM t").get())!.s).toBe("flushed");
    const failing = db.unit(async () => {
      await db.sql("INSERT INTO t (id) VALUES (2)").run();
      db.track(Promise.reject(new Error("subscriber failed")));
    });
    await expect(failing).rejects.toThrow("subscriber failed");
    expect(await count()).toBe(1);
    await db.sql("DELETE FROM t").run();
  });

  test("a unit that fails while work it tracked still runs waits for that work: nothing of it is written outside the transaction", async () => {
    const fails = db.unit(async () => {
      db.track(
        (async () => {
          await Bun.sleep(20);
          await db.sql("INSERT INTO t (id) VALUES (9)").run();
        })(),
      );
      throw new Error("refused");
    });
    await expect(fails).rejects.toThrow("refused");
    await Bun.sleep(40);
    expect(await count()).toBe(0);
  });

  test("two units in a deadlock: the loser runs again, whole, and the hooks of its first run are rolled back", async () => {
    await db.sql("INSERT INTO t (id, s) VALUES (1, ''), (2, '')").run();
    const hooks: string[] = [];
    let runs = 0;
    const cross = (first: number, second: number, tag: string) =>
      db.unit(async () => {
        runs++;
        db.afterCommit(
          () => hooks.push(`${tag} committed`),
          () => hooks.push(`${tag} rolled back`),
        );
        await db.sql("UPDATE t SET s = s || ? WHERE id = ?").run(tag, first);
        await Bun.sleep(100);
        await db.sql("UPDATE t SET s = s || ? WHERE id = ?").run(tag, second);
      });
    await Promise.all([cross(1, 2, "a"), cross(2, 1, "b")]);
    expect(runs).toBe(3); // one of them twice
    expect(hooks.filter((h) => h.endsWith("committed") && !h.includes("rolled"))).toHaveLength(2);
    expect(hooks.filter((h) => h.endsWith("rolled back"))).toHaveLength(1);
    // Each row has both tags once: the loser's first run left nothing.
    for (const r of await db.sql("SELECT s FROM t").all()) expect(String(r.s).split("").sort().join("")).toBe("ab");
    await db.sql("DELETE FROM t").run();
  });

  test("drizzle's builder runs through the engine: insert, select, get, update with changes, inside and outside a unit", async () => {
    const s = storeDb(db);
    const row = { id: "co1", slug: "acme", name: "Acme", createdAt: new Date(1764000000000) };
    await s.unit(async () => {
      await s.insert(companies).values(row).run();
      expect(await s.select().from(companies).where(eq(companies.id, "co1")).get()).toMatchObject(row);
    });
    expect(await s.select({ slug: companies.slug }).from(companies).all()).toEqual([{ slug: "acme" }]);
    expect((await s.update(companies).set({ name: "Acme Ltd" }).where(eq(companies.id, "co1")).run()).changes).toBe(1);
    expect(await s.select().from(companies).where(eq(companies.id, "nope")).get()).toBeUndefined();
    expect(
      (
        await s
          .insert(companies)
          .values({ ...row, id: "co2", slug: "b" })
          .returning({ id: companies.id })
          .all()
      ).map((r) => r.id),
    ).toEqual(["co2"]);
  });

  test("a statement blocked by another session's lock holds only its own caller: the event loop answers meanwhile", async () => {
    await db.sql("INSERT INTO t (id, s) VALUES (1, '')").run();
    const locker = await admin.reserve();
    await locker`BEGIN`;
    await locker`LOCK TABLE t IN ACCESS EXCLUSIVE MODE`;
    const started = performance.now();
    const blocked = db.unit(async () => db.sql("UPDATE t SET s = 'x' WHERE id = 1").run());
    // Timers fire on time while the update waits.
    const ticks: number[] = [];
    for (let i = 0; i < 5; i++) {
      const at = performance.now();
      await Bun.sleep(20);
      ticks.push(performance.now() - at);
    }
    expect(Math.max(...ticks)).toBeLessThan(100);
    await locker`COMMIT`;
    locker.release();
    expect((await blocked).changes).toBe(1);
    expect(performance.now() - started).toBeGreaterThan(90);
    await db.sql("DELETE FROM t").run();
  });

  test("a JSON text parameter cast to json or jsonb arrives as the JSON it spells (Bun would encode it as a JSON string)", async () => {
    const types = await db
      .sql("SELECT json_typeof(?::json) AS a, jsonb_typeof(?2::jsonb) AS b, (SELECT count(*) FROM json_array_elements_text(?1::json)) AS n")
      .get('["x","y"]', "{}");
    expect(types).toEqual({ a: "array", b: "object", n: 2 });
  });

  test("the data version moves when another session changes keys, companies or templates (NOTIFY), and not otherwise", async () => {
    // Until its LISTEN connection is up, every call is a change: wait until two calls agree.
    const deadline = Date.now() + 3000;
    for (let v = db.dataVersion(); Date.now() < deadline && db.dataVersion() !== v; v = db.dataVersion()) await Bun.sleep(20);
    const before = db.dataVersion();
    await Bun.sleep(50);
    expect(db.dataVersion()).toBe(before);
    await admin`INSERT INTO companies (id, slug, name, created_at) VALUES ('co9', 'nine', 'Nine', 1764000000000)`;
    const until = Date.now() + 3000;
    while (Date.now() < until && db.dataVersion() === before) await Bun.sleep(10);
    expect(db.dataVersion()).toBeGreaterThan(before);
  });

  describe("shared units (db.unit's `shared`): one transaction for the units that wait together", () => {
    const txid = async () => String((await db.sql("SELECT txid_current() AS x").get())!.x);
    /** Two shared units that hold both lanes until `release`: what is started meanwhile waits, and becomes one group. */
    function holdLanes() {
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      const holders = [1, 2].map(() => db.unit(() => gate, { shared: true }));
      return { release: () => (release(), Promise.all(holders)) };
    }

    test("they run side by side in one transaction (one BEGIN, one COMMIT), each answered with its own value, their hooks committed", async () => {
      const before = db.pool.statements;
      const lanes = holdLanes();
      const hooks: string[] = [];
      const units = [10, 11, 12, 13].map((id) =>
        db.unit(
          async () => {
            await db.sql("INSERT INTO t (id) VALUES (?)").run(id);
            db.afterCommit(
              () => hooks.push(`committed ${id}`),
              () => hooks.push(`rolled back ${id}`),
            );
            return { id, tx: await txid() };
          },
          { shared: true },
        ),
      );
      await lanes.release();
      const answers = await Promise.all(units);
      expect(answers.map((a) => a.id)).toEqual([10, 11, 12, 13]);
      expect(new Set(answers.map((a) => a.tx)).size).toBe(1); // one transaction
      // The holders' BEGIN and COMMIT each; the group's BEGIN and COMMIT; an insert and a txid read a unit.
      expect(db.pool.statements - before).toBe(2 * 2 + 2 + 4 * 2);
      expect(hooks.sort()).toEqual(["committed 10", "committed 11", "committed 12", "committed 13"]);
      expect(await count("id BETWEEN 10 AND 13")).toBe(4);
      await db.sql("DELETE FROM t").run();
    });

    test("atEnd: the writes held back run after every unit of the group, in the order of their keys; outside a group at once", async () => {
      await admin.unsafe("CREATE TABLE IF NOT EXISTS late (seq serial PRIMARY KEY, k text, rows_seen bigint)");
      const lanes = holdLanes();
      const late = (k: string) => db.atEnd(k, () => db.sql("INSERT INTO late (k, rows_seen) SELECT ?, count(*) FROM t").run(k));
      const units = ["2 b", "1 z", "2 a", "1 y"].map((k, i) =>
        db.unit(
          async () => {
            await late(k);
            await db.sql("INSERT INTO t (id) VALUES (?)").run(30 + i);
          },
          { shared: true },
        ),
      );
      await lanes.release();
      await Promise.all(units);
      const rows = await db.sql("SELECT k, rows_seen FROM late ORDER BY seq").all();
      expect(rows).toEqual([
        { k: "1 y", rows_seen: 4 },
        { k: "1 z", rows_seen: 4 },
        { k: "2 a", rows_seen: 4 },
        { k: "2 b", rows_seen: 4 },
      ]);
      // Outside a shared group it is fn's own promise, run now.
      await db.unit(async () => {
        expect(await db.atEnd("1 x", () => db.sql("SELECT 7 AS n").get())).toEqual({ n: 7 });
      });
      await db.sql("DELETE FROM t").run();
    });

    test("one of them throws: the group is undone and each runs again alone — the others commit, the thrower gets its own error", async () => {
      const lanes = holdLanes();
      const runs = new Map<number, number>();
      const hooks: string[] = [];
      const unitOf = (id: number) =>
        db.unit(
          async () => {
            runs.set(id, (runs.get(id) ?? 0) + 1);
            await db.sql("INSERT INTO t (id) VALUES (?)").run(id);
            db.afterCommit(
              () => hooks.push(`committed ${id}`),
              () => hooks.push(`rolled back ${id}`),
            );
            if (id === 21) throw new Error("unit 21 refused");
            return txid();
          },
          { shared: true },
        );
      const settled = Promise.allSettled([20, 21, 22].map(unitOf));
      await lanes.release();
      const [a, b, c] = await settled;
      expect(b).toMatchObject({ status: "rejected", reason: { message: "unit 21 refused" } });
      expect(a!.status).toBe("fulfilled");
      expect(c!.status).toBe("fulfilled");
      expect((a as PromiseFulfilledResult<string>).value).not.toBe((c as PromiseFulfilledResult<string>).value); // alone, each
      expect([...runs.values()]).toEqual([2, 2, 2]);
      expect((await db.sql("SELECT id FROM t ORDER BY id").values()).flat()).toEqual([20, 22]);
      // The group's run: all three rolled back; then alone: 21 rolled back again, the others committed.
      expect(hooks.filter((h) => h.startsWith("committed")).sort()).toEqual(["committed 20", "committed 22"]);
      expect(hooks.filter((h) => h === "rolled back 21")).toHaveLength(2);
      await db.sql("DELETE FROM t").run();
    });

    test("a held-back write that fails fails the group: each unit runs again alone, where the write's error is its own unit's", async () => {
      const lanes = holdLanes();
      const units = [40, 41].map((id) =>
        db.unit(
          async () => {
            await db.sql("INSERT INTO t (id) VALUES (?)").run(id);
            await db.atEnd(`1 ${id}`, async () => {
              if (id === 41) throw new Error("write 41 refused");
            });
          },
          { shared: true },
        ),
      );
      const settled = Promise.allSettled(units);
      await lanes.release();
      const [a, b] = await settled;
      expect(a!.status).toBe("fulfilled");
      expect(b).toMatchObject({ status: "rejected", reason: { message: "write 41 refused" } });
      expect((await db.sql("SELECT id FROM t ORDER BY id").values()).flat()).toEqual([40]);
      await db.sql("DELETE FROM t").run();
    });

    test("while most groups fail, shared units run alone (each such run lets that fall back), then in groups again", async () => {
      /** The transactions `n` shared units that waited together ran in. */
      const group = async (n: number) => {
        const lanes = holdLanes();
        const units = Array.from({ length: n }, () => db.unit(txid, { shared: true }));
        await lanes.release();
        return await Promise.all(units);
      };
      // A group that fails runs again unit by unit: its last runs are alone either way. What shows the switch is
      // the first run: grouped, the n units' first runs share one transaction.
      let ranAloneFirst = false;
      for (let i = 0; i < 10 && !ranAloneFirst; i++) {
        const lanes = holdLanes();
        const first: string[] = [];
        const units = [1, 2, 3].map(() =>
          db.unit(
            async () => {
              first.push(await txid());
              throw new Error("refused");
            },
            { shared: true },
          ),
        );
        const settled = Promise.allSettled(units);
        await lanes.release();
        await settled;
        ranAloneFirst = first.length === 3; // alone: each ran once (grouped: three runs, then three alone)
      }
      expect(ranAloneFirst).toBe(true);
      let together = false;
      for (let i = 0; i < 20 && !together; i++) together = new Set(await group(3)).size === 1;
      expect(together).toBe(true);
    });

    test("a nested unit that throws in a group (no savepoint there) runs the group again alone, where it is a savepoint its caller catches", async () => {
      const lanes = holdLanes();
      const units = [50, 52].map((id) =>
        db.unit(
          async () => {
            await db.sql("INSERT INTO t (id) VALUES (?)").run(id);
            await db
              .unit(async () => {
                await db.sql("INSERT INTO t (id) VALUES (?)").run(id + 1);
                if (id === 50) throw new Error("inner");
              })
              .catch(() => {});
          },
          { shared: true },
        ),
      );
      await lanes.release();
      await Promise.all(units);
      expect((await db.sql("SELECT id FROM t ORDER BY id").values()).flat()).toEqual([50, 52, 53]);
      await db.sql("DELETE FROM t").run();
    });
  });
});
