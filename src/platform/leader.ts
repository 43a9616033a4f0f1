/**
 * Which instance runs the scheduled work (template sync, analytics pulls, retention sweeps) and the receivers
 * only one instance may run (Telegram long polling, IMAP). On SQLite
 * there is one instance: always the leader. On PostgreSQL the leader is the instance holding the
 * session advisory lock LEADER_LOCK on a connection of its own; PostgreSQL releases it when that session
 * ends (the process dies, the network drops), and another instance takes it at its next try — fail-over
 * within `tryEveryMs`. Queue jobs need no leader: any instance claims them.
 */
import type { Db } from "../db/client";
import { createLeaderLockStore } from "./leader.store";
import type { Logger } from "./logger";

export { LEADER_LOCK } from "./leader.store";

export interface Leader {
  isLeader(): boolean;
  /** Calls fn(true) when this instance starts leading (at once if it leads now), fn(false) when it stops. */
  onChange(fn: (leading: boolean) => void): void;
  start(): void;
  stop(): void;
}

export function createLeader({ db, url, log, tryEveryMs = 2_000 }: { db: Pick<Db, "engine">; url?: string; log: Logger; tryEveryMs?: number }): Leader {
  const lock = createLeaderLockStore({ db, url });
  if (!lock) return { isLeader: () => true, onChange: (fn) => fn(true), start() {}, stop() {} };
  let leading = false;
  const listeners: ((leading: boolean) => void)[] = [];
  const set = (now: boolean) => {
    if (now === leading) return;
    leading = now;
    for (const fn of listeners) fn(now);
  };
  let timer: ReturnType<typeof setInterval> | null = null;
  let stepping = false; // one step at a time: a slow database must not stack them up
  let stopped = false;
  const step = async () => {
    if (stepping) return;
    stepping = true;
    try {
      const was = leading;
      const now = await lock.holdOrTake();
      if (stopped) return;
      if (now && !was) log.info("this instance leads the scheduled work");
      if (!now && was) log.warn("this instance lost the leader lock; another instance runs the scheduled work");
      set(now);
    } catch (err) {
      if (leading) log.warn({ err }, "lost the leader lock's connection; scheduled work stops here until it is taken again");
      set(false);
      lock.close();
    } finally {
      stepping = false;
    }
  };
  return {
    isLeader: () => leading,
    onChange(fn) {
      listeners.push(fn);
      if (leading) fn(true);
    },
    start() {
      stopped = false;
      void step();
      timer = setInterval(() => void step(), tryEveryMs);
      timer.unref?.();
    },
    stop() {
      if (timer) clearInterval(timer);
      timer = null;
      stopped = true;
      set(false);
      lock.close(); // releases the lock now rather than at process exit
    },
  };
}
