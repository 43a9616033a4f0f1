/**
 * The delivery engine end to end: real app, real job loop (driven by drain() on a manual clock), real HTTP
 * receivers on 127.0.0.1, signatures checked with the `standardwebhooks` library.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { Webhook } from "standardwebhooks";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { MAX_ATTEMPTS, RETRY_SCHEDULE_MS } from "./webhooks.delivery";
import { startReceiver, verifyWithLibrary, type Received } from "./webhooks.test-receiver";
import type { EventBus } from "../../platform/events/events";

const apps: TestApp[] = [];
const receivers: ReturnType<typeof startReceiver>[] = [];
afterEach(async () => {
  for (const r of receivers.splice(0)) r.stop();
  for (const a of apps.splice(0)) await a.close();
});

async function newApp(config: Record<string, unknown> = {}, extra: Parameters<typeof createTestApp>[0] = {}) {
  const app = await createTestApp({ config: { rate_limit: { requests_per_second: 10000, burst: 10000 }, ...config }, ...extra });
  apps.push(app);
  return app;
}
function receiver(respond?: Parameters<typeof startReceiver>[0]) {
  const r = startReceiver(respond);
  receivers.push(r);
  return r;
}
async function endpoint(app: TestApp, url: string, events: string[] = ["*"]): Promise<{ id: string; secret: string }> {
  const res = await app.request("POST", "/webhooks", { body: { url, events } });
  expect(res.status).toBe(201);
  return res.body.data;
}
/** The app's bus, untyped: these tests emit events with partial payloads (delivery only stores them). */
const busOf = (app: TestApp) => app.deps.events as unknown as EventBus<Record<string, object>>;
function emit(app: TestApp, type: string, data: Record<string, unknown> = {}) {
  return app.deps.db.unit(() => busOf(app).emit({ companyId: app.company.id, type, data }));
}
const drain = (app: TestApp) => app.deps.queue.drain();
/** Moves the manual clock in steps, running whatever falls due. */
async function runFor(app: TestApp, ms: number, step: number, each?: () => unknown) {
  for (let t = 0; t < ms; t += step) {
    app.clock.advance(step);
    await each?.();
    await drain(app);
  }
}
async function deliveries(app: TestApp, endpointId: string, query = "") {
  const res = await app.request("GET", `/webhooks/${endpointId}/deliveries${query}`);
  expect(res.status).toBe(200);
  return res.body.data as any[];
}
const atOf = (r: Received) => new Date(Number(r.timestamp) * 1000);
const status =
  (code: number, headers: Record<string, string> = {}, body = "") =>
  () =>
    new Response(body, { status: code, headers });

