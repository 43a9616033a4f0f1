/**
 * A throwaway PostgreSQL server for tests: Debian's `postgresql` package (initdb and postgres from
 * /usr/lib/postgresql/<n>/bin), a cluster in a temp dir on a free loopback port, stopped when the test
 * process exits. One per test process, started on first use; every caller gets its own fresh database.
 *
 * `SWITCHBOARD_TEST_PG_URL` points the tests at a server of your own instead (a database the tests may
 * create databases on). Without either, `postgresAvailable()` is false and PostgreSQL tests skip, saying why.
 *
 * NB! postgres refuses to run as root: as root the cluster runs as the `postgres` user the package made.
 * fsync is off: the tests check behaviour, not durability. SWITCHBOARD_TEST_PG_DURABLE=1 (the benchmarks)
 * keeps PostgreSQL's defaults: fsync, synchronous_commit, full_page_writes on.
 */
import { spawnSync, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, chownSync, rmSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { createServer } from "node:net";
import { SQL } from "bun";
import type { Db } from "../../src/db/client";
import { openPostgres } from "../../src/db/postgres/engine";
import { migratePostgresAsync } from "../../src/db/postgres/migrate";

function binDir(): string | null {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0]!, "bin") : null;
}

export function postgresAvailable(): boolean {
  return !!process.env.SWITCHBOARD_TEST_PG_URL || binDir() !== null;
}

export const POSTGRES_SKIP_REASON = "no PostgreSQL: install Debian's postgresql package or set SWITCHBOARD_TEST_PG_URL";

/** A free loopback port (the tests' throwaway servers: PostgreSQL here, Dovecot in test/fakes/imap.peer.ts). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

let server: Promise<string> | null = null;
/** Stops the server this process started and removes its files (test/setup.ts: after the whole run). */
let shutdown: (() => Promise<void>) | null = null;
export async function stopPostgresServer(): Promise<void> {
  await shutdown?.();
  shutdown = null;
  server = null;
}

/** The URL of a server (started on first call) whose `postgres` database the tests may create databases from. */
export function postgresServer(): Promise<string> {
  if (process.env.SWITCHBOARD_TEST_PG_URL) return Promise.resolve(process.env.SWITCHBOARD_TEST_PG_URL);
  return (server ??= startServer());
}

async function startServer(): Promise<string> {
  const bin = binDir();
  if (!bin) throw new Error(POSTGRES_SKIP_REASON);
  const dir = mkdtempSync(join(tmpdir(), "sb-pg-"));
  const asRoot = userInfo().uid === 0;
  const run = (cmd: string, args: string[]) => (asRoot ? ["runuser", ["-u", "postgres", "--", cmd, ...args]] : [cmd, args]) as [string, string[]];
  if (asRoot) {
    const pw = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    const uid = Number(pw.stdout.trim());
    const gid = Number(spawnSync("id", ["-g", "postgres"], { encoding: "utf8" }).stdout.trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, "data");
  const init = spawnSync(...run(join(bin, "initdb"), ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8", "--locale=C"]), {
    encoding: "utf8",
  });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  const child = spawn(
    ...run(join(bin, "postgres"), [
      "-D",
      data,
      "-p",
      String(port),
      "-k",
      dir,
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "max_connections=300",
      ...(process.env.SWITCHBOARD_TEST_PG_DURABLE === "1" ? [] : ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]),
    ]),
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  let stderr = "";
  child.stderr!.on("data", (b) => (stderr += b));
  const stop = () => {
    // NB! As root the server runs under runuser, which passes no signal on (each test run left its server
    // running): the postmaster is signalled by the pid it wrote. SIGINT: fast shutdown.
    try {
      process.kill(Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]), "SIGINT");
    } catch {}
    try {
      child.kill("SIGINT");
    } catch {}
  };
  const remove = () => {
    // the server removes nothing itself; the data dir goes once it has stopped (best effort)
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {}
  };
  // NB! bun test does not emit "exit" to handlers a test file registered: the preload's afterAll stops it.
  process.once("exit", () => (stop(), remove()));
  shutdown = async () => {
    stop();
    for (let i = 0; i < 100 && child.exitCode === null && child.signalCode === null; i++) await Bun.sleep(50);
    remove();
  };
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  for (let i = 0; i < 200; i++) {
    if (child.exitCode !== null) throw new Error(`postgres exited: ${stderr}`);
    try {
      const sql = new SQL(url, { max: 1, connectionTimeout: 1 });
      await sql`select 1`;
      await sql.close();
      return url;
    } catch {
      await Bun.sleep(50);
    }
  }
  stop();
  throw new Error(`postgres did not start: ${stderr}`);
}

let counter = 0;

/** A new empty database on the test server (or on the server at `on`: a URL whose database may create databases); returns its URL. */
export async function freshPostgresDatabase(prefix = "sb_test", on?: string): Promise<string> {
  const base = on ?? (await postgresServer());
  const name = `${prefix}_${process.pid}_${++counter}_${Date.now().toString(36)}`;
  const admin = new SQL(base, { max: 1 });
  try {
    await admin.unsafe(`CREATE DATABASE "${name}"`);
  } finally {
    await admin.close();
  }
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/** `n` instances of the appliance on one fresh, migrated database: a pool each. The caller closes them. */
export async function postgresInstances(n: number): Promise<Db[]> {
  const url = await freshPostgresDatabase();
  await migratePostgresAsync(url, { version: "test" });
  return Array.from({ length: n }, () => openPostgres(url));
}
