/**
 * Read caches stay correct when another writer commits: another process on SQLite (PRAGMA data_version),
 * another instance on PostgreSQL (the trigger's NOTIFY outside a transaction; the counter, read under the
 * write lock, inside one).
 */
import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { postgresAvailable, postgresInstances } from "../../test/helpers/postgres";
import { openDatabase, type Db } from "./client";
import { migrate } from "./migrate";
import { createReadCache } from "./read-cache";

const names = async (db: Db) => ((await db.sql("SELECT name FROM companies ORDER BY slug").all()) as { name: string }[]).map((r) => r.name);
const insert = (db: Db, slug: string, name: string) =>
  db.unit(() => db.sql("INSERT INTO companies (id, slug, name, created_at) VALUES (?, ?, ?, ?)").run(slug, slug, name, 0));
const rename = (db: Db, slug: string, name: string) => db.unit(() => db.sql("UPDATE companies SET name = ? WHERE slug = ?").run(name, slug));
/** SQLite: a commit made before this call returns (db.unit's group commit would make it on a later turn). */
const renameNow = (db: Db, slug: string, name: string) => db.tx(() => db.$client.query("UPDATE companies SET name = ? WHERE slug = ?").run(name, slug));

/** Two connections a and b to one new SQLite file holding the company "Acme"; removed after `body`. */
async function twoSqliteConnections(body: (a: Db, b: Db) => unknown): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "sb-cache-"));
  const a = openDatabase(join(dir, "sb.db"));
  try {
    migrate(a);
    const b = openDatabase(join(dir, "sb.db"));
    try {
      await insert(a, "acme", "Acme");
      await body(a, b);
    } finally {
      b.close();
    }
  } finally {
    a.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

test("SQLite: another connection's commit is seen at the next check; our own writes are not (we invalidate them)", () =>
  twoSqliteConnections(async (a, b) => {
    const cache = createReadCache<string, string[]>(a, { checkEveryMs: 0 });
    expect(await cache.lookup("all", () => names(a))).toEqual(["Acme"]);
    await rename(a, "acme", "Acme (own write)");
    expect(await cache.lookup("all", () => names(a))).toEqual(["Acme"]); // own commit: the writer invalidates
    await rename(b, "acme", "Acme Ltd");
    expect(await cache.lookup("all", () => names(a))).toEqual(["Acme Ltd"]);
  }));

test("SQLite, perTurn: the version is checked at the first lookup of an event-loop turn; a commit after it is seen from the next turn", () =>
  twoSqliteConnections(async (a, b) => {
    const turn = () => new Promise((r) => setImmediate(r));
    await turn();
    const cache = createReadCache<string, string[]>(a, { perTurn: true });
    // (A load on SQLite resolves within the turn: awaiting it runs microtasks only.)
    const cached = () => cache.lookup("all", () => names(a));
    expect(await cached()).toEqual(["Acme"]);
    await turn();
    renameNow(b, "acme", "Acme Ltd"); // committed before this turn's first lookup: seen by it
    expect(await cached()).toEqual(["Acme Ltd"]);
    renameNow(b, "acme", "Acme GmbH"); // after it, in the same turn: a request handled now arrived before the commit
    expect(await cached()).toEqual(["Acme Ltd"]);
    await turn();
    expect(await cached()).toEqual(["Acme GmbH"]);
  }));

describe.skipIf(!postgresAvailable())("PostgreSQL, two instances", () => {
  const open: Db[] = [];
  afterAll(() => open.forEach((db) => db.close()));
  /** Instances a and b; a caches the company names, which it has read once. */
  async function setup() {
    const [a, b] = (await postgresInstances(2)) as [Db, Db];
    open.push(a, b);
    // Until a listens, every call of its data version is a change (nothing it caches can be trusted yet).
    const listening = () => {
      const v = a.dataVersion();
      return a.dataVersion() === v;
    };
    for (const sent = performance.now(); !listening(); await Bun.sleep(5)) expect(performance.now() - sent).toBeLessThan(5_000);
    await insert(a, "acme", "Acme");
    const cache = createReadCache<string, string[]>(a);
    const cached = () => cache.lookup("all", () => names(a));
    expect(await cached()).toEqual(["Acme"]);
    /** Until a's cache shows `name` (the notification's delivery), at most 2 s. */
    const shows = async (name: string) => {
      const sent = performance.now();
      while ((await cached())[0] !== name) {
        expect(performance.now() - sent).toBeLessThan(2_000);
        await Bun.sleep(1);
      }
    };
    return { a, b, cached, shows };
  }

  test("another instance's commit reaches the cache by NOTIFY (our own commits do too: one reload more)", async () => {
    const { a, b, cached, shows } = await setup();
    const before = a.dataVersion();
    await rename(b, "acme", "Acme Ltd");
    for (const sent = performance.now(); a.dataVersion() === before; await Bun.sleep(1)) expect(performance.now() - sent).toBeLessThan(2_000);
    expect(await cached()).toEqual(["Acme Ltd"]);
    await rename(a, "acme", "Acme (own write)");
    await shows("Acme (own write)");
  });

  test("a lost session (its LISTEN gone) invalidates, and the new session listens again", async () => {
    const { b, shows } = await setup();
    const others = "FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()";
    const ended = (
      (await b.sql(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).all()) as {
        pid: number;
      }[]
    ).map((r) => r.pid);
    await b.sql(`SELECT pg_terminate_backend(pid) ${others}`).all();
    // (The pools and the LISTEN connection open new sessions at once: wait for the ended ones alone to be gone.)
    const left = () =>
      b.sql(`SELECT count(*) AS n FROM pg_stat_activity WHERE pid IN (SELECT value::int FROM json_array_elements_text(?::json))`).get(JSON.stringify(ended));
    while (((await left()) as { n: number }).n > 0) await Bun.sleep(1);
    await rename(b, "acme", "Acme Ltd"); // while a has no session: no notification will ever reach a
    // NB! A backend leaves pg_stat_activity a moment before its socket closes: a sees the session gone at a
    // check soon after, not necessarily the first. Without the lost-session rule it would never see it.
    await shows("Acme Ltd");
    await rename(b, "acme", "Acme GmbH"); // and a's new session hears again
    await shows("Acme GmbH");
  });
});

test("lookup (an asynchronous load): a hit comes at once, not as a promise; a value loaded while the key was invalidated, or the cache emptied, is not kept", () =>
  twoSqliteConnections(async (a, b) => {
    const cache = createReadCache<string, string[]>(a, { checkEveryMs: 0 });
    let loads = 0;
    const load = async () => {
      loads++;
      return names(a);
    };
    const miss = cache.lookup("all", load);
    expect(miss).toBeInstanceOf(Promise);
    expect(await miss).toEqual(["Acme"]);
    expect(cache.lookup("all", load)).toEqual(["Acme"]); // a hit: the value itself
    expect(loads).toBe(1);

    // Invalidated while its load runs (our own write): the loaded value may predate it and is not kept.
    cache.invalidate("all");
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = cache.lookup("all", async () => {
      const v = await names(a);
      await gate;
      return v;
    });
    cache.invalidate("all");
    release();
    expect(await slow).toEqual(["Acme"]);
    expect(cache.lookup("all", load)).toBeInstanceOf(Promise); // loaded again, not the stale value
    expect(loads).toBe(2);

    // Emptied while a load runs (another connection's commit, seen by a lookup meanwhile): not kept either.
    let go!: () => void;
    const held = new Promise<void>((r) => (go = r));
    const old = cache.lookup("k", async () => {
      const v = await names(a);
      await held;
      return v;
    });
    renameNow(b, "acme", "Acme Ltd");
    expect(await cache.lookup("all", load)).toEqual(["Acme Ltd"]); // its check sees the commit: the cache is emptied
    go();
    expect(await old).toEqual(["Acme"]);
    expect(await cache.lookup("k", async () => names(a))).toEqual(["Acme Ltd"]); // "Acme" was not kept
  }));