describe("signing and payload", () => {
  test("Standard Webhooks headers, verified by the standardwebhooks library; body {type, timestamp, data} with the message metadata", async () => {
    const app = await newApp();
    const rx = receiver();
    const ep = await endpoint(app, rx.url, ["message.*"]);
    const message = { id: "m1", status: "sent", metadata: { orderId: "A-1042" } };
    const event = await emit(app, "message.sent", { message });
    await drain(app);

    expect(rx.received).toHaveLength(1);
    const r = rx.received[0]!;
    expect(r.id).toBe(event.id);
    expect(r.timestamp).toBe(String(Math.floor(app.clock.now().getTime() / 1000)));
    expect(r.signature).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(r.headers["content-type"]).toBe("application/json");
    const payload = verifyWithLibrary(ep.secret, r, app.clock.now()) as any;
    expect(payload).toEqual({ type: "message.sent", timestamp: event.createdAt.toISOString(), data: { message } });
    expect(() => verifyWithLibrary("whsec_" + Buffer.alloc(32, 1).toString("base64"), r, app.clock.now())).toThrow();
    // Tampered body fails.
    expect(() => verifyWithLibrary(ep.secret, { ...r, body: r.body.replace("A-1042", "A-1043") }, app.clock.now())).toThrow();
  });

  test("only enabled endpoints subscribed to the type get it", async () => {
    const app = await newApp();
    const [a, b, c] = [receiver(), receiver(), receiver()];
    await endpoint(app, a.url, ["message.*"]);
    await endpoint(app, b.url, ["contact.created"]);
    const cId = (await endpoint(app, c.url, ["*"])).id;
    await app.request("PATCH", `/webhooks/${cId}`, { body: { enabled: false } });
    await emit(app, "message.sent");
    await emit(app, "contact.created");
    await emit(app, "conversation.closed");
    await drain(app);
    expect(a.types()).toEqual(["message.sent"]);
    expect(b.types()).toEqual(["contact.created"]);
    expect(c.types()).toEqual([]);
  });

  test("event and deliveries commit together: a rolled-back emit delivers nothing", async () => {
    const app = await newApp();
    const rx = receiver();
    await endpoint(app, rx.url);
    await expect(
      app.deps.db.unit(() => {
        busOf(app).emit({ companyId: app.company.id, type: "message.sent", data: {} });
        throw new Error("business rule failed");
      }),
    ).rejects.toThrow("business rule failed");
    await drain(app);
    expect(rx.received).toHaveLength(0);
    expect(await app.deps.db.sql("SELECT count(*) AS n FROM webhook_deliveries").get()).toEqual({ n: 0 });
  });

  test("secret rotation: both signatures for 24 h, then only the new one", async () => {
    const app = await newApp();
    const rx = receiver();
    const ep = await endpoint(app, rx.url);
    const rotated = (await app.request("POST", `/webhooks/${ep.id}/rotate-secret`)).body.data;
    await emit(app, "message.sent");
    await drain(app);
    const during = rx.received[0]!;
    expect(during.signature.split(" ")).toHaveLength(2);
    verifyWithLibrary(ep.secret, during, atOf(during));
    verifyWithLibrary(rotated.secret, during, atOf(during));

    app.clock.advance(24 * 3600 * 1000 + 1000);
    await emit(app, "message.sent");
    await drain(app);
    const after = rx.received[1]!;
    expect(after.signature.split(" ")).toHaveLength(1);
    verifyWithLibrary(rotated.secret, after, atOf(after));
    expect(() => verifyWithLibrary(ep.secret, after, atOf(after))).toThrow("No matching signature found");
    expect((await app.request("GET", `/webhooks/${ep.id}`)).body.data.previousSecretExpiresAt).not.toBeNull();
  });

  test("webhook.test goes to that endpoint only", async () => {
    const app = await newApp();
    const [a, b] = [receiver(), receiver()];
    const ep = await endpoint(app, a.url);
    await endpoint(app, b.url);
    const res = await app.request("POST", `/webhooks/${ep.id}/test`);
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ eventType: "webhook.test", status: "pending", attempts: [] });
    await drain(app);
    expect(a.types()).toEqual(["webhook.test"]);
    expect(b.types()).toEqual([]);
    verifyWithLibrary(ep.secret, a.received[0]!, app.clock.now());
    expect((await deliveries(app, ep.id))[0]).toMatchObject({ status: "succeeded", webhookId: a.received[0]!.id });
  });
});

