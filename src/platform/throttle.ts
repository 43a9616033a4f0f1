/**
 * Send-rate throttle per key (a channel account's `max_per_second`), shared by every sender: one-to-one
 * dispatch and campaign dispatch reserve slots from the same schedule, never per worker.
 *
 * Virtual scheduling (GCRA): each key keeps the time of its next free slot; `reserveSlot` hands out that slot and
 * moves it on by 1/rate. The caller waits until its slot. A reservation further ahead than `maxAheadMs` is
 * refused (-1) and nothing is taken, so low-priority senders (campaigns: a short horizon) can never book the
 * schedule far ahead of high-priority ones (one-to-one: a long horizon).
 *
 * Two stores: in process (SQLite: one appliance per database), or one row per key in the database
 * (PostgreSQL: every instance books from the same schedule, so an account's rate is never multiplied by the
 * number of instances — DESIGN §15).
 */
import type { Db } from "../db/client";
import { createSendSlotsStore } from "./throttle.store";

export interface Throttle {
  /** ms to wait for the reserved slot (0: now), or -1 when the next slot is more than maxAheadMs away. */
  reserveSlot(key: string, perSecond: number, maxAheadMs: number): Promise<number>;
}

export function createThrottle({ now }: { now: () => number }): Throttle {
  const next = new Map<string, number>();
  const reserve = (key: string, perSecond: number, maxAheadMs: number): number => {
    const t = now();
    const slot = Math.max(t, next.get(key) ?? 0);
    const wait = slot - t;
    if (wait > maxAheadMs) return -1;
    next.set(key, slot + 1000 / perSecond);
    return wait;
  };
  return {
    reserveSlot: async (key, perSecond, maxAheadMs) => reserve(key, perSecond, maxAheadMs),
  };
}

/**
 * The schedule as rows of `switchboard_send_slots` (PostgreSQL, unlogged; throttle.store.ts), booked in one
 * atomic upsert on the database server's clock, so instances whose clocks differ still share one schedule.
 */
export function createSharedThrottle({ db }: { db: Db }): Throttle {
  const slots = createSendSlotsStore(db);
  return {
    async reserveSlot(key, perSecond, maxAheadMs) {
      return (await slots.book(key, 1000 / perSecond, maxAheadMs)) ?? -1;
    },
  };
}
