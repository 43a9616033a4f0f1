/**
 * Foundation benchmark (issue 2). Run: `make build && npx bun bench/foundation.bench.ts [--seconds 10]`.
 * - GET /api/public/v1/me through the whole stack of the compiled appliance (request id, auth lookup,
 *   rate limit, scope, company + balance reads, access log at info) vs a bare Elysia `GET /hello` in a
 *   separate Bun process, same run, same load: autocannon, 50 connections, loopback.
 * - Time from exec to the first /healthz 200 (median of 5), idle RSS, binary size.
 */
import { statSync } from "node:fs";
import { parseArgs } from "node:util";
import { appliance, autocannon, baselineServer, BINARY, fmt, rssMb } from "./lib";

const { values } = parseArgs({ options: { seconds: { type: "string", default: "10" }, connections: { type: "string", default: "50" } } });
const seconds = Number(values.seconds);
const connections = Number(values.connections);

const bare = await baselineServer(`
process.env.NODE_ENV = "production";
import { Elysia } from "__ROOT__/node_modules/elysia";
new Elysia().get("/healthz", () => "ok").get("/hello", () => ({ data: { hello: "world" } })).listen({ port: __PORT__, hostname: "127.0.0.1" });
`);
// Default log level (info): one access line per request, as operators run it (stdout discarded).
const sb = await appliance({ SWITCHBOARD_LOG_LEVEL: "info" });
try {
  // Warm up both, then measure alternately.
  await autocannon({ url: `${bare.url}/hello`, seconds: 2, connections });
  await autocannon({ url: `${sb.url}/api/public/v1/me`, seconds: 2, connections, headers: { authorization: `Bearer ${sb.key}` } });
  const base = await autocannon({ url: `${bare.url}/hello`, seconds, connections });
  const me = await autocannon({ url: `${sb.url}/api/public/v1/me`, seconds, connections, headers: { authorization: `Bearer ${sb.key}` } });
  if (me.non2xx) console.warn(`warning: ${me.non2xx} non-2xx responses from /me (rate limit?)`);
  console.log(`bare Elysia GET /hello : ${fmt(base.rps)} req/s  p50 ${base.p50} ms  p99 ${base.p99} ms`);
  console.log(`GET /me, full stack    : ${fmt(me.rps)} req/s  p50 ${me.p50} ms  p99 ${me.p99} ms`);
  console.log(`ratio /me ÷ bare       : ${fmt(me.rps / base.rps, 2)} (target ≥ 0.75)`);
} finally {
  bare.stop();
  await sb.stop();
}

const starts: number[] = [];
let rss = 0;
for (let i = 0; i < 5; i++) {
  const a = await appliance();
  starts.push(a.startMs);
  if (i === 0) {
    await Bun.sleep(1000);
    rss = rssMb(a.pid);
  }
  await a.stop();
}
starts.sort((a, b) => a - b);
console.log(`exec → first /healthz 200: median ${fmt(starts[2]!, 0)} ms (min ${fmt(starts[0]!, 0)}, max ${fmt(starts[4]!, 0)})`);
console.log(`idle RSS after 1 s: ${fmt(rss, 0)} MB`);
console.log(`binary size: ${fmt(statSync(BINARY).size / 1024 / 1024, 1)} MB`);
