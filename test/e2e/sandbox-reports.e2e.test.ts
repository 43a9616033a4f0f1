/**
 * The sandbox's delivered/read reports are durable (jobs), like a real provider that keeps calling back: a
 * burst sent, then the binary killed with kill -9 (and, separately, stopped cleanly) before the reports were
 * due — after the restart every message reaches `read`. Before, the reports lived on in-memory timers and
 * every message sent before a restart stayed `sent` for ever.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { run, serve, tempDir, type RunningServer } from "./binary";

let dir: string;
let init: { configPath: string; dataDir: string; apiKey: string };
let server: RunningServer;
const ACME_WA = "0193a4b2-0000-7000-8000-00000000ac01";

const statuses = () => {
  const db = new Database(join(init.dataDir, "switchboard.db"), { readonly: true });
  try {
    return Object.fromEntries(
      (db.query("SELECT status, count(*) AS n FROM messages WHERE direction = 'outbound' GROUP BY status").all() as { status: string; n: number }[]).map(
        (r) => [r.status, r.n],
      ),
    );
  } finally {
    db.close();
  }
};

async function until<T>(what: string, fn: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(statuses())}\n${server?.output().slice(-2000)}`);
    await Bun.sleep(50);
  }
}

async function burst(n: number, offset: number) {
  const body = (i: number) =>
    JSON.stringify({
      channel: "whatsapp",
      to: { phone: `+1415${String(3_000_000 + offset + i).padStart(7, "0")}` },
      type: "template",
      template: { name: "hello_world", params: { "body.1": "Ann" } },
    });
  const res = await Promise.all(
    Array.from({ length: n }, (_, i) =>
      fetch(`${server.url}/api/public/v1/messages`, {
        method: "POST",
        headers: { authorization: `Bearer ${init.apiKey}`, "content-type": "application/json" },
        body: body(i),
      }),
    ),
  );
  expect(res.every((r) => r.status === 202)).toBe(true);
}

beforeAll(async () => {
  dir = tempDir();
  init = JSON.parse(run(["init", "--dir", dir, "--json"]).stdout);
  // The WhatsApp sandbox reports delivered 3 s after sent: the restart comes before any report is due.
  // A sandbox account of company "acme", which does not exist yet.
  const toml = (
    readFileSync(init.configPath, "utf8") +
    `\n[[channels]]\nid = "${ACME_WA}"\ncompany = "acme"\nchannel = "whatsapp"\nprovider = "sandbox"\nname = "Acme WhatsApp"\ndefault = true\n`
  ).replace(/(name = "WhatsApp \(sandbox\)"\ndefault = true\n)/, "$1[channels.settings]\nsent_after_ms = 0\ndelivered_after_ms = 3000\nread_after_ms = 200\n");
  expect(toml).toContain("delivered_after_ms = 3000");
  writeFileSync(init.configPath, toml);
  server = await serve(init.configPath);
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

for (const [how, signal] of [
  ["kill -9", "SIGKILL"],
  ["a clean stop", "SIGTERM"],
] as const)
  test(`${how} before the reports are due: after the restart every message is read`, async () => {
    const before = Object.values(statuses()).reduce((a, b) => a + b, 0);
    await burst(150, before);
    await until("all sent", () => (statuses().sent ?? 0) === 150 || undefined);
    expect(statuses().delivered ?? 0).toBe(0);
    await server.stop(signal);
    server = await serve(init.configPath);
    const done = await until("all read", () => {
      const s = statuses();
      return s.read === before + 150 ? s : undefined;
    });
    expect(done).toEqual({ read: before + 150 });
  });

test("a company created while the appliance runs: its sandbox account has hello_world at once", async () => {
  const cfg = ["--config", init.configPath];
  expect(run(["companies", "create", "--slug", "acme", "--name", "Acme", "--balance", "5", ...cfg]).code).toBe(0);
  const key = JSON.parse(run(["keys", "create", "--company", "acme", "--name", "acme", "--json", ...cfg]).stdout).key;
  const res = await fetch(`${server.url}/api/public/v1/templates?channel=whatsapp`, { headers: { authorization: `Bearer ${key}` } });
  const names = ((await res.json()) as { data: { name: string; channelAccountId: string }[] }).data.map((t) => [t.name, t.channelAccountId]);
  expect(names).toEqual([["hello_world", ACME_WA]]);
});
