/**
 * Send-rate throttle per key (a channel account's `max_per_second`), shared by every sender in the process:
 * one-to-one dispatch and campaign dispatch reserve slots from the same schedule, never per worker.
 *
 * Virtual scheduling (GCRA): each key keeps the time of its next free slot; `reserve` hands out that slot and
 * moves it on by 1/rate. The caller waits until its slot. A reservation further ahead than `maxAheadMs` is
 * refused (-1) and nothing is taken, so low-priority senders (campaigns: a short horizon) can never book the
 * schedule far ahead of high-priority ones (one-to-one: a long horizon).
 *
 * NB! In-process state: one appliance per database. Several instances (DESIGN §15) share it in the database.
 */
export interface Throttle {
  /** ms to wait for the reserved slot (0: now), or -1 when the next slot is more than maxAheadMs away. */
  reserve(key: string, perSecond: number, maxAheadMs: number): number;
}

export function createThrottle({ now }: { now: () => number }): Throttle {
  const next = new Map<string, number>();
  return {
    reserve(key, perSecond, maxAheadMs) {
      const t = now();
      const slot = Math.max(t, next.get(key) ?? 0);
      const wait = slot - t;
      if (wait > maxAheadMs) return -1;
      next.set(key, slot + 1000 / perSecond);
      return wait;
    },
  };
}
