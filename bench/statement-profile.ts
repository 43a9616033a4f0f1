/**
 * Statement profile: preload it to time every SQLite statement by its text, printed at exit (most total time
 * first). `STMT_PER=<n>` divides the totals by n (e.g. the accepted messages) for a "µs per message" column.
 *   bun --preload ./bench/statement-profile.ts bench/send-path.bench.ts --messages 20000   (STMT_PER=40000)
 *   bun --preload ./bench/statement-profile.ts src/main.ts serve --config …               (under a load)
 * Wall time of each call on the calling thread (a COMMIT includes its WAL writes); adds ~1 µs per call.
 */
import { Database } from "bun:sqlite";

const stats = new Map<string, { calls: number; us: number; slow: number; slowUs: number }>();
/** A call above this is counted apart (a collection pause or a lock wait lands in whichever statement runs). */
const SLOW_US = 1000;
type Statement = ReturnType<Database["prepare"]> & { __timed?: true };

function timed(sql: string, st: Statement): Statement {
  if (st.__timed) return st;
  for (const m of ["run", "get", "all", "values"] as const) {
    const call = (st[m] as (...a: unknown[]) => unknown).bind(st);
    (st as unknown as Record<string, unknown>)[m] = (...a: unknown[]) => {
      const t0 = performance.now();
      try {
        return call(...a);
      } finally {
        const s = stats.get(sql) ?? { calls: 0, us: 0, slow: 0, slowUs: 0 };
        const us = (performance.now() - t0) * 1000;
        s.calls++;
        s.us += us;
        if (us > SLOW_US) {
          s.slow++;
          s.slowUs += us;
        }
        stats.set(sql, s);
      }
    };
  }
  st.__timed = true;
  return st;
}

const query = Database.prototype.query;
const prepare = Database.prototype.prepare;
Database.prototype.query = function (this: Database, sql: string) {
  return timed(sql, query.call(this, sql) as Statement);
} as Database["query"];
Database.prototype.prepare = function (this: Database, sql: string, ...rest: unknown[]) {
  return timed(sql, (prepare as (...a: unknown[]) => Statement).call(this, sql, ...rest));
} as Database["prepare"];

process.on("exit", () => {
  const per = Number(process.env.STMT_PER ?? 0);
  const rows = [...stats].sort((a, b) => b[1].us - a[1].us).slice(0, 40);
  // "slow": calls above 1 ms and their share of the total; "µs/call" counts the others alone.
  console.error(`${per ? "µs per unit  " : ""}     calls   µs/call   slow (% of time)  statement`);
  for (const [sql, s] of rows) {
    const typical = s.calls > s.slow ? (s.us - s.slowUs) / (s.calls - s.slow) : 0;
    const slow = `${s.slow} (${((s.slowUs / s.us) * 100).toFixed(0)} %)`;
    console.error(
      `${per ? `${(s.us / per).toFixed(2).padStart(10)}  ` : ""}${String(s.calls).padStart(10)}  ${typical.toFixed(2).padStart(8)}  ${slow.padStart(16)}  ${sql.replace(/\s+/g, " ").slice(0, 140)}`,
    );
  }
});
