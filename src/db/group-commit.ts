/**
 * Group commit: `db.batch(fn)` queues `fn`; all batches queued during one event-loop turn run in ONE
 * transaction with one COMMIT — one fsync — for all of them. A throwing `fn` rejects only its own promise:
 * the group is rolled back and run again without it, each item in a savepoint (flush). The promise
 * resolves after that commit, so a caller that answers after `await db.batch(…)` never acknowledges an
 * uncommitted write. With synchronous=FULL a commit costs an fsync; this is what lets throughput exceed
 * fsyncs per second. Background items (the job queue's, a campaign's) come after a group's requests and
 * fill at most a slice of it (backgroundSlice: 1 ms while requests are writing); the rest wait for the next
 * group, after the event loop has read the requests that arrived meanwhile — one-to-one sends are not queued
 * behind a campaign. `db.unit` and `db.join` are built on it.
 *
 * NB! A group's fsync runs off the event loop (SQLite): the group commits with synchronous=NORMAL (its
 * frames are written to the WAL, not synced), then `fdatasync` of the WAL file runs on the thread pool
 * (wal-sync.ts) and the group's promises resolve when it has finished — the same promise as FULL (nothing
 * acknowledged that a crash can lose), without the main thread waiting ~1 ms per group for the disk. A crash
 * before the sync loses that group, and, the WAL being replayed only up to its first torn frame, nothing
 * after it: every later group was acknowledged only after a later sync. Reads outside the group see its rows
 * before they are durable: answers built from reads wait for `durable()` (durable-reads.plugin.ts), and
 * nothing is sent on such a row, since jobs are claimed in a group and start when that group's sync (which
 * covers the enqueue) has finished. Plain `db.tx` commits stay synchronous=FULL.
 */
import type { Db } from "./client";
import { RETRIES, retryable, unitContext, type CommitHook, type GroupCommitHooks, type TxState } from "./transactions";

type GroupItem = { fn: () => unknown; resolve: (v: unknown) => void; reject: (e: unknown) => void; onCommit?: () => void };
/**
 * How long a group runs background items for after its foreground ones (db.batch), while requests are
 * writing (one came in the last QUIET_MS); IDLE_SLICE_MS when none is. It bounds what a request waits behind:
 * its group, then that group's sync. Short slices cost commits (a campaign's fan-out alone ~12 % slower at
 * 1 ms), so they are short only when someone waits. Measured with a campaign fanning out at full speed beside
 * POST /messages (bench/campaigns.bench.ts): see bench/RESULTS.md.
 */
const BACKGROUND_SLICE_MS = 1;
const IDLE_SLICE_MS = 8;
const QUIET_MS = 100;
type ItemResult = { ok: true; value: unknown } | { ok: false; error: unknown };
const REPLAY = new Error("an attempt failed in an optimistic group run");

