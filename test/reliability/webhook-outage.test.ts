/**
 * Webhook receivers down for hours, on the injected clock (src/platform/clock.ts): the real app sends
 * messages (sandbox) all through the outage, so `message.sent` / `delivered` / `read` events go to an
 * endpoint whose receiver refuses connections, then answers 503, then comes back. The clock jumps from one
 * due job to the next, so a day of retries runs in well under a second.
 *
 * - Down for 1 h and 24 h: after recovery 100 % of the events arrive, each with one `webhook-id` on every
 *   attempt (distinct ids = events), nothing left pending.
 * - Down for 30 h: longer than the retry schedule (8 attempts over ~27.5 h, DESIGN §6): the first events'
 *   deliveries end `failed` — listed in the delivery log, and a redeliver brings them — the rest arrive.
 * - Down for good: the endpoint is disabled after 5 days of failures (`webhook.endpoint_disabled` to another
 *   endpoint), and gets no further requests.
 * Counts are printed.
 */
import { afterEach, expect, test } from "bun:test";
import { DISABLE_AFTER_FAILING_MS, MAX_ATTEMPTS } from "../../src/modules/webhooks/webhooks.delivery";
import { createTestApp, type TestApp } from "../helpers/test-app";

const HOUR = 3_600_000;
/** The clock's smallest jump: retries due within it run together (the schedule's steps are 5 s to 10 h). */
const STEP_MS = 15 * 60_000;
const apps: TestApp[] = [];
const receivers: Receiver[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) r.stop();
  for (const a of apps.splice(0)) await a.close();
});

/** An endpoint's receiver that can be down (connection refused), failing (503), or up (200); records every request it sees. */
class Receiver {
  readonly received: { id: string; body: string; at: number; ok: boolean }[] = [];
  private server: ReturnType<typeof Bun.serve> | undefined;
  private failing = false;
  readonly port: number;
  constructor(private readonly clock: () => Date) {
    this.server = this.listen(0);
    this.port = this.server.port!;
    receivers.push(this);
  }
  get url(): string {
    return `http://127.0.0.1:${this.port}/hook`;
  }
  refuse(): void {
    this.server?.stop(true);
    this.server = undefined;
  }
  fail(): void {
    this.failing = true;
    this.server ??= this.listen(this.port);
  }
  up(): void {
    this.failing = false;
    this.server ??= this.listen(this.port);
  }
  stop(): void {
    this.refuse();
  }
  private listen(port: number) {
    return Bun.serve({
      hostname: "127.0.0.1",
      port,
      fetch: async (req) => {
        this.received.push({ id: req.headers.get("webhook-id") ?? "", body: await req.text(), at: this.clock().getTime(), ok: !this.failing });
        return this.failing ? new Response("maintenance", { status: 503 }) : new Response("ok");
      },
    });
  }
}

async function newApp() {
  sends = 0;
  const app = await createTestApp({ balance: "1000.000000", config: { rate_limit: { requests_per_second: 1e6, burst: 1e6 } } });
  apps.push(app);
  return app;
}

const one = (app: TestApp, sql: string, ...p: (string | number)[]) => (app.deps.db.$client.query(sql).get(...p) as { n: number | null }).n;
const nextDue = (app: TestApp) => one(app, "SELECT min(run_at) AS n FROM jobs WHERE status = 'pending'");

let sends = 0;
let phone = 0;
/** A template send through the real API: its message.sent (and, an hour later, delivered and read) events. */
async function send(app: TestApp) {
  const res = await app.request("POST", "/messages", {
    body: {
      channel: "whatsapp",
      to: { phone: `+1415${String(5_000_000 + phone++)}` },
      type: "template",
      template: { name: "hello_world", params: { "body.1": "Ann" } },
    },
  });
  expect(res.status).toBe(202);
  sends++;
}

