/**
 * The job loop's state: what createQueue (queue.ts) builds once and hands, explicitly, to the functions of
 * the loop's files (queue.enqueue.ts, queue.claim.ts, queue.anchor.ts, queue.inline.ts, queue.outcome.ts,
 * queue.run.ts, queue.pump.ts). In memory, per process. The primitive fields (`started`, `stopping`, …) are
 * read and written through the object, never copied: they change while the loop runs.
 */
import type { Db } from "../../db/client";
import type { Logger } from "../logger";
import type { ClaimHints } from "./queue.hints";
import type { WorkerSlots } from "./queue.slots";
import type { QueueStore } from "./queue.store";
import type { Job, JobHandler } from "./queue.types";

export type QueueState = {
  db: Db;
  now: () => Date;
  log: Logger;
  workers: number;
  defaultMaxAttempts: number;
  leaseMs: number;
  pollMs: number;
  store: QueueStore;
  handlers: Map<string, JobHandler>;
  /** Per type: the jobs started (stop and drain wait for them). */
  running: Map<string, Set<Promise<void>>>;
  /** Started, not finished (stop gives back what is left). */
  inflight: Map<string, Job>;
  /** A fresh lease token (unique, not secret). */
  leaseToken: () => string;
  started: boolean;
  stopping: boolean;
  /** Claim hints (queue.hints.ts). */
  idleUntil: ClaimHints["idleUntil"];
  freed: ClaimHints["freed"];
  markFreed: ClaimHints["markFreed"];
  groupDueAt: ClaimHints["groupDueAt"];
  wake: ClaimHints["wake"];
  /** When the next full pass (a claim of every type) is due (performance.now()). */
  nextFullPass: number;
  /** Worker slots (queue.slots.ts). */
  capacity: WorkerSlots["capacity"];
  hasRoom: WorkerSlots["hasRoom"];
  takeSlots: WorkerSlots["take"];
  freeSlots: WorkerSlots["free"];
  runningIn: WorkerSlots["runningIn"];
  /** Hand-overs not started yet: drain() waits for them too. */
  handovers: Set<Promise<void>>;
  /** Running jobs whose hold is on their anchor's row, not in a jobs row. */
  heldOnRow: WeakSet<Job>;
  /** Gives-back started outside a unit: stop() waits for them. */
  givingBack: Set<Promise<void>>;
  /** Inline types whose run the slice cut short (queue.inline.ts continueInline). */
  cutShort: Set<string>;
  /** A type's continued inline run not committed yet: stop() and drain() wait for it. */
  continued: Map<string, Promise<unknown>>;
  /** Passes whose claims are not started yet (queue.pump.ts pumpOnce). */
  passes: Set<Promise<number>>;
  /** Jobs finished so far (drain). */
  finished: number;
  /** Wakes a drain waiting for a slot (a job's outcome committed). */
  slotFreed: (() => void) | null;
  /** From now: whether the current background slice (db.backgroundSlice) is spent. */
  sliceTimer: () => () => boolean;
  /** Puts a job's start in line (queue.run.ts startLine). */
  startInLine: (start: () => void) => void;
  /** The pump's timer and its re-entry flags (queue.pump.ts). */
  timer: ReturnType<typeof setTimeout> | null;
  pumping: boolean;
  pumpAgain: boolean;
  /** A pump soon (queue.pump.ts nudge): what an enqueue or a finished job calls. */
  nudge: () => void;
};