describe("retries (Svix schedule)", () => {
  test("8 attempts at 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (±10 %), same webhook-id, then failed", async () => {
    const app = await newApp();
    const rx = receiver(status(500, {}, "boom"));
    const ep = await endpoint(app, rx.url);
    await emit(app, "message.sent");
    await drain(app);
    for (let n = 1; n < MAX_ATTEMPTS; n++) {
      const [d] = await deliveries(app, ep.id);
      expect(d.status).toBe("pending");
      const last = d.attempts[d.attempts.length - 1];
      const delay = Date.parse(d.nextAttemptAt) - Date.parse(last.attemptedAt);
      const base = RETRY_SCHEDULE_MS[n - 1]!;
      expect(delay).toBeGreaterThanOrEqual(base * 0.9);
      expect(delay).toBeLessThanOrEqual(base * 1.1);
      app.clock.advance(Math.floor(base * 0.9) - 1000);
      await drain(app);
      expect(rx.received).toHaveLength(n); // not yet
      app.clock.advance(Math.ceil(base * 0.2) + 1000);
      await drain(app);
      expect(rx.received).toHaveLength(n + 1);
    }
    const [d] = await deliveries(app, ep.id);
    expect(d).toMatchObject({ status: "failed", attemptCount: 8, nextAttemptAt: null, lastStatusCode: 500 });
    expect(d.attempts.every((a: any) => a.statusCode === 500 && a.responseExcerpt === "boom" && a.trigger === "scheduled")).toBe(true);
    expect(new Set(rx.received.map((r) => r.id)).size).toBe(1);
    expect(new Set(rx.received.map((r) => r.timestamp)).size).toBe(8);
    app.clock.advance(48 * 3600 * 1000);
    await drain(app);
    expect(rx.received).toHaveLength(8);
  });

  test("only 2xx succeeds: redirects are not followed, 4xx is retried", async () => {
    const app = await newApp();
    const target = receiver();
    const rx = receiver(status(302, { location: target.url }));
    const ep = await endpoint(app, rx.url);
    await emit(app, "message.sent");
    await drain(app);
    expect(target.received).toHaveLength(0);
    rx.respondWith(status(400, {}, '{"error":"bad"}'));
    app.clock.advance(6000);
    await drain(app);
    rx.respondWith(status(204));
    app.clock.advance(6 * 60_000);
    await drain(app);
    const [d] = await deliveries(app, ep.id);
    expect(d.status).toBe("succeeded");
    expect(d.attempts.map((a: any) => a.statusCode)).toEqual([302, 400, 204]);
    expect(d.attempts[1].responseExcerpt).toBe('{"error":"bad"}');
    expect(target.received).toHaveLength(0);
  });

  test("timeout (configurable) is a failed attempt with an error", async () => {
    const app = await newApp({ webhooks: { timeout_ms: 200 } });
    const rx = receiver(async () => {
      await Bun.sleep(1000);
      return new Response("late");
    });
    const ep = await endpoint(app, rx.url);
    await emit(app, "message.sent");
    await drain(app);
    const [d] = await deliveries(app, ep.id);
    expect(d.status).toBe("pending");
    expect(d.attempts[0]).toMatchObject({ statusCode: null, error: "timed out after 200 ms" });
    expect(d.attempts[0].durationMs).toBeGreaterThanOrEqual(180);
    expect(d.attempts[0].durationMs).toBeLessThan(900);
  });

  test("connection refused is logged as an error and retried", async () => {
    const app = await newApp();
    const rx = receiver();
    const url = rx.url;
    rx.stop();
    const ep = await endpoint(app, url);
    await emit(app, "message.sent");
    await drain(app);
    const [d] = await deliveries(app, ep.id);
    expect(d.status).toBe("pending");
    expect(d.attempts[0].statusCode).toBeNull();
    expect(d.attempts[0].error).toBeTruthy();
  });

  test("Retry-After is honoured on 429 and 503 (seconds and HTTP date), not on other statuses", async () => {
    const app = await newApp();
    const rx = receiver(status(429, { "retry-after": "120" }));
    const ep = await endpoint(app, rx.url);
    await emit(app, "message.sent");
    await drain(app);
    let [d] = await deliveries(app, ep.id);
    expect(Date.parse(d.nextAttemptAt) - Date.parse(d.attempts[0].attemptedAt)).toBe(120_000);
    app.clock.advance(119_000);
    await drain(app);
    expect(rx.received).toHaveLength(1);

    rx.respondWith(() => new Response("", { status: 503, headers: { "retry-after": new Date(app.clock.now().getTime() + 3_600_000).toUTCString() } }));
    app.clock.advance(1000);
    await drain(app);
    [d] = await deliveries(app, ep.id);
    const wait = Date.parse(d.nextAttemptAt) - app.clock.now().getTime();
    expect(wait).toBeGreaterThan(3_598_000);
    expect(wait).toBeLessThanOrEqual(3_600_000);

    rx.respondWith(status(500, { "retry-after": "1" }));
    app.clock.advance(3_600_000);
    await drain(app);
    [d] = await deliveries(app, ep.id);
    const delay = Date.parse(d.nextAttemptAt) - Date.parse(d.attempts[2].attemptedAt);
    expect(delay).toBeGreaterThanOrEqual(RETRY_SCHEDULE_MS[2]! * 0.9); // schedule, not 1 s
  });

  test("a receiver down for 10 minutes gets every event afterwards", async () => {
    const app = await newApp();
    const rx = receiver(status(503));
    const ep = await endpoint(app, rx.url, ["message.*"]);
    const sent: string[] = [];
    // 20 events over 10 minutes while the receiver is down.
    await runFor(app, 10 * 60_000, 30_000, async () => sent.push((await emit(app, "message.delivered", { message: { id: `m${sent.length}` } })).id));
    expect(sent).toHaveLength(20);
    rx.respondWith(status(200));
    await runFor(app, 2 * 3600_000, 60_000);
    const ok = new Set(rx.received.filter((r) => r.receivedAt && true).map((r) => r.id));
    for (const id of sent) expect(ok.has(id)).toBe(true);
    const all = await deliveries(app, ep.id, "?limit=200");
    expect(all).toHaveLength(20);
    expect(all.every((d) => d.status === "succeeded")).toBe(true);
    // Each event reached the receiver with one webhook-id across its retries.
    for (const d of all) expect(rx.received.filter((r) => r.id === d.webhookId).length).toBe(d.attemptCount);
  });
});