/**
 * Moves the clock to `end`, stopping at every due job (jumps of at least STEP_MS) and at every `every` ms to
 * call `tick` (a send), running whatever falls due.
 */
async function runUntil(app: TestApp, end: number, opts: { every?: number; tick?: () => Promise<void> } = {}) {
  let nextTick = opts.every ? app.clock.now().getTime() : Infinity;
  for (;;) {
    const now = app.clock.now().getTime();
    if (opts.tick && nextTick <= now) {
      await opts.tick();
      nextTick += opts.every!;
    }
    await app.deps.queue.drain();
    if (now >= end) return;
    const due = nextDue(app) ?? Infinity;
    app.clock.set(new Date(Math.min(Math.max(due, now + STEP_MS), nextTick, end)));
  }
}

async function endpoint(app: TestApp, url: string, events: string[]) {
  const res = await app.request("POST", "/webhooks", { body: { url, events } });
  expect(res.status).toBe(201);
  return res.body.data as { id: string };
}

/** Events stored for the endpoint's company (one per event, whatever the number of attempts). */
const eventIds = (app: TestApp) =>
  (app.deps.db.$client.query("SELECT id FROM webhook_messages WHERE event_type LIKE 'message.%' ORDER BY created_at").all() as { id: string }[]).map(
    (r) => r.id,
  );

for (const hours of [1, 24, 30])
  test(`receiver down for ${hours} h while messages flow: ${hours <= 24 ? "100 % delivered after recovery" : "events older than the retry schedule end failed (listed, redeliverable)"}, one webhook-id per event`, async () => {
    const app = await newApp();
    const rx = new Receiver(() => app.clock.now());
    const ep = await endpoint(app, rx.url, ["message.*"]);
    const start = app.clock.now().getTime();

    // The first half of the outage the receiver's host is down (refused), then it answers 503 (maintenance).
    rx.refuse();
    await runUntil(app, start + (hours * HOUR) / 2, { every: HOUR, tick: () => send(app) });
    rx.fail();
    await runUntil(app, start + hours * HOUR, { every: HOUR, tick: () => send(app) });
    const during = rx.received.length;
    const recovered = app.clock.now().getTime();
    rx.up();
    // Long enough for the last scheduled retry of anything still pending (the schedule's tail is 10 h + 10 h).
    await runUntil(app, recovered + 30 * HOUR);

    const ids = eventIds(app);
    const okIds = new Set(rx.received.filter((r) => r.ok).map((r) => r.id));
    const byStatus = Object.fromEntries(
      (
        app.deps.db.$client.query("SELECT status, count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ? GROUP BY status").all(ep.id) as {
          status: string;
          n: number;
        }[]
      ).map((r) => [r.status, r.n]),
    );
    // One webhook-id per event: every request with the same body carried the same id, and ids are the events'.
    const idsOfBody = new Map<string, Set<string>>();
    for (const r of rx.received) idsOfBody.set(r.body, (idsOfBody.get(r.body) ?? new Set()).add(r.id));
    expect([...idsOfBody.values()].every((s) => s.size === 1)).toBe(true);
    expect([...okIds].every((id) => ids.includes(id))).toBe(true);
    const lastDeliveryH = (Math.max(...rx.received.filter((r) => r.ok).map((r) => r.at)) - recovered) / HOUR;
    const maxAttempts = one(app, "SELECT max(attempts) AS n FROM webhook_deliveries WHERE endpoint_id = ?", ep.id);
    const line = `webhook outage ${String(hours).padStart(2)} h: ${ids.length} events (${sends} sends), ${during} failed attempts during the outage, ${okIds.size} delivered after recovery (last ${lastDeliveryH.toFixed(1)} h after it), deliveries ${JSON.stringify(byStatus)}, at most ${maxAttempts} attempts for one event`;

    if (hours <= 24) {
      expect(okIds.size).toBe(ids.length);
      expect(byStatus).toEqual({ succeeded: ids.length });
      console.log(line);
    } else {
      // Events from the outage's first hours ran out of attempts; every one of them is in the log as failed.
      const failed = app.deps.db.$client.query("SELECT id, message_id FROM webhook_deliveries WHERE endpoint_id = ? AND status = 'failed'").all(ep.id) as {
        id: string;
        message_id: string;
      }[];
      expect(failed.length).toBeGreaterThan(0);
      expect(failed.length + okIds.size).toBe(ids.length);
      for (const f of failed) expect(one(app, "SELECT count(*) AS n FROM webhook_attempts WHERE delivery_id = ?", f.id)).toBe(MAX_ATTEMPTS);
      for (const f of failed) expect((await app.request("POST", `/webhooks/${ep.id}/deliveries/${f.id}/redeliver`)).status).toBe(202);
      await app.deps.queue.drain();
      expect(new Set(rx.received.filter((r) => r.ok).map((r) => r.id)).size).toBe(ids.length);
      const idsOfBodyAfter = new Map<string, Set<string>>();
      for (const r of rx.received) idsOfBodyAfter.set(r.body, (idsOfBodyAfter.get(r.body) ?? new Set()).add(r.id));
      expect([...idsOfBodyAfter.values()].every((s) => s.size === 1)).toBe(true);
      console.log(`${line}; ${failed.length} redelivered by hand → ${ids.length} of ${ids.length}`);
    }
    expect(one(app, "SELECT count(*) AS n FROM jobs WHERE type = 'webhook.deliver'")).toBe(0);
  });

