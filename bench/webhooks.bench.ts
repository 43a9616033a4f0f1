/**
 * Webhook benchmarks. Run: `npx bun bench/webhooks.bench.ts` (options: --events N --endpoints N --emits N).
 *
 * 1. Deliveries per second: 10 endpoints × 10,000 events to a local receiver (a separate Bun process) that
 *    answers 200 at once. Events are emitted first (fan-out inside their transactions); then the clock
 *    starts and the job loop delivers everything. Counted: succeeded deliveries / wall time.
 * 2. POST /messages (in process, app.handle, sequential, sandbox WhatsApp priced template) with 10 endpoints
 *    subscribed to `*` ÷ with none. Two traffic shapes: a new phone number per request (contact.created +
 *    conversation.opened are emitted at acceptance → 20 deliveries fanned out per request) and one
 *    known contact (nothing emitted at acceptance; message.sent etc. come later from the dispatch job).
 *    The job loop is not running during this part, so the numbers are the API's own cost.
 * 3. Cost of `deps.events.emit` alone with 10 subscribed endpoints vs none: one IMMEDIATE transaction per
 *    event: the worst case for the ratio, since nothing else happens in the transaction.
 */
import { parseArgs } from "node:util";
import { createTestApp, sandboxChannels, type TestApp } from "../test/helpers/test-app";
import type { EventBus } from "../src/platform/events/events";

const { values: args } = parseArgs({
  options: {
    events: { type: "string", default: "10000" },
    endpoints: { type: "string", default: "10" },
    emits: { type: "string", default: "5000" },
    sends: { type: "string", default: "3000" },
    concurrency: { type: "string" },
    "per-endpoint": { type: "string" },
  },
});
const EVENTS = Number(args.events);
const ENDPOINTS = Number(args.endpoints);
const EMITS = Number(args.emits);
const SENDS = Number(args.sends);

const receiverSource = `
const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("ok") });
console.log(server.port);
`;