describe("disabling", () => {
  test("410 Gone disables the endpoint at once and emits webhook.endpoint_disabled", async () => {
    const app = await newApp();
    const gone = receiver(status(410));
    const ops = receiver();
    const ep = await endpoint(app, gone.url, ["message.*"]);
    await endpoint(app, ops.url, ["webhook.*"]);
    await emit(app, "message.sent");
    await drain(app);
    const detail = (await app.request("GET", `/webhooks/${ep.id}`)).body.data;
    expect(detail).toMatchObject({ enabled: false, disabledReason: "gone" });
    expect(ops.types()).toEqual(["webhook.endpoint_disabled"]);
    expect(JSON.parse(ops.received[0]!.body).data).toMatchObject({ reason: "gone", endpoint: { id: ep.id, enabled: false } });
    expect((await deliveries(app, ep.id))[0].status).toBe("failed");
    await emit(app, "message.sent");
    await runFor(app, 3600_000, 600_000);
    expect(gone.received).toHaveLength(1);
    // Redeliver and test refuse a disabled endpoint until it is re-enabled.
    const d = (await deliveries(app, ep.id))[0];
    expect((await app.request("POST", `/webhooks/${ep.id}/deliveries/${d.id}/redeliver`)).status).toBe(409);
    expect((await app.request("POST", `/webhooks/${ep.id}/test`)).status).toBe(409);
  });

  test("an endpoint failing everything for 5 days is disabled (webhook.endpoint_disabled, reason failing)", async () => {
    const app = await newApp();
    const bad = receiver(status(500));
    const ops = receiver();
    const ep = await endpoint(app, bad.url, ["message.*"]);
    await endpoint(app, ops.url, ["webhook.endpoint_disabled"]);
    const day = 24 * 3600_000;
    const start = app.clock.now().getTime();
    // One event every 6 hours; the endpoint never succeeds.
    await runFor(app, 4.5 * day, 600_000, async () => {
      if ((app.clock.now().getTime() - start) % (6 * 3600_000) === 0) await emit(app, "message.sent");
    });
    expect((await app.request("GET", `/webhooks/${ep.id}`)).body.data.enabled).toBe(true);
    await runFor(app, 1 * day, 600_000, async () => {
      if ((app.clock.now().getTime() - start) % (6 * 3600_000) === 0) await emit(app, "message.sent");
    });
    const detail = (await app.request("GET", `/webhooks/${ep.id}`)).body.data;
    expect(detail).toMatchObject({ enabled: false, disabledReason: "failing" });
    expect(ops.types()).toEqual(["webhook.endpoint_disabled"]);
    expect(JSON.parse(ops.received[0]!.body).data.reason).toBe("failing");
    // Its pending deliveries fail without a request.
    const before = bad.received.length;
    await runFor(app, day, 3600_000);
    expect(bad.received.length).toBe(before);
    expect((await deliveries(app, ep.id, "?status=pending")).length).toBe(0);
  });

  test("a success resets the failing clock", async () => {
    const app = await newApp();
    const rx = receiver(status(500));
    const ep = await endpoint(app, rx.url, ["message.*"]);
    const day = 24 * 3600_000;
    await emit(app, "message.sent");
    await runFor(app, 4 * day, 3600_000, () => emit(app, "message.sent"));
    rx.respondWith(status(200));
    await emit(app, "message.sent");
    await drain(app);
    rx.respondWith(status(500));
    await runFor(app, 2 * day, 3600_000, () => emit(app, "message.sent"));
    expect((await app.request("GET", `/webhooks/${ep.id}`)).body.data.enabled).toBe(true);
  });

  test("a disabled endpoint's scheduled retries end without a request; deleting an endpoint ends its jobs", async () => {
    const app = await newApp();
    const rx = receiver(status(500));
    const ep = await endpoint(app, rx.url);
    const ep2 = await endpoint(app, rx.url);
    await emit(app, "message.sent");
    await drain(app);
    expect(rx.received).toHaveLength(2);
    await app.request("PATCH", `/webhooks/${ep.id}`, { body: { enabled: false } });
    await app.request("DELETE", `/webhooks/${ep2.id}`);
    app.clock.advance(10_000);
    await drain(app);
    expect(rx.received).toHaveLength(2);
    const [d] = await deliveries(app, ep.id);
    expect(d).toMatchObject({ status: "failed" });
    expect(d.attempts[1]).toMatchObject({ error: "endpoint is disabled; not sent", statusCode: null });
    expect((await app.deps.queue.stats())["webhook.deliver"]?.pending ?? 0).toBe(0);
  });
});

