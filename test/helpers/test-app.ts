/**
 * A real app over a fresh temp-file database with the real migrations and a clock the test controls.
 * Requests go through `app.handle` (no socket) unless a test calls `listen()`. `app.emitted` lists the
 * domain events whose transactions committed, in emit order.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createApp } from "../../src/app";
import { parseConfig } from "../../src/config/config.load";
import type { Config } from "../../src/config/config.schema";
import type { Db } from "../../src/db/client";
import { buildDeps, openStorage, type Deps } from "../../src/deps";
import { wireModules } from "../../src/wire";
import { createApiKey } from "../../src/modules/api-keys/api-keys.service";
import { createCompany, findCompanyBySlug } from "../../src/modules/companies/companies.service";
import { createManualClock } from "../../src/platform/clock";
import type { DomainEvent } from "../../src/events";
import { silentLogger } from "../../src/platform/logger";
import { parseMicros } from "../../src/platform/money";
import { freshPostgresDatabase } from "./postgres";

/**
 * The engine test apps run on: SQLite, or with SWITCHBOARD_TEST_ENGINE=postgres a fresh PostgreSQL database
 * per app (test/helpers/postgres.ts) — how the API scenarios run against both engines.
 */
export const TEST_ENGINE = process.env.SWITCHBOARD_TEST_ENGINE === "postgres" ? "postgres" : "sqlite";

export const BASE = "http://localhost/api/public/v1";

/** Fixed ids of the sandbox accounts every test app has (one default per channel). */
export const ACCOUNTS = {
  whatsapp: "0193a4b2-0000-7000-8000-0000000000a1",
  instagram: "0193a4b2-0000-7000-8000-0000000000a2",
  messenger: "0193a4b2-0000-7000-8000-0000000000a3",
  x: "0193a4b2-0000-7000-8000-0000000000a4",
  tiktok: "0193a4b2-0000-7000-8000-0000000000a5",
  telegram: "0193a4b2-0000-7000-8000-0000000000a6",
  email: "0193a4b2-0000-7000-8000-0000000000a7",
} as const;

/**
 * Sandbox accounts for the test config. Status timers are off by default (delivered after an hour) so
 * nothing changes behind a test's back; tests of the progression pass their own settings.
 */
export function sandboxChannels(settings: Record<string, unknown> = { sent_after_ms: 0, delivered_after_ms: 3_600_000, read_after_ms: 0 }) {
  return Object.entries(ACCOUNTS).map(([channel, id]) => ({
    id,
    channel,
    provider: "sandbox",
    name: `${channel} sandbox`,
    default: true,
    settings: { ...settings },
  }));
}

export interface TestResponse<T = any> {
  status: number;
  headers: Headers;
  body: T;
}

export interface TestAppOptions {
  /** Raw config (TOML-shaped object) merged over the test defaults. */
  config?: Record<string, unknown>;
  balance?: string;
  start?: Date;
  /**
   * Reuse this data dir (a restart: pass the `dir` of an app closed with `close({ keepData: true })`).
   * The existing "default" company is reused; a new admin key is made.
   */
  dataDir?: string;
  /** false: do not record emitted events in `app.emitted` (benchmarks emit millions). */
  recordEvents?: boolean;
  /**
   * true: the clock follows real time (leases expire, retries fall due, `queue.start()` runs them), and
   * `clock.advance`/`set` still jump it. Default: a manual clock that moves only when the test moves it.
   */
  realTime?: boolean;
}

/** Real time plus an offset the test can move: a clock for tests that run the job loop on its own. */
export function createOffsetClock(start?: Date): ReturnType<typeof createManualClock> {
  let offset = start ? start.getTime() - Date.now() : 0;
  return {
    now: () => new Date(Date.now() + offset),
    set: (d) => {
      offset = d.getTime() - Date.now();
    },
    advance: (ms) => {
      offset += ms;
    },
  };
}

const databaseOfDir = new Map<string, string>();

