/**
 * The Bun.SQL pool (bunsql.ts): rows in the shape the SQLite engine gives them (as libpq.ts, the engine it
 * replaced, gave them: recorded row for row on the migrated schema), parameters bound as libpq bound them, units with savepoints and retries, session settings,
 * LISTEN. The faults are in bunsql.faults.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Elysia } from "elysia";
import { errorPlugin } from "../../platform/http/error.plugin";
import { silentLogger } from "../../platform/logger";
import { freshPostgresDatabase, postgresAvailable } from "../../../test/helpers/postgres";
import { migratePostgresAsync } from "./migrate";
import { openPgPool, PgError, StorageUnavailableError, type PgPool, type PgTx } from "./bunsql";

const errorOf = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (e) {
    return e as PgError;
  }
  throw new Error("expected an error");
};

test.each([
  ["the database unreachable", new StorageUnavailableError("refused", "08001"), 503, "STORAGE_UNAVAILABLE", "5"],
  ["a statement timeout", new PgError("canceling statement due to statement timeout", "57014"), 503, "STORAGE_UNAVAILABLE", "1"],
  ["a lock timeout", new PgError("could not obtain lock", "55P03"), 503, "STORAGE_UNAVAILABLE", "1"],
  ["a unique violation", new PgError("duplicate key", "23505"), 500, "INTERNAL", null],
])("the error plugin answers %s: storage that cannot serve is 503 with Retry-After", async (_, error, status, code, retryAfter) => {
  const app = new Elysia().use(errorPlugin({ log: silentLogger })).get("/", () => {
    throw error;
  });
  const res = await app.handle(new Request("http://localhost/"));
  expect(res.status).toBe(status);
  expect(((await res.json()) as { error: { code: string } }).error.code).toBe(code);
  expect(res.headers.get("retry-after")).toBe(retryAfter);
});

describe.skipIf(!postgresAvailable())("Bun.SQL pool", () => {
  let url: string;
  let pool: PgPool;
  beforeAll(async () => {
    url = await freshPostgresDatabase();
    await migratePostgresAsync(url, { version: "test" });
    pool = openPgPool(url, { poolSize: 4, statementTimeoutMs: 5000 });
    await pool.run("CREATE TABLE t (id bigint PRIMARY KEY, s text, n bigint)");
  });
  afterAll(async () => {
    await pool?.close();
  });

  // The rows libpq gave for these (the engine this pool replaced), recorded: the stores' rows must not change shape.
  test("every column type of the migrated schema decodes as the SQLite engine's rows are shaped", async () => {
    const types = (
      await pool.all(
        "SELECT DISTINCT data_type AS t FROM information_schema.columns WHERE table_schema = 'public' AND table_name <> '__drizzle_migrations' ORDER BY 1",
      )
    ).map((r) => (r as { t: string }).t);
    const samples: Record<string, [string | null, unknown][]> = {
      bigint: [
        ["0", 0],
        ["-1", -1],
        ["9007199254740991", 9007199254740991],
        ["-9007199254740991", -9007199254740991],
        [null, null],
      ],
      text: [
        ["", ""],
        ["é ☃ \u{1F600}", "é ☃ \u{1F600}"],
        ["it's", "it's"],
        [" lead and trail ", " lead and trail "],
        [null, null],
      ],
      boolean: [
        ["true", 1],
        ["false", 0],
        [null, null],
      ],
      "double precision": [
        ["0", 0],
        ["1.5", 1.5],
        ["-2.25e10", -2.25e10],
        ["1e-7", 1e-7],
        ["0.1", 0.1],
        [null, null],
      ],
    };
    expect(types.filter((t) => !samples[t])).toEqual([]); // a new column type: add its samples here
    for (const type of types)
      for (const [v, want] of samples[type]!) {
        const sql = `SELECT CAST(? AS ${type}) AS v, 1 AS one`;
        expect({ sql, v, rows: await pool.all(sql, [v]) }).toEqual({ sql, v, rows: [{ v: want, one: 1 }] });
      }
  });

  test("rows of a real table, and the types expressions give, decode as the SQLite engine's rows are shaped", async () => {
    await pool.run("INSERT INTO companies (id, slug, name, created_at) VALUES ('c1', 'c1', 'Ünïcode Co', 1764000000000)");
    await pool.run(
      "INSERT INTO api_keys (id, company_id, name, prefix, hash, scopes, allowed_ips, rate_limit, expires_at, revoked_at, created_at) VALUES (?, 'c1', 'k', 'p', 'h', '[\"*\"]', '[]', NULL, ?, NULL, ?)",
      ["k1", 9007199254740991, 1764000000000],
    );
    const expected: [string, Record<string, unknown>[]][] = [
      [
        "SELECT * FROM api_keys",
        [
          {
            id: "k1",
            company_id: "c1",
            name: "k",
            prefix: "p",
            hash: "h",
            scopes: '["*"]',
            allowed_ips: "[]",
            rate_limit: null,
            expires_at: 9007199254740991,
            revoked_at: null,
            last_used_at: null,
            created_at: 1764000000000,
          },
        ],
      ],
      ["SELECT * FROM companies", [{ id: "c1", slug: "c1", name: "Ünïcode Co", created_at: 1764000000000 }]],
      [
        "SELECT count(*) AS n, sum(created_at) AS total, avg(created_at) AS mean, max(name) AS top FROM api_keys",
        [{ n: 1, total: 1764000000000, mean: 1764000000000, top: "k" }],
      ],
      [
        "SELECT exists(SELECT 1 FROM api_keys) AS yes, 1 = 2 AS no, 2.5::float8 AS f, 1.25::float4 AS r, 7::int4 AS i, 3::int2 AS h, 1.5::numeric AS d",
        [{ yes: 1, no: 0, f: 2.5, r: 1.25, i: 7, h: 3, d: 1.5 }],
      ],
      [
        "SELECT '\\x00ff'::bytea AS b, NULL::bytea AS nb, NULL::int8 AS ni, NULL::boolean AS nbool, 'x'::varchar AS vc, gen_random_uuid() IS NOT NULL AS u",
        [{ b: Buffer.from([0, 255]), nb: null, ni: null, nbool: null, vc: "x", u: 1 }],
      ],
      ["SELECT extract(epoch FROM TIMESTAMPTZ '2026-01-02 03:04:05.5+00') * 1000 AS ms", [{ ms: 1767323045500 }]],
    ];
    for (const [sql, rows] of expected) expect({ sql, rows: await pool.all(sql) }).toEqual({ sql, rows });
    expect(await pool.values("SELECT id, rate_limit, expires_at FROM api_keys")).toEqual([["k1", null, 9007199254740991]]);
  });

  test("types Bun decodes into objects come back as text (json as JSON, timestamps as ISO 8601; not libpq's text byte for byte)", async () => {
    const row = (await pool.get(
      `SELECT '{"a": [1, 2]}'::json AS j, '{"a": 1}'::jsonb AS jb, TIMESTAMPTZ '2026-01-02 03:04:05.5+00' AS ts, ARRAY[1, 2] AS arr`,
    ))!;
    expect(JSON.parse(row.j as string)).toEqual({ a: [1, 2] });
    expect(JSON.parse(row.jb as string)).toEqual({ a: 1 });
    expect(row.ts).toBe("2026-01-02T03:04:05.500Z");
    expect(row.arr).toBe("{1,2}");
  });

  test("parameters bind as libpq binds them: numbers to text columns, booleans as 1/0, bigint, bytes, null and undefined; ?N reused", async () => {
    await pool.run("INSERT INTO t (id, s, n) VALUES (?, ?, ?)", [1, 42, true]);
    await pool.run("INSERT INTO t (id, s, n) VALUES (?1, ?2, ?1)", [2n, "two"]);
    await pool.run("INSERT INTO t (id, s, n) VALUES (?, ?, ?)", [3, undefined, null]);
    expect(await pool.all("SELECT * FROM t WHERE s = ? OR s = ? OR id = ? ORDER BY id", [42, "two", "3"])).toEqual([
      { id: 1, s: "42", n: 1 },
      { id: 2, s: "two", n: 2 },
      { id: 3, s: null, n: null },
    ]);
    expect(await pool.get("SELECT length(?::bytea) AS n", [new Uint8Array([0, 1, 255])])).toEqual({ n: 3 });
    expect(await pool.get("SELECT * FROM t WHERE id = ?", [99])).toBeNull();
  });

  test("run counts the rows written; an upsert's qualified conflict target is rewritten", async () => {
    expect(await pool.run("UPDATE t SET n = 5 WHERE id IN (1, 2)")).toEqual({ changes: 2 });
    expect(await pool.run("DELETE FROM t WHERE id = 99")).toEqual({ changes: 0 });
    expect(await pool.run(`INSERT INTO t (id, s) VALUES (1, 'x') ON CONFLICT ("t"."id") DO NOTHING`)).toEqual({ changes: 0 });
    expect(await pool.run(`INSERT INTO t (id, s) VALUES (1, 'x') ON CONFLICT ("t"."id") DO UPDATE SET s = excluded.s`)).toEqual({ changes: 1 });
  });

  test("a statement's error carries its SQLSTATE and the server's message", async () => {
    const e = await errorOf(pool.run("INSERT INTO t (id) VALUES (1)"));
    expect(e).toBeInstanceOf(PgError);
    expect(e.code).toBe("23505");
    expect(e.message).toBe('duplicate key value violates unique constraint "t_pkey"');
    expect((await errorOf(pool.run("SELECT ?::text", ["a\0b"]))).code).toBe("22021");
  });

  test("every connection starts with the session settings (statement and lock timeouts from the options)", async () => {
    const settings = await Promise.all(
      Array.from({ length: 4 }, () =>
        pool.get(
          "SELECT current_setting('statement_timeout') AS st, current_setting('lock_timeout') AS lt, current_setting('client_min_messages') AS m, pg_backend_pid() AS pid",
        ),
      ),
    );
    for (const s of settings) expect(s).toMatchObject({ st: "5s", lt: "5s", m: "warning" });
  });

  test("a unit commits, rolls back when fn throws, and a savepoint undoes its own writes only", async () => {
    await pool.run("DELETE FROM t");
    expect(
      await pool.unit(async (tx) => {
        await tx.run("INSERT INTO t (id) VALUES (1)");
        await tx.savepoint(async (sp) => {
          await sp.run("INSERT INTO t (id) VALUES (2)");
          await sp.savepoint(async (inner) => inner.run("INSERT INTO t (id) VALUES (3)")).catch(() => {});
        });
        const e = await errorOf(tx.savepoint(async (sp) => sp.run("INSERT INTO t (id) VALUES (1)")));
        expect(e.code).toBe("23505"); // the transaction goes on after ROLLBACK TO
        await tx.run("INSERT INTO t (id) VALUES (4)");
        return "done";
      }),
    ).toBe("done");
    expect(await pool.values("SELECT id FROM t ORDER BY id")).toEqual([[1], [2], [3], [4]]);
    const boom = await errorOf(
      pool.unit(async (tx) => {
        await tx.run("INSERT INTO t (id) VALUES (5)");
        throw new Error("boom");
      }),
    );
    expect(boom.message).toBe("boom");
    expect(await pool.values("SELECT id FROM t WHERE id = 5")).toEqual([]);
  });

  test("statements of a unit sent together travel on its one connection (pipelined) and see its writes", async () => {
    const pids = await pool.unit(async (tx) => {
      await tx.run("INSERT INTO t (id) VALUES (10)");
      return Promise.all(Array.from({ length: 20 }, () => tx.get("SELECT pg_backend_pid() AS pid, (SELECT count(*) FROM t WHERE id = 10) AS n")));
    });
    expect(new Set(pids.map((p) => p!.pid)).size).toBe(1);
    expect(pids.every((p) => p!.n === 1)).toBe(true);
  });

  test("a deadlock is retried: both units commit, the loser's fn runs again", async () => {
    await pool.run("DELETE FROM t");
    await pool.run("INSERT INTO t (id, n) VALUES (1, 0), (2, 0)");
    let runs = 0;
    const crossing = (first: number, second: number) =>
      pool.unit(async (tx) => {
        runs++;
        await tx.run("UPDATE t SET n = n + 1 WHERE id = ?", [first]);
        await Bun.sleep(100);
        await tx.run("UPDATE t SET n = n + 1 WHERE id = ?", [second]);
      });
    await Promise.all([crossing(1, 2), crossing(2, 1)]);
    expect(runs).toBe(3);
    expect(await pool.values("SELECT n FROM t ORDER BY id")).toEqual([[2], [2]]);
  });

  test("a serialization failure is retried a few times, then reaches the caller", async () => {
    let runs = 0;
    const e = await errorOf(
      pool.unit(async () => {
        runs++;
        throw new PgError("could not serialize access", "40001");
      }),
    );
    expect(e.code).toBe("40001");
    expect(runs).toBe(5);
  });

  test("LISTEN: notifications arrive; a listening connection the server ended comes back and says it may have missed some", async () => {
    const got: (string | null)[] = [];
    const sub = await pool.listen("bunsql_test", (p) => got.push(p));
    await pool.run("SELECT pg_notify('bunsql_test', 'k1')");
    for (let i = 0; i < 100 && !got.length; i++) await Bun.sleep(10);
    expect(got).toEqual(["k1"]);
    await pool.run("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND pid <> pg_backend_pid()");
    for (let i = 0; i < 300 && !got.includes(null); i++) await Bun.sleep(10);
    expect(got).toContain(null);
    await pool.run("SELECT pg_notify('bunsql_test', 'k2')");
    for (let i = 0; i < 100 && !got.includes("k2"); i++) await Bun.sleep(10);
    expect(got).toContain("k2");
    await sub.unlisten();
  });

  test("a statement on a unit that has ended is refused (it would run outside the transaction)", async () => {
    let kept: PgTx | null = null;
    await pool.unit(async (tx) => {
      kept = tx;
    });
    expect((await errorOf(kept!.run("SELECT 1"))).message).toContain("unit that has ended");
  });

  test("ping answers; a closed pool refuses with STORAGE_UNAVAILABLE", async () => {
    await pool.ping();
    const other = openPgPool(url, { poolSize: 1 });
    await other.ping();
    await other.close();
    const e = await errorOf(other.ping());
    expect(e).toBeInstanceOf(StorageUnavailableError);
    expect(e.code).toBe("08003");
  });
});