/** db.batch and db.holdGroups: the writes of one event-loop turn in one transaction (see the file's head). */
export function withGroupCommit(db: Db, group: GroupCommitHooks | null, state: TxState, inside: () => boolean): void {
  const sqlite = db.$client;
  const pending: GroupItem[] = []; // foreground: requests waiting for their answer
  const backlog: GroupItem[] = []; // background (db.batch)
  let scheduled = false;
  let held = false;
  let lastForeground = -Infinity; // when a foreground item last came
  db.backgroundSlice = () => (performance.now() - lastForeground < QUIET_MS ? BACKGROUND_SLICE_MS : IDLE_SLICE_MS);
  let isolateUntil = 0; // until then a group of more than one item runs each in a savepoint (runGroup)
  db.holdGroups = (on) => {
    held = on;
    if (!on && (pending.length || backlog.length)) schedule();
  };

  /**
   * Runs one group's items in one transaction and commits it; their results, or a throw when nothing of the
   * group committed (BEGIN or COMMIT failed: disk full, I/O error).
   *
   * Optimistic first: the items without a savepoint each. A savepoint copies every page an item touches before
   * it writes it (~7 µs of a POST /messages' ~65), to undo that item alone — which almost never happens. If
   * one throws, the group is rolled back and run again with a savepoint per item, without the one that threw
   * (it is refused with its error, decided as it ran after the items before it); for a second after that
   * every group of more than one item isolates them from the start. The same, with every item, when an
   * `attempt` inside an item threw: it must be undone alone.
   */
  async function runGroup(items: GroupItem[], firstBackground: number): Promise<(ItemResult | undefined)[]> {
    const results: (ItemResult | undefined)[] = new Array(items.length);
    let failed = -1; // the item refused in the optimistic run (not run again)
    let isolated = items.length > 1 && performance.now() < isolateUntil;
    // Background items after the first one wait for the next group once the slice is spent.
    const start = performance.now();
    const slice = db.backgroundSlice();
    const spent = (i: number) => i > firstBackground && performance.now() - start > slice;
    if (!isolated) {
      let at = -1; // the item running
      state.optimistic = true;
      state.attemptFailed = false;
      try {
        await db.tx(async () => {
          for (let i = 0; i < items.length; i++) {
            if (spent(i)) break;
            at = i;
            results[i] = { ok: true, value: await items[i]!.fn() };
            if (state.attemptFailed) throw REPLAY;
          }
          at = -1;
        });
      } catch (error) {
        // After a failed attempt the item's own error proves nothing: on PostgreSQL the failed statement
        // aborted the transaction, and every statement the item ran after catching it failed too.
        if (error === REPLAY || state.attemptFailed) isolated = true;
        else if (at < 0)
          throw error; // BEGIN or COMMIT failed: nothing of this group is durable
        else if (retryable(db, error))
          isolated = true; // it lost a race with another instance: every item again, each in a savepoint
        else {
          results[at] = { ok: false, error };
          failed = at;
          isolated = items.length > 1;
        }
      } finally {
        state.optimistic = false;
      }
      if (isolated) isolateUntil = performance.now() + 1000;
    }
    if (isolated)
      await db.tx(async () => {
        for (let i = 0; i < items.length; i++) {
          if (i === failed) continue;
          results[i] = undefined; // the optimistic run's outcome was undone with it
          if (i > failed && spent(i)) continue;
          try {
            results[i] = { ok: true, value: await retrying(() => db.tx(items[i]!.fn)) };
          } catch (error) {
            // SQLite rolled the whole group back with this item (see tx): the items before it are lost
            // too, so every item of the group fails rather than being answered as stored.
            if (!sqlite.inTransaction) throw error;
            results[i] = { ok: false, error };
          }
        }
      });
    return results;
  }

  /** fn again while it fails with a retryable error (PostgreSQL: a lost race), at most RETRIES times. */
  async function retrying<T>(fn: () => T | Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (error) {
        if (attempt > RETRIES || !retryable(db, error)) throw error;
      }
    }
  }

  const MAX_GROUP = 2000; // bounds the latency one commit adds to the requests in it
  const schedule = () => {
    if (!scheduled && !held) {
      scheduled = true;
      setImmediate(flush);
    }
  };
  let flushing = false; // a group is running (its items may await: the next one waits for it)
  const flush = async () => {
    scheduled = false;
    if (flushing) return;
    flushing = true;
    try {
      await flushGroups();
    } finally {
      flushing = false;
      if (pending.length && !held) schedule();
    }
  };
  const flushGroups = async () => {
    while ((pending.length || backlog.length) && !held) {
      const foreground = pending.splice(0, MAX_GROUP);
      const items = foreground.concat(backlog.splice(0, MAX_GROUP - foreground.length));
      let ran: GroupItem[];
      let results: ItemResult[];
      const committedHooks: CommitHook[] = [];
      state.groupHooks = committedHooks;
      const token = {};
      state.asyncOpen = token;
      try {
        group?.lazy(true);
        const all = await unitContext.run(token, () => runGroup(items, foreground.length));
        // Background items the slice had no room for wait, first in line, for the next group.
        ran = items.filter((_, i) => all[i]);
        if (ran.length < items.length) backlog.unshift(...items.filter((_, i) => !all[i]));
        results = all.filter((r) => r !== undefined);
      } catch (error) {
        // The COMMIT itself failed (disk full, I/O error): nothing of this group is durable.
        for (const item of items) item.reject(error);
        continue;
      } finally {
        state.asyncOpen = null;
        state.groupHooks = null;
        try {
          group?.lazy(false);
        } catch {
          // Only when the connection has been closed under the group: then there is nothing to restore.
        }
      }
      group?.committed();
      // (Bookkeeping callbacks of the queue: they must not throw.)
      ran.forEach((item, i) => {
        if (item.onCommit && results[i]!.ok) item.onCommit();
      });
      const answer = () => {
        for (const h of committedHooks) h.committed();
        ran.forEach((item, i) => {
          const r = results[i]!;
          if (r.ok) item.resolve(r.value);
          else item.reject(r.error);
        });
      };
      if (!group) answer();
      else {
        group.sync().then(answer, (error) => {
          for (const h of committedHooks) h.rolledBack();
          for (const item of ran) item.reject(error);
        });
      }
      // Background work left (or queued by this group's onCommit): the next group, after the event loop has
      // taken what arrived meanwhile.
      if (backlog.length) return schedule();
    }
  };
  db.batch = <T>(fn: () => T | Promise<T>, onCommit?: () => void, background = false): Promise<T> => {
    if (inside()) {
      try {
        // A unit nested in a group's optimistic run is an `attempt`: no savepoint (two statements and a copy of
        // every page it touches, ~7 µs of a send); if it throws, the group runs again with one (runGroup).
        if (state.optimistic) return Promise.resolve(db.attempt(fn));
        return Promise.resolve(db.tx(fn));
      } catch (e) {
        return Promise.reject(e);
      }
    }
    return new Promise<T>((resolve, reject) => {
      if (!background) lastForeground = performance.now();
      (background ? backlog : pending).push({ fn, resolve: resolve as (v: unknown) => void, reject, onCommit });
      schedule();
    });
  };
  db.unit = (fn, options) => db.batch(fn, options?.onCommit, options?.background);
  // One writer: no other transaction can hold a row this one waits for, so nothing needs to be held back.
  db.atEnd = (_order, fn) => fn();
  db.join = <T>(fn: () => T | Promise<T>): Promise<T> => {
    if (!inside()) return db.batch(fn);
    try {
      return Promise.resolve(fn());
    } catch (e) {
      return Promise.reject(e);
    }
  };
}
