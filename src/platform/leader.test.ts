import { afterEach, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { openDatabase } from "../db/client";
import { freshPostgresDatabase, postgresAvailable } from "../../test/helpers/postgres";
import { createLeader, LEADER_LOCK, type Leader } from "./leader";
import { silentLogger } from "./logger";
import { createScheduler } from "./scheduler";

const until = async (ok: () => boolean, ms = 5_000) => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error("timed out");
    await Bun.sleep(10);
  }
};

test("on SQLite the one instance leads", () => {
  const db = openDatabase(":memory:");
  const leader = createLeader({ db, log: silentLogger });
  expect(leader.isLeader()).toBe(true);
  const told: boolean[] = [];
  leader.onChange((l) => told.push(l));
  expect(told).toEqual([true]);
  db.close();
});

describe.skipIf(!postgresAvailable())("leader on PostgreSQL", () => {
  const started: Leader[] = [];
  afterEach(() => {
    for (const l of started.splice(0)) l.stop();
  });

  test("one of two instances leads; when its session ends the other takes over", async () => {
    const url = await freshPostgresDatabase();
    const db = { engine: "postgres" } as const;
    const a = createLeader({ db, url, log: silentLogger, tryEveryMs: 20 });
    const b = createLeader({ db, url, log: silentLogger, tryEveryMs: 20 });
    started.push(a, b);
    const told: string[] = [];
    a.onChange((l) => told.push(`a ${l}`));
    b.onChange((l) => told.push(`b ${l}`));
    a.start();
    await until(() => a.isLeader());
    b.start();
    await Bun.sleep(100);
    expect([a.isLeader(), b.isLeader()]).toEqual([true, false]);
    a.stop(); // as a dead process: its connection closes and PostgreSQL releases the lock
    await until(() => b.isLeader());
    expect(a.isLeader()).toBe(false);
    expect(told).toEqual(["a true", "a false", "b true"]); // who starts the pollers, and when
  });

  test("a leader whose backend is killed stops leading, and the lock moves", async () => {
    const url = await freshPostgresDatabase();
    const db = { engine: "postgres" } as const;
    const a = createLeader({ db, url, log: silentLogger, tryEveryMs: 20 });
    started.push(a);
    a.start();
    await until(() => a.isLeader());
    const admin = new SQL(url, { max: 1 });
    const holder = `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objid = ${LEADER_LOCK} AND granted`;
    const killed = (await admin.unsafe(holder))[0].pid;
    await admin.unsafe("SELECT pg_terminate_backend($1)", [killed]);
    const b = createLeader({ db, url, log: silentLogger, tryEveryMs: 20 });
    started.push(b);
    b.start();
    await Bun.sleep(300);
    // a noticed its session was gone; the lock is held again, by one new session, and exactly one instance leads
    const holders = await admin.unsafe(holder);
    expect(holders).toHaveLength(1);
    expect(holders[0].pid).not.toBe(killed);
    expect(Number(a.isLeader()) + Number(b.isLeader())).toBe(1);
    await admin.close();
  });

  test("the scheduler runs shared tasks on the leader only, per-instance tasks everywhere", async () => {
    let leads = false;
    const scheduler = createScheduler({ log: silentLogger, isLeader: () => leads });
    const ran: string[] = [];
    scheduler.every("shared", "* * * * * *", () => ran.push("shared"));
    scheduler.every("mine", "* * * * * *", () => ran.push("mine"), { perInstance: true });
    scheduler.start();
    await until(() => ran.includes("mine"), 3_000);
    expect(ran).not.toContain("shared");
    leads = true;
    await until(() => ran.includes("shared"), 3_000);
    scheduler.stop();
  });
});
