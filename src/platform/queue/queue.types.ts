/**
 * The job queue's contract (queue.ts): what a job is, what a handler may answer, what a type may keep on
 * its business rows (JobAnchor), and what the queue offers its callers.
 *
 * The queue is generic over its map of job type → payload type (the app's: JobMap in src/jobs.ts, which sees
 * the features' types; the platform knows none): `enqueueJob` and `register` of a type not in the map, or with
 * a wrong payload, do not compile. Without a map (the queue's own tests) any type takes any payload.
 */

/** The map of a queue without one (the queue's own tests): any job type, any payload. */
export type UntypedJobs = Record<string, any>;
export interface Job<P = Record<string, unknown>> {
  id: string;
  type: string;
  payload: P;
  attempts: number;
  maxAttempts: number;
  groupKey: string | null;
  /** A claimed job: when its lease expires (ms). An inline job: when it was due. */
  runAt: number;
  leaseToken: string;
}

/** What a handler may ask for besides success (return nothing) or a thrown error (retry with backoff). */
export type JobOutcome =
  // biome-ignore lint/suspicious/noConfusingVoidType: a handler that returns nothing (`async () => {}`) means success
  | void
  /** Run again at `retryAt`; `payload`: with this payload instead (what is left of a job's work). */
  | { retryAt: Date; error?: string; countAttempt?: boolean; payload?: Record<string, unknown> }
  /** Give up now; the job is kept as dead with this error. */
  | { dead: string }
  /**
   * Writes to commit in the same transaction as the job's finalisation (no network I/O; it may await its
   * stores); returns the final outcome (not another `writes`). Jobs that finish in the same event-loop turn
   * share one transaction (one fsync), and a handler's result and its job's fate commit together. It runs
   * in a unit of its own inside that transaction (a savepoint): a throw rolls back only this job's writes
   * and counts as a failed attempt.
   */
  | { writes: () => JobOutcome | Promise<JobOutcome> };

export type JobHandler<P = Record<string, unknown>> = (
  | { handle(job: Job<P>): Promise<JobOutcome>; inline?: never }
  | {
      /**
       * For a job that only writes to the database (no network I/O; it may await its stores): runs inside
       * the transaction that takes it (a nested db.unit), with the job's own delete / reschedule. No claim
       * UPDATE, no lease, no second transaction, and its effect and its removal commit together. Returns
       * the final outcome (not a `writes`); a throw rolls its writes back and counts as a failed attempt.
       */
      inline(job: Job<P>): JobOutcome | Promise<JobOutcome>;
      handle?: never;
    }
) &
  JobOptions<P>;

interface JobOptions<P> {
  /** Jobs of this type enqueued with `hold` are kept on their business rows, not in jobs rows (JobAnchor). */
  anchor?: JobAnchor<P>;
  /** Concurrent handlers of this type (default: config jobs.workers). */
  concurrency?: number;
  /**
   * Concurrent handlers per `groupKey` (jobs without a group are not limited). A group at its limit is
   * skipped by the claim, so its backlog never holds up other groups of the same type.
   */
  groupConcurrency?: number;
  /**
   * Its jobs' writes take no lock to keep other units out (no read-then-write that relies on being alone; rows
   * others wait for go through db.atEnd), so on PostgreSQL they may share one transaction with other units: a
   * handled job's outcome commits in a shared unit (db.unit's `shared`), an inline run's jobs go side by side
   * (their statements pipelined). Where several jobs change one row, each change must hold as a guarded write
   * (a status moved only from the status read) or an addition.
   */
  shareable?: boolean;
  /** Attempts before the job is dead (default: config jobs.max_attempts). */
  maxAttempts?: number;
  /** Delay before attempt n+1 after n failed attempts (default: exponential from 1 s, cap 1 h, ±20 % jitter). */
  backoffMs?: (attempts: number) => number;
}

