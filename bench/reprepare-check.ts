/**
 * Which statements SQLite prepares again on every call. Preload it into `serve` under a load; at SIGTERM it
 * runs each of the 60 most called statements again, 2,000 times with the arguments of its first call and
 * 2,000 times without binding them anew, inside a savepoint it rolls back, and prints both µs per call.
 *   bun --preload ./bench/reprepare-check.ts src/main.ts serve --config …   (e.g. as SWITCHBOARD_BENCH_BINARY)
 * A statement whose plan depends on a bound value (a `LIMIT ?`, an `=` on the index column that orders it, a
 * value compared with a partial index's condition) is prepared again whenever it is bound: it shows a few µs
 * or more per call with arguments and not without ("REPREPARE"). The fix: `unplanned()` (src/db/dialect.ts).
 * A write that fails when run again (an INSERT of the same key) prints its error instead.
 */
import { Database } from "bun:sqlite";

type Statement = ReturnType<Database["prepare"]> & { __seen?: true };
type Method = "run" | "get" | "all" | "values";
const seen = new Map<string, { db: Database; args: unknown[]; calls: number; method: Method }>();

function watch(db: Database, sql: string, st: Statement): Statement {
  if (st.__seen) return st;
  for (const m of ["run", "get", "all", "values"] as const) {
    const call = (st[m] as (...a: unknown[]) => unknown).bind(st);
    (st as unknown as Record<string, unknown>)[m] = (...a: unknown[]) => {
      const s = seen.get(sql);
      if (s) s.calls++;
      else if (a.length) seen.set(sql, { db, args: a, calls: 1, method: m });
      return call(...a);
    };
  }
  st.__seen = true;
  return st;
}

const query = Database.prototype.query;
const prepare = Database.prototype.prepare;
Database.prototype.query = function (this: Database, sql: string) {
  return watch(this, sql, query.call(this, sql) as Statement);
} as Database["query"];
Database.prototype.prepare = function (this: Database, sql: string, ...rest: unknown[]) {
  return watch(this, sql, (prepare as (...a: unknown[]) => Statement).call(this, sql, ...rest));
} as Database["prepare"];

process.on("SIGTERM", () => {
  const N = 2000;
  const lines = ["   calls  µs bound  µs kept            statement"];
  for (const [sql, s] of [...seen].sort((a, b) => b[1].calls - a[1].calls).slice(0, 60)) {
    try {
      const st = (prepare as (...a: unknown[]) => Statement).call(s.db, sql) as unknown as Record<Method, (...a: unknown[]) => unknown>;
      s.db.exec("SAVEPOINT reprepare_check");
      try {
        st[s.method](...s.args);
        let t0 = performance.now();
        for (let i = 0; i < N; i++) st[s.method](...s.args);
        const bound = ((performance.now() - t0) * 1000) / N;
        t0 = performance.now();
        for (let i = 0; i < N; i++) st[s.method]();
        const kept = ((performance.now() - t0) * 1000) / N;
        const flag = bound - kept > 1 && bound > 2 * kept ? "REPREPARE" : "";
        lines.push(
          `${String(s.calls).padStart(8)} ${bound.toFixed(2).padStart(9)} ${kept.toFixed(2).padStart(8)} ${flag.padEnd(10)} ${sql.replace(/\s+/g, " ").slice(0, 150)}`,
        );
      } finally {
        s.db.exec("ROLLBACK TO reprepare_check; RELEASE reprepare_check");
      }
    } catch (e) {
      lines.push(`   error: ${String(e).slice(0, 70)} — ${sql.replace(/\s+/g, " ").slice(0, 80)}`);
    }
  }
  console.error(lines.join("\n"));
});
