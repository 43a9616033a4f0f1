/**
 * Deferred statements and pipelines (PgConnection.defer/savepoint/release/rollbackTo/pipeline) and the
 * transactions built on them (openPostgres: db.tx, db.batch): fewer round trips, and every error still at
 * the statement it belongs to, with the SQLSTATE it has when statements go one at a time.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { openPostgres, type Db } from "../client";
import { freshPostgresDatabase, postgresAvailable } from "../../../test/helpers/postgres";
import { pgDatabase } from "./compat";
import { PgConnection, PgError } from "./libpq";

const errorOf = (fn: () => unknown): PgError => {
  try {
    fn();
  } catch (e) {
    return e as PgError;
  }
  throw new Error("expected an error");
};

describe.skipIf(!postgresAvailable())("deferred savepoints", () => {
  let conn: PgConnection;
  let db: ReturnType<typeof pgDatabase>;
  beforeAll(async () => {
    conn = new PgConnection(await freshPostgresDatabase());
    db = pgDatabase(conn);
    conn.exec("CREATE TABLE t (id bigint PRIMARY KEY)");
  });
  afterAll(() => conn?.close());
  const ids = () => db.query("SELECT id FROM t ORDER BY id").values().flat();
  const trips = () => conn.counts.roundTrips;

  test("a SAVEPOINT travels with the next statement; one released with nothing between is never sent", () => {
    conn.exec("TRUNCATE t");
    db.query("BEGIN").run();
    const before = { ...conn.counts };
    db.query("SAVEPOINT sp1").run();
    db.query("SAVEPOINT sp2").run();
    db.query("RELEASE sp2").run(); // nothing between: dropped with its SAVEPOINT
    expect(conn.counts).toEqual(before);
    db.query("INSERT INTO t VALUES (?)").run(1); // SAVEPOINT sp1 + INSERT: one round trip
    expect(conn.counts.roundTrips - before.roundTrips).toBe(1);
    expect(conn.counts.statements - before.statements).toBe(2);
    db.query("RELEASE sp1").run();
    db.query("COMMIT").run(); // RELEASE sp1 + COMMIT: one round trip
    expect(conn.counts.roundTrips - before.roundTrips).toBe(2);
    expect(db.inTransaction).toBe(false);
    expect(ids()).toEqual([1]);
  });

  test("an error surfaces at its own statement with its SQLSTATE; ROLLBACK TO the savepoint sent with it keeps what came before", () => {
    conn.exec("TRUNCATE t");
    db.query("BEGIN").run();
    db.query("INSERT INTO t VALUES (?)").run(1);
    db.query("SAVEPOINT sp1").run();
    const err = errorOf(() => db.query("INSERT INTO t VALUES (?)").run(1));
    expect(err).toBeInstanceOf(PgError);
    expect(err.code).toBe("23505");
    expect(err.message).toBe('duplicate key value violates unique constraint "t_pkey"');
    db.exec("ROLLBACK TO sp1; RELEASE sp1");
    db.query("INSERT INTO t VALUES (?)").run(2);
    db.query("COMMIT").run();
    expect(ids()).toEqual([1, 2]);
  });

  test("a statement prepared in the pipeline that fails to parse: its error, after the savepoint, which recovers the transaction", () => {
    conn.exec("TRUNCATE t");
    db.query("BEGIN").run();
    db.query("INSERT INTO t VALUES (?)").run(1);
    db.query("SAVEPOINT sp1").run();
    const err = errorOf(() => db.query("INSERT INTO nowhere VALUES (?)").run(1));
    expect(err.code).toBe("42P01");
    db.exec("ROLLBACK TO sp1; RELEASE sp1");
    db.query("INSERT INTO t VALUES (?)").run(2);
    db.query("COMMIT").run();
    expect(ids()).toEqual([1, 2]);
  });

  test("ROLLBACK TO a savepoint never sent costs nothing and leaves the transaction as it was", () => {
    conn.exec("TRUNCATE t");
    db.query("BEGIN").run();
    db.query("INSERT INTO t VALUES (?)").run(1);
    db.query("SAVEPOINT sp1").run();
    // refused before anything is sent (a NUL in a text): the server never saw the savepoint
    expect(errorOf(() => db.query("INSERT INTO t VALUES (?::bigint)").run("1\0")).code).toBe("22021");
    const before = trips();
    db.exec("ROLLBACK TO sp1; RELEASE sp1");
    expect(trips()).toBe(before);
    db.query("INSERT INTO t VALUES (?)").run(2);
    db.query("COMMIT").run();
    expect(ids()).toEqual([1, 2]);
  });

  test("ROLLBACK TO drops what was deferred inside the savepoint; ROLLBACK drops everything", () => {
    conn.exec("TRUNCATE t");
    db.query("BEGIN").run();
    db.query("SAVEPOINT sp1").run();
    db.query("INSERT INTO t VALUES (?)").run(1);
    db.query("SAVEPOINT sp2").run();
    db.query("INSERT INTO t VALUES (?)").run(2);
    db.query("RELEASE sp2").run(); // deferred
    db.exec("ROLLBACK TO sp1; RELEASE sp1");
    db.query("INSERT INTO t VALUES (?)").run(3);
    db.query("COMMIT").run();
    expect(ids()).toEqual([3]);
    db.query("BEGIN").run();
    db.query("SAVEPOINT sp1").run();
    db.exec("ROLLBACK");
    expect(db.inTransaction).toBe(false);
    db.query("INSERT INTO t VALUES (?)").run(4); // nothing deferred is left to go out with it
    expect(ids()).toEqual([3, 4]);
  });

  test("outside a transaction, or in a failed one, savepoints run at once (and fail there, as before)", () => {
    expect(errorOf(() => db.query("SAVEPOINT sp1").run()).code).toBe("25P01"); // no transaction block
    db.query("BEGIN").run();
    expect(() => db.query("SELEC 1").run()).toThrow();
    expect(errorOf(() => db.query("SAVEPOINT sp1").run()).code).toBe("25P02"); // transaction aborted
    db.exec("ROLLBACK");
  });

  test("a pipeline: one round trip, results in order; an error is the failing statement's, the ones after it do not run", () => {
    conn.exec("TRUNCATE t");
    const before = trips();
    const r = conn.pipeline([{ text: "BEGIN" }, { text: "INSERT INTO t VALUES ($1)", params: [7] }, { text: "SELECT count(*) FROM t" }]);
    expect(trips() - before).toBe(1);
    expect(r[2]!.rows).toEqual([[1]]);
    const err = errorOf(() =>
      conn.pipeline([
        { text: "INSERT INTO t VALUES ($1)", params: [8] },
        { text: "INSERT INTO t VALUES ($1)", params: [7] },
        { text: "INSERT INTO t VALUES ($1)", params: [9] },
      ]),
    );
    expect(err.code).toBe("23505");
    expect(conn.inTransaction).toBe(true);
    db.exec("ROLLBACK");
    expect(ids()).toEqual([]);
  });

  test("statements first prepared in a pipeline: a failed one is not remembered, the ones after it are prepared anew", () => {
    conn.exec("TRUNCATE t");
    db.query("BEGIN").run();
    db.query("SAVEPOINT sp1").run();
    const err = errorOf(() =>
      conn.pipeline([
        { text: "SELECT $1::bigint + 100", params: [1] },
        { text: "SELECT nope FROM t WHERE id = $1", params: [1] },
        { text: "SELECT $1::bigint + 200", params: [1] },
      ]),
    );
    expect(err.code).toBe("42703");
    db.exec("ROLLBACK TO sp1; RELEASE sp1");
    db.query("SAVEPOINT sp1").run();
    expect(
      conn
        .pipeline([
          { text: "SELECT $1::bigint + 200", params: [1] },
          { text: "SELECT $1::bigint + 100", params: [2] },
        ])
        .map((r) => r.rows),
    ).toEqual([[[201]], [[102]]]);
    expect(db.query("SELECT ?::bigint + 300 AS n").get(1)).toEqual({ n: 301 });
    db.query("COMMIT").run();
  });

  test("a deferred read's rows arrive with the statement it travelled with", () => {
    db.query("BEGIN").run();
    let seen: unknown;
    conn.defer("SELECT 41 + 1", (r) => (seen = r.rows[0]![0]));
    expect(seen).toBeUndefined();
    db.query("COMMIT").run();
    expect(seen).toBe(42);
  });

  test("every pipeline above, failed ones too, left the connection out of pipeline mode on its session (no reset)", () => {
    expect(conn.resets).toBe(0);
    expect(db.query("SELECT 1 AS n").get()).toEqual({ n: 1 });
    expect(conn.resets).toBe(0);
  });

  test("a session lost with a savepoint deferred: the next statement fails with the lost connection's error, then a new session works", async () => {
    const url = await freshPostgresDatabase();
    const c = new PgConnection(url);
    const admin = new PgConnection(url);
    try {
      const d = pgDatabase(c);
      d.query("BEGIN").run();
      d.query("SAVEPOINT sp1").run();
      admin.query("SELECT pg_terminate_backend($1)", [c.query("SELECT pg_backend_pid()").rows[0]![0] as number]);
      d.query("SAVEPOINT sp2").run();
      expect(errorOf(() => d.query("SELECT 1").run()).code).toMatch(/^(08006|57P01)$/);
      expect(d.query("SELECT 2 AS n").get()).toEqual({ n: 2 });
      expect(d.inTransaction).toBe(false);
    } finally {
      c.close();
      admin.close();
    }
  });
});

describe.skipIf(!postgresAvailable())("db.tx on PostgreSQL with deferred savepoints", () => {
  let db: Db;
  let conn: PgConnection;
  beforeAll(async () => {
    db = openPostgres(await freshPostgresDatabase());
    conn = (db.$client as unknown as { pg: PgConnection }).pg;
    db.$client.exec("CREATE TABLE switchboard_data_version (v bigint NOT NULL); INSERT INTO switchboard_data_version VALUES (0)");
    db.$client.exec("CREATE TABLE t (id bigint PRIMARY KEY)");
  });
  afterAll(() => db?.close());
  const ids = () => db.$client.query("SELECT id FROM t ORDER BY id").values().flat();
  const insert = (id: number) => db.$client.query("INSERT INTO t VALUES (?)").run(id);

  test("BEGIN, the write lock and the version read are one round trip; the version read and COMMIT another", () => {
    db.tx(() => insert(1)); // statements prepared
    const before = conn.counts.roundTrips;
    db.tx(() => db.tx(() => insert(2)));
    expect(conn.counts.roundTrips - before).toBe(3); // BEGIN…; SAVEPOINT + INSERT; RELEASE + read + COMMIT
    expect(ids()).toEqual([1, 2]);
  });

  test("a nested tx whose inner part throws keeps the outer part (a JS error, and a server error)", () => {
    db.$client.exec("TRUNCATE t");
    db.tx(() => {
      insert(1);
      expect(() =>
        db.tx(() => {
          insert(2);
          throw new Error("inner");
        }),
      ).toThrow("inner");
      expect(() => db.tx(() => insert(1))).toThrow(expect.objectContaining({ code: "23505" }));
      expect(() => db.tx(() => db.tx(() => insert(1)))).toThrow(expect.objectContaining({ code: "23505" }));
      insert(3);
    });
    expect(ids()).toEqual([1, 3]);
  });

  test("an inner tx that throws before sending anything rolls back nothing of the outer one", () => {
    db.$client.exec("TRUNCATE t");
    db.tx(() => {
      insert(1);
      expect(() =>
        db.tx(() => {
          throw new Error("before any statement");
        }),
      ).toThrow("before any statement");
      insert(2);
    });
    expect(ids()).toEqual([1, 2]);
  });

  test("group commit: a failing item rolls back alone", async () => {
    db.$client.exec("TRUNCATE t");
    const results = await Promise.allSettled([db.batch(() => insert(1)), db.batch(() => insert(1)), db.batch(() => insert(2))]);
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(((results[1] as PromiseRejectedResult).reason as PgError).code).toBe("23505");
    expect(ids()).toEqual([1, 2]);
  });

  test("group commit: an attempt that fails and is caught (the transaction aborted) runs the group again, isolated, even a group of one", async () => {
    db.$client.exec("TRUNCATE t");
    insert(9);
    let runs = 0;
    const caught: string[] = [];
    const item = () => {
      runs++;
      insert(1);
      try {
        db.attempt(() => insert(9));
      } catch (e) {
        caught.push((e as PgError).code);
      }
      insert(2); // fails in the optimistic run (the server aborted the transaction), not in the replay
    };
    await db.batch(item);
    expect(runs).toBe(2);
    expect(caught).toEqual(["23505", "23505"]);
    expect(ids()).toEqual([1, 2, 9]);
  });

  test("the data version: our own commits do not count as another's", () => {
    const v = db.dataVersion();
    db.tx(() => {
      insert(100);
      db.$client.exec("UPDATE switchboard_data_version SET v = v + 1"); // as the triggers do
    });
    expect(db.dataVersion()).toBe(v);
  });
});