/**
 * A type's jobs kept on the business rows they are about (queued messages) instead of in jobs rows: the
 * row the enqueuing transaction writes anyway carries the job (`hold`) — due, or held by a worker under a
 * lease — so a job that succeeds at its first attempt writes no jobs row at all: neither its insert nor its
 * claim nor its delete, nor their index entries. Only a first attempt lives on the row: a counted retry, a
 * dead job and a hold whose lease expired (its process died) become ordinary jobs rows at that moment, each
 * only while the hold's token still holds the row (the fence a jobs row's `lease_token` is). Contract: a
 * successful attempt takes the row out of its anchor itself (the dispatch moves its message off `queued`),
 * so the queue writes nothing then. For types with a per-group limit (groups are the rows' own groups).
 * Its methods answer promises (the asynchronous store contract); the queue awaits every answer.
 */
export interface JobAnchor<P = Record<string, unknown>> {
  /** Holds up to `limit` rows of `group` due by `now` that no worker holds: under `token`, until `until`. */
  claim(group: string, now: number, limit: number, token: string, until: number): Promise<P[]>;
  /** Every group with rows on the anchor; `first`: the earliest due time of its rows not held (null: none). */
  groups(): Promise<{ groupKey: string; first: number | null }[]>;
  /** Moves a hold's lease on to `until`; false when `token` no longer holds the row. */
  renew(payload: P, token: string, until: number): Promise<boolean>;
  /**
   * Ends a hold while `token` still has the row (else false): back to due at `at` on the row, or off the
   * anchor (`at` null: a jobs row takes the job over).
   */
  release(payload: P, token: string, at: number | null): Promise<boolean>;
  /** Held rows of `group` whose lease expired before `before`, at most `limit` (PostgreSQL: not locked ones). */
  expired(group: string, before: number, limit: number): Promise<{ payload: P; token: string }[]>;
  /** Rows on the anchor now (every process's): due or waiting, and held. */
  count(): Promise<{ pending: number; running: number }>;
}

export interface EnqueueInput<T extends string = string, P = unknown> {
  type: T;
  payload: P;
  runAt?: Date;
  maxAttempts?: number;
  groupKey?: string;
  /**
   * For a type with an `anchor`: the job is kept on the caller's business row, written after enqueue returns
   * (no jobs row): `until` is when it is due, or — `token` set — when the hold of the worker it was handed
   * over to expires. Needs `groupKey`.
   */
  hold?: (lease: { token: string | null; until: number }) => void;
}

/** `M`: job type → its payload type. */
export interface Queue<M = UntypedJobs> {
  /** Inserts a job; call inside the business unit of work (db.unit). Returns the job id. */
  enqueueJob<K extends keyof M & string>(input: EnqueueInput<K, M[K]>): Promise<string>;
  /** The handler of a type's jobs (one per type). */
  register<K extends keyof M & string>(type: K, handler: JobHandler<M[K]>): void;
  start(): void;
  /** Stops claiming, waits for running handlers up to `timeoutMs`, releases the leases of unfinished ones. */
  stop(timeoutMs?: number): Promise<void>;
  /**
   * Deletes a job that has not started (pending); call inside the business transaction. Returns false when
   * it is running, dead or gone — a handler must still tolerate running for a change that was undone.
   */
  cancelJob(id: string): Promise<boolean>;
  /** Wake the loop now (enqueue does this; useful after bulk inserts by raw SQL). */
  nudge(): void;
  /**
   * Gives back every job still marked running (their process is gone) so they run at once instead of after
   * their lease expires; returns how many. NB! Only for the one job runner of a database, before it starts.
   */
  releaseOrphans(): Promise<number>;
  /** Runs every due job to completion (tests and benchmarks drive the loop synchronously with this). */
  drain(opts?: { timeoutMs?: number }): Promise<number>;
  listJobs(opts: { dead?: boolean; type?: string; limit?: number }): Promise<JobRow[]>;
  /** A dead job pending again, due now; false when there is no such dead job. */
  retryJob(id: string): Promise<boolean>;
  stats(): Promise<Record<string, { pending: number; running: number; dead: number }>>;
  /** Per type, how long the oldest due pending job has waited (ms): a growing age means the loop is behind. */
  oldestDueAgeMs(): Promise<Record<string, number>>;
}

export interface JobRow {
  id: string;
  type: string;
  status: string;
  attempts: number;
  maxAttempts: number;
  runAt: string;
  lastError: string | null;
  payload: Record<string, unknown>;
  createdAt: string;
}
