/**
 * The compiled binary on PostgreSQL when the database misbehaves (DESIGN §15, issue 35 item 4). Its statements
 * never block the event loop, so:
 * - a lock held by another session delays only the requests that need the locked rows: `/healthz` and an
 *   unrelated read answer at once meanwhile, and the waiting sends are accepted once the lock is gone;
 * - a database that drops off the network (a proxy that stops forwarding: the connections stay open and
 *   silent) turns writes into 503 STORAGE_UNAVAILABLE with Retry-After within the configured timeouts,
 *   `/readyz` into 503, and `/healthz` stays 200 at once; when the network is back the instance serves again
 *   by itself;
 * - a database that refuses connections (stopped; here: the proxy gone) is the same, and so is its return.
 * Nothing answered 202 is lost: every accepted message is in the table at the end.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { SQL, spawn, type Subprocess } from "bun";
import { run, serve, tempDir, type RunningServer } from "../e2e/binary";
import { freePort, freshPostgresDatabase, postgresAvailable } from "../helpers/postgres";

const available = postgresAvailable();
const PROXY = join(import.meta.dir, "../fakes/latency-proxy.mjs");
let dir: string;
let sql: SQL;
let key: string;
let server: RunningServer;
let proxy: Subprocess;
let proxyPort: number;
let target: string;
const accepted = new Set<string>();

async function startProxy() {
  proxy = spawn([process.execPath, PROXY, "--listen", `127.0.0.1:${proxyPort}`, "--to", target, "--delay-ms", "0"], { stdout: "pipe", stderr: "inherit" });
  const reader = (proxy.stdout as ReadableStream<Uint8Array>).getReader();
  await reader.read(); // "ready"
  reader.releaseLock();
}

beforeAll(async () => {
  if (!available) return;
  dir = tempDir("sb-pgfault-");
  const url = await freshPostgresDatabase("sb_fault");
  target = new URL(url).host;
  proxyPort = await freePort();
  await startProxy();
  const far = new URL(url);
  far.port = String(proxyPort);
  const path = join(dir, "switchboard.toml");
  writeFileSync(
    path,
    `[storage]\ndata_dir = "${join(dir, "data")}"\ndriver = "postgres"\nurl = "${far}"\npool_size = 6\nconnect_timeout_ms = 1000\nstatement_timeout_ms = 1500\n
[rate_limit]\nrequests_per_second = 100000\nburst = 100000\n
[[channels]]\nid = "0193a4b2-0000-7000-8000-000000000001"\ncompany = "default"\nchannel = "whatsapp"\nprovider = "sandbox"\nname = "WhatsApp (sandbox)"\ndefault = true\n`,
  );
  expect(run(["migrate", "--config", path]).code).toBe(0);
  expect(run(["companies", "create", "--slug", "default", "--name", "Default", "--config", path]).code).toBe(0);
  key = JSON.parse(run(["keys", "create", "--company", "default", "--name", "faults", "--json", "--config", path]).stdout).key;
  expect(run(["balance", "credit", "--company", "default", "--amount", "100.000000", "--config", path]).code).toBe(0);
  server = await serve(path);
  sql = new SQL(url, { max: 2 }); // straight to the database, past the proxy
});
afterAll(async () => {
  await server?.stop();
  proxy?.kill();
  await sql?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

let n = 0;
async function send(): Promise<{ status: number; ms: number; body: any; retryAfter: string | null }> {
  const started = performance.now();
  const r = await fetch(`${server.url}/api/public/v1/messages`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    // (A template: a text needs the contact to have written first.)
    body: JSON.stringify({
      channel: "whatsapp",
      to: { phone: `+1415555${String(1000 + (n++ % 9000))}` },
      type: "template",
      template: { name: "hello_world", params: { "body.1": "Ann" } },
    }),
  });
  const body = (await r.json()) as any;
  if (r.status === 202) accepted.add(body.id ?? body.data?.id);
  return { status: r.status, ms: performance.now() - started, body, retryAfter: r.headers.get("retry-after") };
}
async function timed(path: string, auth = false): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  const r = await fetch(`${server.url}${path}`, auth ? { headers: { authorization: `Bearer ${key}` } } : {});
  await r.arrayBuffer();
  return { status: r.status, ms: performance.now() - started };
}

test.skipIf(!available)("a lock held elsewhere delays only the sends that need it: /healthz and an unrelated read answer at once", async () => {
  expect((await send()).status).toBe(202); // warm: the contact, its conversation, the caches
  const locker = await sql.reserve();
  await locker`BEGIN`;
  await locker`LOCK TABLE messages IN ACCESS EXCLUSIVE MODE`;
  const waiting = Array.from({ length: 5 }, () => send());
  await Bun.sleep(100);
  const health = await timed("/healthz");
  const contacts = await timed("/api/public/v1/contacts?limit=1", true);
  await Bun.sleep(400);
  await locker`COMMIT`;
  locker.release();
  const sends = await Promise.all(waiting);
  expect(health).toMatchObject({ status: 200 });
  expect(health.ms).toBeLessThan(100);
  expect(contacts).toMatchObject({ status: 200 });
  expect(contacts.ms).toBeLessThan(100);
  expect(sends.map((s) => s.status)).toEqual([202, 202, 202, 202, 202]);
  expect(Math.min(...sends.map((s) => s.ms))).toBeGreaterThan(400); // they did wait for the lock
});

test.skipIf(!available)("the database black-holed: 503 with Retry-After within the timeouts, /readyz 503, /healthz at once; back by itself", async () => {
  proxy.kill("SIGUSR1");
  const during = await Promise.all(Array.from({ length: 4 }, () => send()));
  for (const s of during) {
    expect(s.status).toBe(503);
    expect(s.body.error.code).toBe("STORAGE_UNAVAILABLE");
    expect(Number(s.retryAfter)).toBeGreaterThan(0);
    expect(s.ms).toBeLessThan(1500 + 1000 + 1500); // statement timeout + margin (+ slack for a loaded machine)
  }
  const health = await timed("/healthz");
  expect(health.status).toBe(200);
  expect(health.ms).toBeLessThan(100);
  const ready = await timed("/readyz");
  expect(ready.status).toBe(503);
  expect(ready.ms).toBeLessThan(2000 + 1000); // its own 2 s, not the pool's deadline (+ slack)
  proxy.kill("SIGUSR2");
  let back = 0;
  for (const end = Date.now() + 15_000; Date.now() < end && !back; await Bun.sleep(100)) if ((await send()).status === 202) back = 1;
  expect(back).toBe(1);
  expect((await timed("/readyz")).status).toBe(200);
});

test.skipIf(!available)("the database refusing connections (stopped), then back: 503 meanwhile, then the instance serves again", async () => {
  proxy.kill("SIGKILL"); // every connection reset, and nothing listens: refused
  await proxy.exited;
  const during = await send();
  expect(during.status).toBe(503);
  expect(during.body.error.code).toBe("STORAGE_UNAVAILABLE");
  expect((await timed("/healthz")).status).toBe(200);
  await startProxy();
  let back = 0;
  for (const end = Date.now() + 15_000; Date.now() < end && !back; await Bun.sleep(100)) if ((await send()).status === 202) back = 1;
  expect(back).toBe(1);
  // Nothing answered 202 was lost.
  const stored = new Set((await sql`SELECT id FROM messages WHERE direction = 'outbound'`).map((r: { id: string }) => r.id));
  for (const id of accepted) expect(stored.has(id)).toBe(true);
});