test("receiver down for good: disabled after 5 days of failures, webhook.endpoint_disabled, then no more requests", async () => {
  const app = await newApp();
  const rx = new Receiver(() => app.clock.now());
  const ops = new Receiver(() => app.clock.now());
  const ep = await endpoint(app, rx.url, ["message.*"]);
  await endpoint(app, ops.url, ["webhook.endpoint_disabled"]);
  rx.fail();
  const start = app.clock.now().getTime();
  let disabledAt: number | null = null;
  // A send every 12 hours; watch for the disable.
  await runUntil(app, start + 6 * 24 * HOUR, {
    every: 12 * HOUR,
    tick: async () => {
      if (disabledAt === null && ops.received.length) disabledAt = ops.received[0]!.at;
      await send(app);
    },
  });
  disabledAt ??= ops.received[0]?.at ?? null;
  const detail = (await app.request("GET", `/webhooks/${ep.id}`)).body.data;
  expect(detail).toMatchObject({ enabled: false, disabledReason: "failing" });
  expect(ops.received).toHaveLength(1);
  expect(JSON.parse(ops.received[0]!.body)).toMatchObject({ type: "webhook.endpoint_disabled", data: { reason: "failing", endpoint: { id: ep.id } } });
  const firstFailure = rx.received[0]!.at;
  const lastRequest = rx.received.at(-1)!.at;
  const afterHours = (disabledAt! - firstFailure) / HOUR;
  expect(disabledAt! - firstFailure).toBeGreaterThanOrEqual(DISABLE_AFTER_FAILING_MS);
  expect(afterHours).toBeLessThan(5 * 24 + 12);
  expect(lastRequest).toBeLessThanOrEqual(disabledAt!); // nothing after the disable
  const byStatus = Object.fromEntries(
    (
      app.deps.db.$client.query("SELECT status, count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ? GROUP BY status").all(ep.id) as {
        status: string;
        n: number;
      }[]
    ).map((r) => [r.status, r.n]),
  );
  expect(byStatus.pending ?? 0).toBe(0);
  console.log(
    `webhook endpoint down for good: ${eventIds(app).length} events over 6 days, ${rx.received.length} attempts, disabled ${afterHours.toFixed(1)} h after its first failure (documented: 5 days = 120 h), no request after; deliveries ${JSON.stringify(byStatus)}`,
  );
});
