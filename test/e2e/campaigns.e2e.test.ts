/**
 * Campaigns through the compiled binary on sandbox accounts: one campaign end to end, and a kill -9 in the
 * middle of a 6,000-recipient fan-out — after the restart every sendable recipient has exactly one message,
 * none has two, and the ledger holds exactly one debit per charged message.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { run, serve, tempDir, type RunningServer } from "./binary";

let dir: string;
let init: { configPath: string; dataDir: string; apiKey: string };
let server: RunningServer & { startMs: number };

async function api(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}/api/public/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${init.apiKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
    body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as any };
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/** Imports `n` opted-in WhatsApp contacts tagged `tag` (NDJSON bulk import) and waits for it. */
async function importContacts(tag: string, n: number, offset = 0) {
  const lines = Array.from({ length: n }, (_, i) =>
    JSON.stringify({
      firstName: `C${i}`,
      identities: [{ channel: "whatsapp", value: `+1415${String(2_000_000 + offset + i).padStart(7, "0")}` }],
      tags: [tag],
      optIn: true,
    }),
  );
  const res = await api("POST", "/contacts/import", lines.join("\n"), { "content-type": "application/x-ndjson" });
  expect(res.status).toBe(202);
  await until("the import", async () => {
    const r = await api("GET", `/contacts/imports/${res.body.data.id}`);
    return r.body.data.status === "completed" ? r.body.data : undefined;
  });
}

beforeAll(async () => {
  dir = tempDir();
  const r = run(["init", "--dir", dir, "--json"]);
  expect(r.code).toBe(0);
  init = JSON.parse(r.stdout);
  server = await serve(init.configPath);
});
afterAll(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe("campaigns on the binary", () => {
  let templateId: string;
  beforeAll(async () => {
    const t = await api("GET", "/templates?channel=whatsapp");
    templateId = t.body.data.find((x: { name: string }) => x.name === "hello_world").id;
  });

  test("estimate, create, run to completed; the funnel moves with the sandbox's reports", async () => {
    await importContacts("e2e", 50);
    const body = { templateId, audience: { type: "tags", tags: ["e2e"], match: "any" }, askValues: { "body.1": '{{contact.firstName | "friend"}}' } };
    const est = await api("POST", "/campaigns/estimate", body);
    expect(est.body.data).toMatchObject({
      channel: "whatsapp",
      matched: 50,
      sendable: 50,
      unitPrice: "0.050000",
      estimatedCost: { amount: "2.500000", unit: "USD" },
      sufficientBalance: true,
    });
    const c = await api("POST", "/campaigns", { name: "e2e", ...body });
    expect(c.status).toBe(201);
    const done = await until("completed", async () => {
      const r = await api("GET", `/campaigns/${c.body.data.id}`);
      return r.body.data.status === "completed" ? r.body.data : undefined;
    });
    expect(done.stats.pending).toBe(0);
    expect(done.stats.sent + done.stats.delivered + done.stats.read).toBe(50);
    expect(done.cost.spent).toEqual({ amount: "2.500000", unit: "USD" });
    // The embedded default sandbox reports delivered and read shortly after: the funnel follows.
    const read = await until("read reports", async () => {
      const r = await api("GET", `/campaigns/${c.body.data.id}`);
      return r.body.data.stats.read === 50 ? r.body.data : undefined;
    });
    expect(read.stats).toMatchObject({ sent: 0, delivered: 0, read: 50 });
    const rs = await api("GET", `/campaigns/${c.body.data.id}/recipients?status=read&limit=5`);
    expect(rs.body.data.length).toBe(5);
    expect(rs.body.page.nextCursor).not.toBeNull();
  });

  test("kill -9 during a 6,000-recipient fan-out: after a restart every recipient has exactly one message", async () => {
    await importContacts("crash", 6000, 100_000);
    expect(run(["balance", "credit", "--company", "default", "--amount", "500.000000", "--config", init.configPath]).code).toBe(0); // 6,000 × 0.05
    const c = await api("POST", "/campaigns", { name: "crash", templateId, audience: { type: "tags", tags: ["crash"] }, askValues: { "body.1": "Sale" } });
    expect(c.status).toBe(201);
    const id = c.body.data.id;
    const at = await until(
      "the fan-out under way",
      async () => {
        const r = await api("GET", `/campaigns/${id}`);
        const s = r.body.data.stats;
        const out = s.sent + s.delivered + s.read;
        return out >= 300 ? out : undefined;
      },
      120_000,
    );
    server.proc.kill("SIGKILL");
    await server.proc.exited;
    server = await serve(init.configPath);
    const done = await until(
      "completed after the restart",
      async () => {
        const r = await api("GET", `/campaigns/${id}`);
        return r.body.data.status === "completed" ? r.body.data : undefined;
      },
      240_000,
    );
    expect(at).toBeLessThan(6000); // it really was killed mid-way
    expect(done.stats.matched).toBe(6000);
    expect(done.stats.pending).toBe(0);
    expect(done.stats.sent + done.stats.delivered + done.stats.read + done.stats.failed).toBe(6000);
    // The sandbox's delivered/read reports (durable jobs) drain after the last send: then no job is left.
    await until(
      "the reports drained",
      async () => {
        const db = new Database(join(init.dataDir, "switchboard.db"), { readonly: true });
        try {
          return (db.query(`SELECT count(*) AS n FROM jobs WHERE status IN ('pending', 'running')`).get() as { n: number }).n === 0 || undefined;
        } finally {
          db.close();
        }
      },
      60_000,
    );

    const db = new Database(join(init.dataDir, "switchboard.db"), { readonly: true });
    try {
      const one = (sql: string, ...p: string[]) => (db.query(sql).get(...p) as { n: number }).n;
      expect(one(`SELECT count(*) AS n FROM campaign_recipients WHERE campaign_id = ? AND message_id IS NULL`, id)).toBe(0);
      expect(one(`SELECT count(*) AS n FROM messages WHERE campaign_id = ?`, id)).toBe(6000);
      expect(one(`SELECT count(*) AS n FROM (SELECT contact_id FROM messages WHERE campaign_id = ? GROUP BY contact_id HAVING count(*) > 1)`, id)).toBe(0);
      // Every recipient points at its own message, and that message is the one of its contact.
      expect(
        one(
          `SELECT count(*) AS n FROM campaign_recipients r JOIN messages m ON m.id = r.message_id AND m.contact_id = r.contact_id WHERE r.campaign_id = ?`,
          id,
        ),
      ).toBe(6000);
      // Ledger: one debit per charged message, refunds only for refunded ones; the sums agree.
      const charged = one(`SELECT coalesce(sum(unit_price), 0) AS n FROM messages WHERE campaign_id = ? AND charged = 1 AND refunded = 0`, id);
      const ledger = one(`SELECT -coalesce(sum(l.amount), 0) AS n FROM ledger_entries l JOIN messages m ON m.id = l.message_id WHERE m.campaign_id = ?`, id);
      expect(ledger).toBe(charged);
      expect(one(`SELECT count(*) AS n FROM ledger_entries l JOIN messages m ON m.id = l.message_id WHERE m.campaign_id = ? AND l.kind = 'debit'`, id)).toBe(
        6000,
      );
      expect(one(`SELECT count(*) AS n FROM jobs WHERE status = 'running'`)).toBe(0);
    } finally {
      db.close();
    }
  }, 400_000);
});
