/**
 * kill -9 of the compiled binary with webhook retries pending and in flight and a contact import half done;
 * then a restart. Requirement: every event reaches the receiver at least once, always with the same
 * `webhook-id` (the receiver dedupes by it: distinct ids = events), the import resumes where it stopped and
 * ends with exactly the right contacts, and no job is left leased. Figures printed.
 *
 * The receiver answers each event's first attempt `503` with `Retry-After: 1` (so the retry comes a second
 * later, not after the schedule's 5 s) and later ones `200` after 250 ms; the import starts once retries are
 * in flight, and the kill comes when it has 10,000 rows in: some attempts are then in flight, the rest waiting.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { appendFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { run, serve, tempDir, until as waitUntil, type RunningServer } from "../e2e/binary";

const EVENTS = 80;
const CONTACTS = 50_000;
let dir: string;
let init: { configPath: string; dataDir: string; apiKey: string };
let server: RunningServer;

/** What the receiver saw per webhook-id. */
const seen = new Map<string, { bodies: Set<string>; attempts: number; ok: number }>();
const receiver = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    const id = req.headers.get("webhook-id") ?? "";
    const body = await req.text();
    const s = seen.get(id) ?? { bodies: new Set<string>(), attempts: 0, ok: 0 };
    seen.set(id, s);
    s.bodies.add(body);
    s.attempts++;
    if (s.attempts === 1) return new Response("not yet", { status: 503, headers: { "retry-after": "1" } });
    await Bun.sleep(250);
    s.ok++;
    return new Response("ok");
  },
});