describe("durability", () => {
  test("nothing is lost across a restart mid-retry (pending retry, and a job claimed by a crashed process)", async () => {
    const app1 = await newApp();
    const rx = receiver(status(500));
    const ep = await endpoint(app1, rx.url);
    const e1 = await emit(app1, "message.sent", { n: 1 });
    await drain(app1); // attempt 1 failed, retry in ~5 s
    const e2 = await emit(app1, "message.sent", { n: 2 });
    // A worker claimed e2's job and the process died before finishing (lease held, never released).
    await app1.deps.db
      .sql(
        `UPDATE jobs SET status = 'running', lease_until = ?1, run_at = ?1, lease_token = 'dead-worker', attempts = 1 WHERE payload LIKE ?2 AND status = 'pending' AND run_at <= ?3`,
      )
      .run(app1.clock.now().getTime() + 60_000, "%", app1.clock.now().getTime());
    const dir = app1.dir;
    const at = app1.clock.now();
    apps.splice(apps.indexOf(app1), 1);
    await app1.close({ keepData: true });

    rx.respondWith(status(200));
    const app2 = await newApp({}, { dataDir: dir, start: new Date(at.getTime() + 6_000) });
    await drain(app2);
    expect(rx.received.filter((r) => r.id === e1.id)).toHaveLength(2); // the retry ran after the restart
    app2.clock.advance(60_000); // the dead worker's lease expires
    await drain(app2);
    const got = rx.received.filter((r) => r.id === e2.id);
    expect(got.length).toBeGreaterThanOrEqual(1);
    verifyWithLibrary(ep.secret, got[got.length - 1]!, atOf(got[got.length - 1]!));
    const all = await deliveries(app2, ep.id);
    expect(all.map((d) => d.status)).toEqual(["succeeded", "succeeded"]);
  });
});

