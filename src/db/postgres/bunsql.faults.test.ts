/**
 * The Bun.SQL pool under the faults of DESIGN §15: connection refused, a black-holed network, a server restart,
 * every backend terminated, a statement blocked by another session's lock. For each: every call settles within
 * the connect or statement timeout (+ margin) with STORAGE_UNAVAILABLE or the statement's SQLSTATE, the event
 * loop keeps running meanwhile, and once the fault ends the next calls succeed on the same pool.
 *
 * The black hole and the refused port go through test/fakes/latency-proxy.mjs (node); pg_ctl restarts the
 * test server (it restarts with its own command line, postmaster.opts: same port).
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { readdirSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { freePort, freshPostgresDatabase, postgresAvailable, postgresServer } from "../../../test/helpers/postgres";
import { openPgPool, StorageUnavailableError, type PgPool } from "./bunsql";

const CONNECT_MS = 1000;
const STATEMENT_MS = 1000;
const MARGIN_MS = 300;
const DEADLINE_MS = Math.max(CONNECT_MS, STATEMENT_MS) + MARGIN_MS;
/** What a loaded 2-core machine adds to a bound. */
const SLACK_MS = 500;
const options = { poolSize: 4, connectTimeoutMs: CONNECT_MS, statementTimeoutMs: STATEMENT_MS, marginMs: MARGIN_MS };

const PROXY: string | null = join(import.meta.dir, "../../../test/fakes/latency-proxy.mjs");
const hasNode = spawnSync("node", ["--version"]).status === 0;

async function startProxy(port: number, target: string): Promise<ChildProcess> {
  const proxy = spawn("node", [PROXY!, "--listen", `127.0.0.1:${port}`, "--to", target, "--delay-ms", "0"], { stdio: ["ignore", "pipe", "inherit"] });
  await new Promise((resolve) => proxy.stdout!.once("data", resolve));
  return proxy;
}
const via = (url: string, port: number) => {
  const u = new URL(url);
  u.port = String(port);
  return u.toString();
};

/** How late a chain of 10 ms timers ran at worst while `p` was pending: the event loop was free if it is small. */
async function timed<T>(p: () => Promise<T>): Promise<{ ms: number; lateMs: number; value?: T; error?: unknown }> {
  let worst = 0;
  let done = false;
  const tick = () => {
    const t0 = performance.now();
    setTimeout(() => {
      worst = Math.max(worst, performance.now() - t0 - 10);
      if (!done) tick();
    }, 10);
  };
  tick();
  const start = performance.now();
  try {
    const value = await p();
    return { ms: performance.now() - start, lateMs: worst, value };
  } catch (error) {
    return { ms: performance.now() - start, lateMs: worst, error };
  } finally {
    done = true;
  }
}

const unavailable = (r: { error?: unknown }) => {
  expect(r.error).toBeInstanceOf(StorageUnavailableError);
  // A connection class SQLSTATE or a session the server ended: the error plugin answers 503 STORAGE_UNAVAILABLE.
  expect((r.error as StorageUnavailableError).code).toMatch(/^(08...|57P0.)$/);
};

/** Calls until one succeeds (the pool healing by itself), at most `ms`. */
async function recovers(pool: PgPool, ms = 5000): Promise<number> {
  const start = performance.now();
  for (;;) {
    try {
      await pool.get("SELECT 1 AS one");
      return performance.now() - start;
    } catch (e) {
      if (performance.now() - start > ms) throw e;
      await Bun.sleep(50);
    }
  }
}