beforeAll(async () => {
  dir = tempDir("sb-kill9-");
  init = JSON.parse(run(["init", "--dir", dir, "--json"]).stdout);
  appendFileSync(init.configPath, '\n[rate_limit]\nrequests_per_second = 100000\nburst = 100000\n\n[log]\nlevel = "error"\n');
  server = await serve(init.configPath);
});
afterAll(async () => {
  await server?.stop();
  receiver.stop(true);
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function api(method: string, path: string, body?: string | object, contentType = "application/json") {
  const res = await fetch(`${server.url}/api/public/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${init.apiKey}`, ...(body === undefined ? {} : { "content-type": contentType }) },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

function sql<T = { n: number }>(query: string, ...params: string[]): T[] {
  const db = new Database(join(init.dataDir, "switchboard.db"), { readonly: true });
  try {
    return db.query(query).all(...params) as T[];
  } finally {
    db.close();
  }
}

const until = <T>(what: string, fn: () => Promise<T | undefined> | T | undefined) =>
  waitUntil(what, fn, { timeoutMs: 20_000, context: () => server.output().slice(-2000) });

test("kill -9 with webhook retries pending and in flight and an import half done: all delivered, same webhook-id, import exact, nothing leased", async () => {
  expect((await api("POST", "/webhooks", { url: `http://127.0.0.1:${receiver.port}/hook`, events: ["message.sent"] })).status).toBe(201);

  // Events: each send's message.sent. Their first attempts are refused with Retry-After: 1.
  const sends = await Promise.all(
    Array.from({ length: EVENTS }, (_, i) =>
      api("POST", "/messages", {
        channel: "whatsapp",
        to: { phone: `+1415${String(8_000_000 + i)}` },
        type: "template",
        template: { name: "hello_world", params: { "body.1": "Ann" } },
      }),
    ),
  );
  expect(sends.every((r) => r.status === 202)).toBe(true);
  await until("every first attempt refused", () => (seen.size >= EVENTS ? true : undefined));
  const before = sql("SELECT count(*) AS n FROM contacts")[0]!.n;

  const inFlight = () => [...seen.values()].filter((v) => v.attempts > 1 && v.ok === 0).length;
  await until("retries in flight", () => (inFlight() > 0 ? true : undefined));
  // The import starts while retries are in flight; the kill comes once it is well under way.
  const lines = Array.from({ length: CONTACTS }, (_, i) =>
    JSON.stringify({ firstName: `K${i}`, identities: [{ channel: "email", value: `k${i}@example.com` }], tags: ["kill9"] }),
  ).join("\n");
  const imp = await api("POST", "/contacts/import", lines, "application/x-ndjson");
  expect(imp.status).toBe(202);
  const importId = imp.body.data.id as string;
  const atKill = await until("the import under way and retries in flight", async () => {
    const s = (await api("GET", `/contacts/imports/${importId}`)).body.data;
    const delivered = [...seen.values()].filter((v) => v.ok > 0).length;
    const flying = inFlight();
    return s.status === "running" && s.processed >= 10_000 && flying > 0 ? { processed: s.processed as number, delivered, inFlight: flying } : undefined;
  });
  server.proc.kill("SIGKILL");
  await server.proc.exited;
  const leasedAtKill = sql<{ type: string; n: number }>("SELECT type, count(*) AS n FROM jobs WHERE status = 'running' GROUP BY type");
  const pendingAtKill = sql("SELECT count(*) AS n FROM jobs WHERE type = 'webhook.deliver' AND status = 'pending'")[0]!.n;

  const restarted = performance.now();
  server = await serve(init.configPath);
  const done = await until("the import completed after the restart", async () => {
    const s = (await api("GET", `/contacts/imports/${importId}`)).body.data;
    return s.status === "completed" ? s : undefined;
  });
  const events = sql<{ id: string }>("SELECT id FROM webhook_messages WHERE event_type = 'message.sent'").map((r) => r.id);
  await until("every event delivered", () => (events.every((id) => (seen.get(id)?.ok ?? 0) > 0) ? true : undefined));
  const recoveredMs = performance.now() - restarted;
  await until("no job left", () =>
    sql("SELECT count(*) AS n FROM jobs WHERE type IN ('webhook.deliver', 'webhook.fanout', 'contacts.import') OR status = 'running'")[0]!.n === 0
      ? true
      : undefined,
  );

  // Webhooks: at least once, one id per event and one body per id; the receiver's dedupe leaves exactly the events.
  expect(events).toHaveLength(EVENTS);
  expect(new Set([...seen.keys()])).toEqual(new Set(events));
  for (const [, s] of seen) expect(s.bodies.size).toBe(1);
  const bodies = new Map<string, string>();
  for (const [id, s] of seen) bodies.set([...s.bodies][0]!, id);
  expect(bodies.size).toBe(EVENTS);
  const twice = [...seen.values()].filter((s) => s.ok > 1).length;

  // Import: resumed, exact.
  expect(done).toMatchObject({ processed: CONTACTS, created: CONTACTS, failed: 0 });
  expect(sql("SELECT count(*) AS n FROM contacts")[0]!.n - before).toBe(CONTACTS);
  expect(
    sql(
      "SELECT count(*) AS n FROM (SELECT value FROM contact_identities WHERE channel = 'email' AND value LIKE 'k%@example.com' GROUP BY value HAVING count(*) > 1)",
    )[0]!.n,
  ).toBe(0);
  expect(sql("SELECT count(*) AS n FROM jobs WHERE status = 'running'")[0]!.n).toBe(0);

  console.log(
    `kill -9 (binary): at the kill the import had ${atKill.processed} of ${CONTACTS} rows, ${atKill.delivered} of ${EVENTS} events delivered and ${atKill.inFlight} attempts in flight, ${pendingAtKill} webhook retries pending, jobs leased ${JSON.stringify(Object.fromEntries(leasedAtKill.map((r) => [r.type, r.n])))}; ` +
      `after the restart (${Math.round(recoveredMs)} ms): import completed with ${done.created} contacts (${CONTACTS} expected, 0 duplicates), ${EVENTS} of ${EVENTS} events delivered, ` +
      `${[...seen.values()].reduce((a, s) => a + s.attempts, 0)} requests, ${twice} event(s) delivered twice (in flight at the kill; deduped by webhook-id), distinct webhook-ids ${seen.size} = events; no job leased`,
  );
}, 60_000);
