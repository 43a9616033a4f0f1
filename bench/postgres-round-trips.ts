/**
 * Statements and round trips per accepted POST /messages on PostgreSQL, counted in process (issue 18):
 * the real app (`app.handle`, no socket) on a fresh database of a throwaway cluster, the same request as
 * bench/postgres.bench.ts, counted on the instance's PgConnection. Run:
 * `./node_modules/.bin/bun bench/postgres-round-trips.ts [--messages 200] [--concurrent 50] [--list]`.
 *
 * Three shapes: one request at a time (each its own transaction: the worst case); `--concurrent` requests
 * in flight (group commit: one transaction for the requests of one event-loop turn, as under load); and the
 * same followed by the queue's drain, which dispatches them (what the server also does under the HTTP bench).
 * `--list` prints each statement text of one sequential send, with how often it ran.
 */
import { parseArgs } from "node:util";
import type { PgConnection } from "../src/db/postgres/libpq";
import { postgresAvailable, POSTGRES_SKIP_REASON } from "../test/helpers/postgres";

const { values } = parseArgs({
  options: {
    messages: { type: "string", default: "200" },
    concurrent: { type: "string", default: "50" },
    list: { type: "boolean", default: false },
  },
});
if (!postgresAvailable()) throw new Error(POSTGRES_SKIP_REASON);
process.env.SWITCHBOARD_TEST_ENGINE = "postgres";
const { createTestApp } = await import("../test/helpers/test-app");

const N = Number(values.messages);
const CONCURRENT = Number(values.concurrent);
const app = await createTestApp({ balance: "1000000.000000", recordEvents: false });
const conn = (app.deps.db.$client as unknown as { pg: PgConnection }).pg;
const body = { channel: "whatsapp", to: { phone: "+14155550100" }, type: "template", template: { name: "hello_world", params: { "body.1": "Ann" } } };
// The bench's key: a rate limit no run reaches (as `keys create --rate-limit 10000000`).
const { key } = await app.newKey({ name: "bench", rateLimit: 10_000_000 });
const send = async () => {
  const r = await app.request("POST", "/messages", { body, key });
  if (r.status !== 202) throw new Error(`POST /messages: ${r.status} ${JSON.stringify(r.body)}`);
};

for (let i = 0; i < 20; i++) await send(); // warm: statements prepared, caches filled

let commits = 0;
const countCommits = (text: string) => void (text === "COMMIT" && commits++);
const measure = async (label: string, run: () => Promise<void>) => {
  const before = { ...conn.counts };
  const commitsBefore = commits;
  conn.onStatement = countCommits;
  const t0 = performance.now();
  await run();
  const ms = performance.now() - t0;
  const statements = (conn.counts.statements - before.statements) / N;
  const roundTrips = (conn.counts.roundTrips - before.roundTrips) / N;
  conn.onStatement = null;
  console.log(
    `${label.padEnd(34)}: ${statements.toFixed(2)} statements, ${roundTrips.toFixed(2)} round trips, ${((commits - commitsBefore) / N).toFixed(2)} commits per accepted message (${(N / (ms / 1000)).toFixed(0)} msg/s in process)`,
  );
};

await measure("one request at a time", async () => {
  for (let i = 0; i < N; i++) await send();
});
await measure(`${CONCURRENT} requests in flight`, async () => {
  for (let done = 0; done < N; done += CONCURRENT) await Promise.all(Array.from({ length: Math.min(CONCURRENT, N - done) }, send));
});

// What the HTTP bench's server also does per message: dispatch it (the sandbox answers at once), on the
// same connection. Counted over sending and draining the queue.
await measure(`${CONCURRENT} in flight, then dispatched`, async () => {
  for (let done = 0; done < N; done += CONCURRENT) await Promise.all(Array.from({ length: Math.min(CONCURRENT, N - done) }, send));
  await app.deps.queue.drain();
});

if (values.list) {
  const seen = new Map<string, number>();
  conn.onStatement = (text) => seen.set(text, (seen.get(text) ?? 0) + 1);
  const before = conn.counts.roundTrips;
  await send();
  console.log(`\none request: ${conn.counts.roundTrips - before} round trips`);
  const print = () => {
    for (const [text, n] of seen) console.log(`${String(n).padStart(3)}  ${text.replace(/\s+/g, " ").slice(0, 160)}`);
    seen.clear();
  };
  print();
  const beforeDispatch = conn.counts.roundTrips;
  await app.deps.queue.drain();
  conn.onStatement = null;
  console.log(`\nits dispatch: ${conn.counts.roundTrips - beforeDispatch} round trips`);
  print();
}
await app.close();
process.exit(0);
