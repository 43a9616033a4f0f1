/**
 * A database that cannot take a write now answers 503 STORAGE_UNAVAILABLE with Retry-After on both engines
 * (never 500): read-only, and the write lock held by another process past the wait. PostgreSQL too: a lost
 * session costs at most one 503, and the next request runs on a new one. (SQLite's full disk and I/O errors:
 * test/reliability/storage.test.ts.)
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Db } from "../../db/client";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";

let app: TestApp;
let other: Db;
beforeAll(async () => {
  app = await createTestApp({ config: { rate_limit: { requests_per_second: 1e9, burst: 1e9 } } });
  other = app.openConnection();
});
afterAll(() => {
  other.close();
  return app.close();
});

const pg = () => app.deps.db.engine === "postgres";
let n = 0;
const upsert = () =>
  app.request("POST", "/contacts", { body: { firstName: "Stored", identities: [{ channel: "email", value: `storage${++n}@example.com` }] } });

/**
 * PostgreSQL: every session of the app's pool made read-only (as a failover to a standby does): the database's
 * default for new sessions, and the pool's current sessions ended so that it opens new ones.
 */
async function readOnlyPostgres(on: boolean): Promise<void> {
  const name = ((await other.sql("SELECT current_database() AS name").get()) as { name: string }).name;
  await other.sql(`ALTER DATABASE "${name}" ${on ? "SET default_transaction_read_only = on" : "RESET default_transaction_read_only"}`).run();
  await other.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()").all();
}

test("read-only database: 503 naming it, writes again afterwards", async () => {
  const db = app.deps.db;
  if (pg()) await readOnlyPostgres(true);
  else await db.sql("PRAGMA query_only = ON").run();
  try {
    let res = await upsert();
    // (PostgreSQL: a request may first meet a session that was ended: at most one 503 "cannot be reached".)
    if (pg() && res.body.error?.message?.includes("cannot be reached")) res = await upsert();
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: "STORAGE_UNAVAILABLE", message: expect.stringContaining("read-only") });
    expect(res.headers.get("retry-after")).toBe("30");
    // Reads are answered. (PostgreSQL: the shared rate limit, a write on every request, falls back to the
    // instance's memory while the database is read-only.)
    expect((await app.request("GET", "/contacts?limit=1")).status).toBe(200);
  } finally {
    if (pg()) await readOnlyPostgres(false);
    else await db.sql("PRAGMA query_only = OFF").run();
  }
  let after = await upsert();
  if (pg() && after.status === 503) after = await upsert();
  expect(after.status).toBe(201);
});

test("the write lock held by another process longer than the wait: 503 busy, Retry-After 1", async () => {
  // The other process takes the lock our writes need (SQLite: its write transaction; PostgreSQL: a lock on
  // the contacts table that keeps inserts out), and we wait 50 ms for it instead of the usual 5 s / 10 s
  // (PostgreSQL: an app of its own whose sessions' lock_timeout follows its statement timeout).
  if (pg()) {
    const own = await createTestApp({
      dataDir: app.dir, // the same database
      config: { storage: { statement_timeout_ms: 200 }, rate_limit: { requests_per_second: 1e9, burst: 1e9 } },
    });
    let release!: () => void;
    let locked!: () => void;
    const isLocked = new Promise<void>((r) => (locked = r));
    const holder = other.unit(async () => {
      await other.sql("LOCK TABLE contacts IN SHARE ROW EXCLUSIVE MODE").run();
      locked();
      await new Promise<void>((r) => (release = r));
    });
    try {
      await isLocked;
      const res = await own.request("POST", "/contacts", { body: { identities: [{ channel: "email", value: "locked@example.com" }] } });
      expect(res.status).toBe(503);
      expect(res.body.error).toMatchObject({ code: "STORAGE_UNAVAILABLE", message: expect.stringContaining("busy") });
      expect(res.headers.get("retry-after")).toBe("1");
    } finally {
      release();
      await holder;
      await own.close({ keepData: true });
    }
    return;
  }
  const db = app.deps.db;
  await other.sql("BEGIN IMMEDIATE").run();
  await db.sql("PRAGMA busy_timeout = 50").run();
  try {
    const res = await upsert();
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: "STORAGE_UNAVAILABLE", message: expect.stringContaining("busy") });
    expect(res.headers.get("retry-after")).toBe("1");
  } finally {
    await other.sql("ROLLBACK").run();
    await db.sql("PRAGMA busy_timeout = 5000").run();
  }
  expect((await upsert()).status).toBe(201);
});

test.skipIf(process.env.SWITCHBOARD_TEST_ENGINE !== "postgres")(
  "PostgreSQL: a session ended by the server costs at most one 503, then requests run on a new session",
  async () => {
    const pid = ((await app.deps.db.sql("SELECT pg_backend_pid() AS pid").get()) as { pid: number }).pid;
    await other.sql("SELECT pg_terminate_backend(?)").get(pid);
    const first = await upsert();
    expect([201, 503]).toContain(first.status);
    if (first.status === 503) expect(first.body.error).toMatchObject({ code: "STORAGE_UNAVAILABLE", message: expect.stringContaining("cannot be reached") });
    expect((await upsert()).status).toBe(201);
    expect(((await app.deps.db.sql("SELECT pg_backend_pid() AS pid").get()) as { pid: number }).pid).not.toBe(pid);
  },
);