export async function createTestApp(opts: TestAppOptions = {}) {
  const dir = opts.dataDir ?? mkdtempSync(join(tmpdir(), "sb-test-"));
  const url = TEST_ENGINE === "postgres" ? (databaseOfDir.get(dir) ?? (await freshPostgresDatabase())) : undefined;
  if (url) databaseOfDir.set(dir, url); // a restart with `dataDir` finds its database again
  const { storage: storageOpts, ...rest } = (opts.config ?? {}) as { storage?: Record<string, unknown> };
  const storage = { ...(url ? { data_dir: dir, driver: "postgres", url } : { data_dir: dir }), ...storageOpts };
  const config: Config = parseConfig({ storage, license: { file: join(dir, "license.json") }, channels: sandboxChannels(), ...rest }, { env: {} });
  const clock = opts.realTime ? createOffsetClock(opts.start) : createManualClock(opts.start ?? new Date());
  const deps: Deps = await buildDeps({ config, clock, log: silentLogger, db: openStorage(config) });
  const existing = opts.dataDir ? await findCompanyBySlug({ db: deps.db, slug: "default" }) : undefined;
  const { company } = existing ? { company: existing } : await createCompany({ db: deps.db, now: deps.now, slug: "default", name: "Default" });
  const balance = parseMicros(opts.balance ?? "100.000000")!;
  if (balance > 0 && !existing) await deps.ledger.credit({ companyId: company.id, amount: balance, description: "test credit" });
  const { key, apiKey } = await createApiKey({ db: deps.db, now: deps.now, companyId: company.id, name: "admin", scopes: ["*"] });
  await wireModules(deps);
  const app = createApp(deps);
  const emitted = opts.recordEvents === false ? () => [] : recordEmitted(deps);

  async function request<T = any>(
    method: string,
    path: string,
    { body, headers = {}, key: useKey = key, raw }: { body?: unknown; headers?: Record<string, string>; key?: string | null; raw?: string | Uint8Array } = {},
  ): Promise<TestResponse<T>> {
    const h: Record<string, string> = { ...headers };
    if (useKey) h.authorization ??= `Bearer ${useKey}`;
    let payload: string | Uint8Array | undefined = raw;
    if (body !== undefined) {
      payload = JSON.stringify(body);
      h["content-type"] ??= "application/json";
    }
    const url = path.startsWith("http") ? path : /^\/(api|healthz|readyz|docs|hooks|metrics)\b/.test(path) ? `http://localhost${path}` : `${BASE}${path}`;
    const res = await app.handle(new Request(url, { method, headers: h, body: payload }));
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {}
    return { status: res.status, headers: res.headers, body: parsed as T };
  }

  return {
    dir,
    config,
    clock,
    deps,
    app,
    company,
    key,
    apiKey,
    request,
    /** Every domain event emitted since the app was made whose transaction committed, in emit order. */
    get emitted(): DomainEvent[] {
      return emitted();
    },
    /**
     * A second connection to this app's database — what another process (the `switchboard` CLI, a second
     * instance) opens from the same config: the SQLite file, or the PostgreSQL database. The caller closes it.
     */
    openConnection(): Db {
      return openStorage(config);
    },
    /**
     * Runs `write` — a commit on another connection (`openConnection`) — and resolves once this app's own
     * connection has been told of it, so its caches (keys, companies, balances) are due to reload: at once on
     * SQLite (PRAGMA data_version), on PostgreSQL when the commit's NOTIFY has arrived (src/db/client.ts;
     * the product's contract there: another instance's commit holds from the moment its notification
     * arrives). Fails on SQLite if the first check has not seen it, on PostgreSQL after 2 s. Resolves in a
     * later event-loop turn, where a request sent after the commit is handled (the API key cache checks once
     * per turn).
     */
    async externalCommit<T>(write: () => T | Promise<T>): Promise<T> {
      const before = deps.db.dataVersion();
      const result = await write(); // an asynchronous service's writes are done once it settles
      const since = performance.now();
      while (deps.db.dataVersion() === before) {
        if (deps.db.engine === "sqlite") throw new Error("SQLite's data_version did not change with another connection's commit");
        if (performance.now() - since > 2_000) throw new Error("this app was not told of the other connection's commit within 2 s");
        await Bun.sleep(1);
      }
      await new Promise((r) => setImmediate(r));
      return result;
    },
    /** Another key of the default company. */
    async newKey(o: Omit<Parameters<typeof createApiKey>[0], "db" | "now" | "companyId"> & { companyId?: string } = {}) {
      return await createApiKey({ db: deps.db, now: deps.now, companyId: company.id, ...o });
    },
    async close({ keepData = false }: { keepData?: boolean } = {}) {
      await deps.channels.stop();
      await deps.queue.stop(1000);
      deps.scheduler.stop();
      deps.db.close();
      if (!keepData) rmSync(dir, { recursive: true, force: true });
    },
  };
}

export type TestApp = Awaited<ReturnType<typeof createTestApp>>;

/**
 * Subscribes a recorder to the event bus. It runs inside the emitting transaction like every subscriber, and
 * lists an event once that transaction has committed (db.afterCommit): a rolled-back transaction (or
 * savepoint, e.g. one failed item of a group commit) takes its events with it, and only committed events are
 * listed — on either engine, whatever connection the transaction ran on.
 */
function recordEmitted(deps: Deps): () => DomainEvent[] {
  const committed: DomainEvent[] = [];
  deps.events.subscribe((event) => {
    // A lazy payload is built now, in the emitting unit, as a subscriber asking for it would (its read is sent
    // at once, on the unit's connection: it has answered before the unit commits). Not awaited: the recorder
    // answers no promise, so it changes nothing of how the emitter runs.
    event.payload().catch(() => {});
    if (!deps.db.inUnit()) return void committed.push(event);
    deps.db.afterCommit(
      () => committed.push(event),
      () => {},
    );
  });
  return () => [...committed];
}