async function startReceiver(): Promise<{ url: string; stop: () => void }> {
  const proc = Bun.spawn([process.execPath, "--eval", receiverSource], { stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  const { value } = await reader.read();
  const port = Number(new TextDecoder().decode(value).trim());
  return { url: `http://127.0.0.1:${port}/hook`, stop: () => proc.kill() };
}

/** The app's bus, untyped: the benchmark's messages are partial (delivery only stores them). */
const busOf = (app: TestApp) => app.deps.events as unknown as EventBus<Record<string, object>>;
const message = (i: number) => ({
  message: { id: `m${i}`, status: "sent", channel: "whatsapp", contactId: "c1", metadata: { orderId: `A-${i}` }, unitPrice: "0.050000", charged: true },
});

async function makeApp(): Promise<TestApp> {
  const webhooks: Record<string, unknown> = {};
  if (args.concurrency) webhooks.concurrency = Number(args.concurrency);
  if (args["per-endpoint"]) webhooks.concurrency_per_endpoint = Number(args["per-endpoint"]);
  return createTestApp({ config: { rate_limit: { requests_per_second: 100000, burst: 100000 }, webhooks } });
}

async function addEndpoints(app: TestApp, url: string, n: number) {
  for (let i = 0; i < n; i++) {
    const res = await app.request("POST", "/webhooks", { body: { url, events: ["message.*"] } });
    if (res.status !== 201) throw new Error(`create endpoint: ${res.status} ${JSON.stringify(res.body)}`);
  }
}

async function deliveriesPerSecond(url: string) {
  const app = await makeApp();
  try {
    await addEndpoints(app, url, ENDPOINTS);
    const e0 = performance.now();
    for (let i = 0; i < EVENTS; i += 100)
      app.deps.db.tx(() => {
        for (let j = i; j < Math.min(EVENTS, i + 100); j++) busOf(app).emit({ companyId: app.company.id, type: "message.sent", data: message(j) });
      });
    const emitMs = performance.now() - e0;
    const t0 = performance.now();
    await app.deps.queue.drain({ timeoutMs: 600_000 });
    const ms = performance.now() - t0;
    const sqlite = app.deps.db.$client;
    const ok = (sqlite.query(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'succeeded'`).get() as { n: number }).n;
    const total = (sqlite.query(`SELECT count(*) AS n FROM webhook_deliveries`).get() as { n: number }).n;
    return { deliveries: total, succeeded: ok, seconds: ms / 1000, perSecond: ok / (ms / 1000), emitSeconds: emitMs / 1000, config: app.config.webhooks };
  } finally {
    await app.close();
  }
}

/**
 * Both apps (0 and N endpoints) are open at once and run alternating rounds, so disk noise (fsync time
 * varies with whatever else the machine is writing) hits both sides alike.
 */
async function emitRates(url: string, endpoints: number) {
  const none = await makeApp();
  const some = await makeApp();
  try {
    await addEndpoints(some, url, endpoints);
    const emitOne = (app: TestApp, i: number) => app.deps.db.tx(() => busOf(app).emit({ companyId: app.company.id, type: "message.sent", data: message(i) }));
    for (let i = 0; i < 200; i++) emitOne(none, i), emitOne(some, i); // warm up
    const total = { none: 0, some: 0 };
    const ROUND = 250;
    for (let done = 0; done < EMITS; done += ROUND) {
      for (const [key, app] of [
        ["none", none],
        ["some", some],
      ] as const) {
        const t0 = performance.now();
        for (let i = 0; i < ROUND; i++) emitOne(app, done + i);
        total[key] += performance.now() - t0;
      }
    }
    const rate = (ms: number) => ({ perSecond: EMITS / (ms / 1000), usPerEmit: (ms * 1000) / EMITS });
    return { none: rate(total.none), some: rate(total.some) };
  } finally {
    await none.close();
    await some.close();
  }
}

/** POST /messages rate with N endpoints subscribed to `*` vs none, alternating rounds (see header). */
async function sendRates(url: string, endpoints: number, newContactEach: boolean) {
  const mk = () =>
    createTestApp({
      balance: "1000000",
      config: {
        rate_limit: { requests_per_second: 100000, burst: 100000 },
        channels: sandboxChannels({ sent_after_ms: 0, delivered_after_ms: 3_600_000, read_after_ms: 0 }),
      },
    });
  const none = await mk();
  const some = await mk();
  try {
    for (let i = 0; i < endpoints; i++) await some.request("POST", "/webhooks", { body: { url, events: ["*"] } });
    let n = 0;
    const send = async (app: TestApp) => {
      const phone = newContactEach ? `+1415${String(5_000_000 + n++).padStart(7, "0")}` : "+14155550100";
      const res = await app.request("POST", "/messages", {
        body: { channel: "whatsapp", to: { phone }, type: "template", template: { name: "hello_world", params: { "body.1": "Ann" } } },
      });
      if (res.status !== 202) throw new Error(`POST /messages: ${res.status} ${JSON.stringify(res.body)}`);
    };
    for (let i = 0; i < 100; i++) await send(none), await send(some); // warm up
    const total = { none: 0, some: 0 };
    const ROUND = 250;
    for (let done = 0; done < SENDS; done += ROUND) {
      for (const [key, app] of [
        ["none", none],
        ["some", some],
      ] as const) {
        const t0 = performance.now();
        for (let i = 0; i < ROUND; i++) await send(app);
        total[key] += performance.now() - t0;
      }
    }
    const deliveries = (some.deps.db.$client.query("SELECT count(*) AS n FROM webhook_deliveries").get() as { n: number }).n;
    return { none: SENDS / (total.none / 1000), some: SENDS / (total.some / 1000), deliveriesPerSend: deliveries / (SENDS + 100) };
  } finally {
    await none.close();
    await some.close();
  }
}

/** The fan-out's CPU cost alone: many emits in one transaction (no commit per event). */
async function emitCpu(url: string, endpoints: number) {
  const app = await makeApp();
  try {
    await addEndpoints(app, url, endpoints);
    const t0 = performance.now();
    app.deps.db.tx(() => {
      for (let i = 0; i < EMITS; i++) busOf(app).emit({ companyId: app.company.id, type: "message.sent", data: message(i) });
    });
    return ((performance.now() - t0) * 1000) / EMITS;
  } finally {
    await app.close();
  }
}

const rx = await startReceiver();
try {
  const d = await deliveriesPerSecond(rx.url);
  console.log(
    `deliveries: ${d.succeeded}/${d.deliveries} succeeded in ${d.seconds.toFixed(2)} s → ${Math.round(d.perSecond)} deliveries/s ` +
      `(concurrency ${d.config.concurrency}, per endpoint ${d.config.concurrency_per_endpoint}; emitting ${EVENTS} events with fan-out took ${d.emitSeconds.toFixed(2)} s)`,
  );
  for (const newContactEach of [true, false]) {
    const r = await sendRates(rx.url, ENDPOINTS, newContactEach);
    console.log(
      `POST /messages (${newContactEach ? "new contact each" : "known contact"}): ${Math.round(r.none)} req/s with no endpoints, ${Math.round(r.some)} req/s with ${ENDPOINTS} ` +
        `(${r.deliveriesPerSend.toFixed(1)} deliveries queued per request) → ratio ${(r.some / r.none).toFixed(2)}`,
    );
  }
  const { none, some } = await emitRates(rx.url, ENDPOINTS);
  console.log(`emit, one transaction per event, 0 endpoints:  ${Math.round(none.perSecond)} tx/s (${none.usPerEmit.toFixed(0)} µs each)`);
  console.log(`emit, one transaction per event, ${ENDPOINTS} endpoints: ${Math.round(some.perSecond)} tx/s (${some.usPerEmit.toFixed(0)} µs each)`);
  console.log(
    `ratio ${ENDPOINTS} endpoints / none: ${(some.perSecond / none.perSecond).toFixed(2)} (fan-out adds ${(some.usPerEmit - none.usPerEmit).toFixed(0)} µs per event)`,
  );
  const [cpu0, cpuN] = [await emitCpu(rx.url, 0), await emitCpu(rx.url, ENDPOINTS)];
  console.log(`emit CPU without commit: ${cpu0.toFixed(1)} µs (0 endpoints), ${cpuN.toFixed(1)} µs (${ENDPOINTS} endpoints)`);
} finally {
  rx.stop();
}
process.exit(0);