describe("delivery log and redelivery", () => {
  test("redelivery sends the same stored bytes and webhook-id with a fresh timestamp and signature", async () => {
    const app = await newApp();
    const rx = receiver();
    const ep = await endpoint(app, rx.url);
    await emit(app, "contact.updated", { contact: { id: "c1", firstName: "Ada" } });
    await drain(app);
    app.clock.advance(10 * 60_000);
    const [d] = await deliveries(app, ep.id);
    const res = await app.request("POST", `/webhooks/${ep.id}/deliveries/${d.id}/redeliver`);
    expect(res.status).toBe(202);
    expect(res.body.data).toMatchObject({ id: d.id, status: "pending", webhookId: d.webhookId });
    await drain(app);
    const [first, second] = rx.received;
    expect(second!.id).toBe(first!.id);
    expect(second!.body).toBe(first!.body);
    expect(Number(second!.timestamp) - Number(first!.timestamp)).toBe(600);
    expect(second!.signature).not.toBe(first!.signature);
    verifyWithLibrary(ep.secret, second!, app.clock.now());
    const [after] = await deliveries(app, ep.id);
    expect(after).toMatchObject({ status: "succeeded", attemptCount: 2 });
    expect(after.attempts.map((a: any) => a.trigger)).toEqual(["scheduled", "manual"]);
    expect((await app.request("POST", `/webhooks/${ep.id}/deliveries/0190aaaa-0000-7000-8000-000000000000/redeliver`)).status).toBe(404);
  });

  test("redelivering a failed delivery: one manual attempt; success settles it", async () => {
    const app = await newApp();
    const rx = receiver(status(500));
    const ep = await endpoint(app, rx.url);
    await emit(app, "message.sent");
    await runFor(app, 2 * 24 * 3600_000, 3600_000);
    let [d] = await deliveries(app, ep.id);
    expect(d.status).toBe("failed");
    await app.request("POST", `/webhooks/${ep.id}/deliveries/${d.id}/redeliver`);
    await drain(app);
    [d] = await deliveries(app, ep.id);
    expect(d).toMatchObject({ status: "failed", attemptCount: 9 });
    rx.respondWith(status(200));
    await app.request("POST", `/webhooks/${ep.id}/deliveries/${d.id}/redeliver`);
    await drain(app);
    [d] = await deliveries(app, ep.id);
    expect(d).toMatchObject({ status: "succeeded", attemptCount: 10 });
    expect(new Set(rx.received.map((r) => r.id)).size).toBe(1);
  });

  test("listing: newest first, attempts with time, status, duration, excerpt, error; filters by status and event type", async () => {
    const app = await newApp();
    const rx = receiver((r) => (JSON.parse(r.body).type.startsWith("contact.") ? new Response("x".repeat(5000), { status: 500 }) : new Response("thanks")));
    const ep = await endpoint(app, rx.url);
    await emit(app, "message.sent");
    await emit(app, "contact.created");
    await emit(app, "message.read");
    await drain(app);

    const all = await deliveries(app, ep.id);
    expect(all.map((d) => d.eventType)).toEqual(["message.read", "contact.created", "message.sent"]);
    const [a] = all[2].attempts;
    expect(a).toMatchObject({ statusCode: 200, responseExcerpt: "thanks", error: null, trigger: "scheduled" });
    expect(typeof a.durationMs).toBe("number");
    expect(Date.parse(a.attemptedAt)).toBe(app.clock.now().getTime());
    expect(all[1].attempts[0].responseExcerpt).toHaveLength(1024);
    expect(all[2].payload).toMatchObject({ type: "message.sent" });

    expect((await deliveries(app, ep.id, "?status=pending")).map((d) => d.eventType)).toEqual(["contact.created"]);
    expect((await deliveries(app, ep.id, "?status=succeeded")).map((d) => d.eventType)).toEqual(["message.read", "message.sent"]);
    expect((await deliveries(app, ep.id, "?status=failed")).length).toBe(0);
    expect((await deliveries(app, ep.id, "?eventType=message.*")).map((d) => d.eventType)).toEqual(["message.read", "message.sent"]);
    expect((await deliveries(app, ep.id, "?eventType=contact.created&status=pending")).length).toBe(1);
    const bad = await app.request("GET", `/webhooks/${ep.id}/deliveries?eventType=nope.nothing`);
    expect(bad.status).toBe(422);
    expect(bad.body.error.details[0].pointer).toBe("query:eventType");

    const p1 = await app.request("GET", `/webhooks/${ep.id}/deliveries?limit=2`);
    expect(p1.body.data).toHaveLength(2);
    const p2 = await app.request("GET", `/webhooks/${ep.id}/deliveries?limit=2&cursor=${p1.body.page.nextCursor}`);
    expect(p2.body.data.map((d: any) => d.eventType)).toEqual(["message.sent"]);
    expect(p2.body.page.nextCursor).toBeNull();
  });
});

describe("isolation", () => {
  test("one slow receiver does not delay another endpoint's deliveries, nor the API", async () => {
    const app = await newApp({ webhooks: { concurrency: 16, concurrency_per_endpoint: 2 } });
    const slow = receiver(async () => {
      await Bun.sleep(1500);
      return new Response("ok");
    });
    const fast = receiver();
    await endpoint(app, slow.url);
    await endpoint(app, fast.url);
    for (let i = 0; i < 40; i++) await emit(app, "message.sent", { i });
    const t0 = Date.now();
    app.deps.queue.start();
    while (fast.received.length < 40 && Date.now() - t0 < 5000) await Bun.sleep(10);
    const elapsed = Date.now() - t0;
    expect(fast.received).toHaveLength(40);
    expect(elapsed).toBeLessThan(1000);
    expect(slow.received.length).toBeLessThanOrEqual(2); // bounded per endpoint
    const api0 = performance.now();
    expect((await app.request("GET", "/webhooks")).status).toBe(200);
    expect(performance.now() - api0).toBeLessThan(200);
  });
});

test("library sanity: a secret the library made verifies our signature scheme", () => {
  // Guards against reading the spec differently from the reference implementation.
  const secret = "whsec_" + Buffer.alloc(32, 7).toString("base64");
  const wh = new Webhook(secret);
  const now = new Date();
  const sig = wh.sign("msg_1", now, '{"a":1}');
  expect(sig.startsWith("v1,")).toBe(true);
});