describe.skipIf(!postgresAvailable())("Bun.SQL pool under faults", () => {
  let url: string;
  beforeAll(async () => {
    url = await freshPostgresDatabase();
    const admin = new SQL(url, { max: 1 });
    await admin`CREATE TABLE t (id bigint PRIMARY KEY, n bigint)`;
    await admin`INSERT INTO t VALUES (1, 0)`;
    await admin.close();
  });

  test.skipIf(!PROXY || !hasNode)("connection refused: bounded STORAGE_UNAVAILABLE; once something listens, the same pool works", async () => {
    const port = await freePort();
    const pool = openPgPool(via(url, port), options);
    for (const call of [() => pool.get("SELECT 1"), () => pool.unit((tx) => tx.run("SELECT 1")), () => pool.ping()] as (() => Promise<unknown>)[]) {
      const r = await timed(call);
      unavailable(r);
      expect(r.ms).toBeLessThan(CONNECT_MS + SLACK_MS);
    }
    const proxy = await startProxy(port, new URL(url).host);
    try {
      expect(await recovers(pool)).toBeLessThan(2000);
      expect(await pool.unit((tx) => tx.get("SELECT 2 AS two"))).toEqual({ two: 2 });
    } finally {
      proxy.kill("SIGTERM");
      await pool.close();
    }
  });

  test.skipIf(!PROXY || !hasNode)(
    "black-holed network: calls end at the client's deadline, the loop runs meanwhile; restored, the pool works",
    async () => {
      const port = await freePort();
      const proxy = await startProxy(port, new URL(url).host);
      const pool = openPgPool(via(url, port), { ...options, listenCheckMs: 300 });
      const heard: (string | null)[] = [];
      const sub = await pool.listen("faults", (p) => heard.push(p));
      try {
        await Promise.all(Array.from({ length: 4 }, () => pool.get("SELECT pg_sleep(0.05)"))); // four open connections
        // a unit that is half-way when the network goes
        let resume!: () => void;
        const paused = new Promise<void>((resolve) => (resume = resolve));
        const midUnit = timed(() =>
          pool.unit(async (tx) => {
            await tx.run("UPDATE t SET n = n + 1 WHERE id = 1");
            await paused;
            return tx.get("SELECT 1 AS one");
          }),
        );
        await Bun.sleep(100);
        proxy.kill("SIGUSR1");
        await Bun.sleep(20);
        resume();
        // a statement on an open connection: nothing comes back; the deadline ends it
        const onOpen = await timed(() => pool.get("SELECT 1"));
        const unitCut = await midUnit;
        unavailable(unitCut);
        expect(unitCut.ms).toBeLessThan(120 + DEADLINE_MS + SLACK_MS);
        unavailable(onOpen);
        expect(onOpen.ms).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
        expect(onOpen.ms).toBeLessThan(DEADLINE_MS + SLACK_MS);
        expect(onOpen.lateMs).toBeLessThan(100);
        // the next ones open new connections, which the black hole swallows too: bounded by the connect timeout
        for (const call of [() => pool.run("UPDATE t SET n = n + 1 WHERE id = 1"), () => pool.unit((tx) => tx.run("SELECT 1"))] as (() => Promise<unknown>)[]) {
          const r = await timed(call);
          unavailable(r);
          expect(r.ms).toBeLessThan(DEADLINE_MS + SLACK_MS);
          expect(r.lateMs).toBeLessThan(100);
        }
        proxy.kill("SIGUSR2");
        expect(await recovers(pool)).toBeLessThan(DEADLINE_MS + SLACK_MS);
        expect(await pool.unit((tx) => tx.run("UPDATE t SET n = n + 1 WHERE id = 1"))).toEqual({ changes: 1 });
        // the LISTEN connection found itself deaf, came back, and said so; notifications flow again
        for (let i = 0; i < 300 && !heard.includes(null); i++) await Bun.sleep(20);
        expect(heard).toContain(null);
        await Bun.sleep(100);
        await pool.run("SELECT pg_notify('faults', 'after')");
        for (let i = 0; i < 200 && !heard.includes("after"); i++) await Bun.sleep(20);
        expect(heard).toContain("after");
      } finally {
        proxy.kill("SIGUSR2");
        await sub.unlisten();
        proxy.kill("SIGTERM");
        await pool.close();
      }
    },
    30_000,
  );

  test("every backend terminated: the pool's next calls succeed (a dead pooled connection is retried on another)", async () => {
    const pool = openPgPool(url, options);
    try {
      await Promise.all(Array.from({ length: 4 }, () => pool.get("SELECT pg_sleep(0.05)")));
      const admin = new SQL(url, { max: 1 });
      await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`;
      await admin.close();
      const r = await timed(() => Promise.all([pool.get("SELECT 1 AS one"), pool.unit((tx) => tx.get("SELECT 2 AS two")), pool.get("SELECT 3 AS three")]));
      expect(r.error).toBeUndefined();
      expect(r.value).toEqual([{ one: 1 }, { two: 2 }, { three: 3 }]);
    } finally {
      await pool.close();
    }
  });

  test("a statement blocked by another session's lock ends at the statement timeout with its SQLSTATE; the rest of the pool and the loop go on", async () => {
    const pool = openPgPool(url, options);
    const other = new SQL(url, { max: 1 });
    const holder = await other.reserve();
    try {
      await holder`BEGIN`;
      await holder`SELECT * FROM t WHERE id = 1 FOR UPDATE`;
      const blocked = timed(() => pool.run("UPDATE t SET n = n + 1 WHERE id = 1"));
      const inUnit = timed(() => pool.unit((tx) => tx.run("UPDATE t SET n = n + 1 WHERE id = 1")));
      const meanwhile = await timed(() => pool.ping());
      expect(meanwhile.error).toBeUndefined();
      expect(meanwhile.ms).toBeLessThan(200);
      for (const r of [await blocked, await inUnit]) {
        expect(["55P03", "57014"]).toContain((r.error as { code: string }).code); // lock_timeout = statement_timeout here
        expect(r.ms).toBeGreaterThanOrEqual(STATEMENT_MS - 50);
        expect(r.ms).toBeLessThan(STATEMENT_MS + SLACK_MS);
        expect(r.lateMs).toBeLessThan(100);
      }
      await holder`COMMIT`;
      expect(await pool.run("UPDATE t SET n = n + 1 WHERE id = 1")).toEqual({ changes: 1 });
    } finally {
      holder.release();
      await other.close();
      await pool.close();
    }
  });

  // NB! Not on a server of your own (SWITCHBOARD_TEST_PG_URL): it would restart it.
  test.skipIf(!!process.env.SWITCHBOARD_TEST_PG_URL)(
    "server restart (pg_ctl restart): calls meanwhile end bounded with STORAGE_UNAVAILABLE or succeed; afterwards the pool works",
    async () => {
      const pool = openPgPool(url, options);
      const admin = new SQL(await postgresServer(), { max: 1 });
      const [{ data_directory: data }] = await admin`SHOW data_directory`;
      await admin.close();
      const bin = join("/usr/lib/postgresql", readdirSync("/usr/lib/postgresql").sort().at(-1)!, "bin", "pg_ctl");
      const asRoot = userInfo().uid === 0;
      try {
        await Promise.all(Array.from({ length: 4 }, () => pool.get("SELECT pg_sleep(0.05)")));
        const args = ["restart", "-D", data, "-m", "fast", "-w"];
        const restart = spawn(asRoot ? "runuser" : bin, asRoot ? ["-u", "postgres", "--", bin, ...args] : args, { stdio: "ignore", detached: true });
        const restarted = new Promise<number | null>((resolve) => restart.once("exit", resolve));
        const outcomes: { ms: number; ok: boolean; lateMs: number }[] = [];
        let finished = false;
        void restarted.then(() => (finished = true));
        while (!finished) {
          const r = await timed(() => pool.unit((tx) => tx.run("UPDATE t SET n = n + 1 WHERE id = 1")));
          if (r.error) unavailable(r);
          outcomes.push({ ms: r.ms, ok: !r.error, lateMs: r.lateMs });
          await Bun.sleep(20);
        }
        expect(await restarted).toBe(0);
        for (const o of outcomes) {
          expect(o.ms).toBeLessThan(DEADLINE_MS + SLACK_MS);
          expect(o.lateMs).toBeLessThan(100);
        }
        expect(outcomes.some((o) => !o.ok)).toBe(true); // the restart was seen
        expect(await recovers(pool)).toBeLessThan(2000);
        expect(await pool.run("UPDATE t SET n = n + 1 WHERE id = 1")).toEqual({ changes: 1 });
      } finally {
        await pool.close();
      }
    },
    30_000,
  );
});
