import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { freshPostgresDatabase, postgresAvailable } from "../../../test/helpers/postgres";
import { pgDatabase, toPgConflictTarget, toPgParams } from "./compat";
import { PgConnection, PgError } from "./libpq";

describe("toPgParams", () => {
  test.each([
    ["SELECT * FROM t WHERE a = ? AND b = ?", "SELECT * FROM t WHERE a = $1 AND b = $2"],
    ["UPDATE t SET a = ?1 WHERE id = ?2 AND b = ?1", "UPDATE t SET a = $1 WHERE id = $2 AND b = $1"],
    ["SELECT '?' AS q, \"we?ird\" FROM t WHERE a = ?", "SELECT '?' AS q, \"we?ird\" FROM t WHERE a = $1"],
    ["SELECT 1 -- why?\nFROM t WHERE a = ?", "SELECT 1 -- why?\nFROM t WHERE a = $1"],
    ["SELECT 'it''s ?' WHERE x = ?", "SELECT 'it''s ?' WHERE x = $1"],
  ])("%s", (input, expected) => {
    expect(toPgParams(input)).toBe(expected);
  });
});

test("an upsert's conflict target loses drizzle's table qualifiers", () => {
  expect(toPgConflictTarget(`insert into "s" ("a", "b") values ($1, $2) on conflict ("s"."a", "s"."b") do update set "b" = excluded."b"`)).toBe(
    `insert into "s" ("a", "b") values ($1, $2) on conflict ("a", "b") do update set "b" = excluded."b"`,
  );
});

describe.skipIf(!postgresAvailable())("libpq connection", () => {
  let conn: PgConnection;
  beforeAll(async () => {
    conn = new PgConnection(await freshPostgresDatabase());
  });
  afterAll(() => conn?.close());

  test("decodes values as bun:sqlite returns them", () => {
    const r = conn.query(
      "SELECT 1::int8 AS a, 2.5::float8 AS b, true AS c, 'é'::text AS d, NULL::text AS e, '\\x00ff'::bytea AS f, sum(x) AS g FROM (VALUES (1::int8), (2)) v(x)",
    );
    expect(r.fields).toEqual(["a", "b", "c", "d", "e", "f", "g"]);
    expect(r.rows[0]).toEqual([1, 2.5, 1, "é", null, Buffer.from([0, 255]), 3]);
  });

  test("binds text, numbers, booleans, null and bytes; a statement is prepared once and reused", () => {
    conn.exec("CREATE TABLE t (id bigint PRIMARY KEY, s text, b bigint, n bigint, x bytea)");
    const db = pgDatabase(conn);
    const insert = db.query("INSERT INTO t (id, s, b, n, x) VALUES (?, ?, ?, ?, ?)");
    expect(insert.run(1, "a'b", true, null, new Uint8Array([1, 2])).changes).toBe(1);
    expect(insert.run(2, "", false, 9_007_199_254_740_991, null).changes).toBe(1);
    expect(db.query("SELECT * FROM t ORDER BY id").all()).toEqual([
      { id: 1, s: "a'b", b: 1, n: null, x: Buffer.from([1, 2]) },
      { id: 2, s: "", b: 0, n: 9_007_199_254_740_991, x: null },
    ]);
    expect(db.query("SELECT s FROM t WHERE id = ?1 OR id = ?1").get(2)).toEqual({ s: "" });
    expect(db.query("SELECT s FROM t WHERE id = ?").get(3)).toBeNull();
    expect(db.query("UPDATE t SET s = 'z'").run().changes).toBe(2);
  });

  test("errors carry the SQLSTATE, and the connection goes on", () => {
    const db = pgDatabase(conn);
    conn.exec("CREATE TABLE u (id bigint PRIMARY KEY)");
    db.query("INSERT INTO u VALUES (?)").run(1);
    let err: unknown;
    try {
      db.query("INSERT INTO u VALUES (?)").run(1);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(PgError);
    expect((err as PgError).code).toBe("23505");
    // the primary message alone, as SQLite's errors read; the whole report (DETAIL …) kept for the logs
    expect((err as PgError).message).toBe('duplicate key value violates unique constraint "u_pkey"');
    expect((err as PgError).report).toContain("DETAIL:  Key (id)=(1) already exists.");
    expect(() => db.query("SELEC 1").run()).toThrow(/syntax error/);
    expect(db.query("SELECT count(*) AS n FROM u").get()).toEqual({ n: 1 });
  });

  test("a text parameter holding NUL is refused (libpq would cut it short there), and the connection goes on", () => {
    const db = pgDatabase(conn);
    conn.exec("CREATE TABLE n (s text)");
    expect(() => db.query("INSERT INTO n VALUES (?)").run("vip\0x")).toThrow(expect.objectContaining({ code: "22021" }));
    db.query("INSERT INTO n VALUES (?)").run("vip");
    expect(db.query("SELECT count(*) AS n FROM n WHERE s = ?").get("vip")).toEqual({ n: 1 });
  });

  test("transactions and savepoints: a failed statement rolls back to its savepoint only", () => {
    const db = pgDatabase(conn);
    conn.exec("CREATE TABLE w (id bigint PRIMARY KEY)");
    db.query("BEGIN").run();
    expect(db.inTransaction).toBe(true);
    db.query("INSERT INTO w VALUES (?)").run(1);
    db.query("SAVEPOINT sp1").run();
    expect(() => db.query("INSERT INTO w VALUES (?)").run(1)).toThrow();
    db.exec("ROLLBACK TO sp1; RELEASE sp1");
    db.query("INSERT INTO w VALUES (?)").run(2);
    db.query("COMMIT").run();
    expect(db.inTransaction).toBe(false);
    expect(db.query("SELECT id FROM w ORDER BY id").values()).toEqual([[1], [2]]);
  });

  test("a session the server ended: the next statement runs on a new session with the same setup; the lost one's error says 08006", async () => {
    const url = await freshPostgresDatabase();
    const c = new PgConnection(url, { setup: "SET statement_timeout = '12s'" });
    const admin = new PgConnection(url);
    try {
      const pid = c.query("SELECT pg_backend_pid() AS p").rows[0]![0];
      admin.query("SELECT pg_terminate_backend($1)", [pid as number]);
      let lost: unknown;
      try {
        c.query("SELECT 1");
      } catch (e) {
        lost = e;
      }
      if (lost) expect(lost).toMatchObject({ code: expect.stringMatching(/^(08006|57P01)$/) });
      expect(c.query("SHOW statement_timeout").rows).toEqual([["12s"]]);
      expect(c.query("SELECT pg_backend_pid() AS p").rows[0]![0]).not.toBe(pid);
    } finally {
      c.close();
      admin.close();
    }
  });

  test("a wrong URL names the cause", () => {
    expect(() => new PgConnection("postgres://postgres@127.0.0.1:1/none")).toThrow(/could not connect to PostgreSQL/);
  });
});
