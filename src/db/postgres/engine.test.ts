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
});
