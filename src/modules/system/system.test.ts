import { afterAll, beforeAll, expect, test } from "bun:test";
import { ACCOUNTS, createTestApp, type TestApp } from "../../../test/helpers/test-app";

const TOKEN = "s3cret-token";
/** Every app here has a metrics token: without one /metrics answers 401 to everyone (tested below). */
const withToken = { config: { metrics: { token: TOKEN } } };
const scrape = (a: TestApp) => a.request("GET", "/metrics", { key: null, headers: { authorization: `Bearer ${TOKEN}` } });

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp(withToken);
});
afterAll(() => app.close());

test("/metrics: request counters by route pattern (never raw paths), job and account gauges, no API key needed", async () => {
  await app.request("GET", "/me");
  await app.request("GET", "/me");
  await app.request("GET", "/messages/0193a4b2-0000-7000-8000-00000000ffff");
  await app.request("GET", "/definitely/not/a/route/12345");
  await app.request("POST", "/messages", {
    body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "template", template: { name: "hello_world", params: { "body.1": "A" } } },
  });
  await Bun.sleep(10); // afterResponse hooks run after the response
  const res = await scrape(app);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
  const text = res.body as string;
  expect(text).toContain('switchboard_http_requests_total{method="GET",route="/api/public/v1/me",status="200"} 2');
  expect(text).toContain('route="/api/public/v1/messages/:id",status="404"} 1');
  expect(text).toContain('route="unmatched",status="404"');
  expect(text).not.toContain("12345");
  expect(text).toContain('switchboard_jobs{type="message.dispatch",status="pending"} 1');
  expect(text).toContain(`switchboard_channel_account_up{account="${ACCOUNTS.whatsapp}",channel="whatsapp",provider="sandbox",status="active"} 1`);
  expect(text).toMatch(/switchboard_http_request_duration_seconds_count\{method="GET",route="\/api\/public\/v1\/me",status="200"\} 2/);
  expect(text).toMatch(/process_resident_memory_bytes \d+/);
});

test("/metrics: dispatch outcomes and latency per channel, webhook outcomes, oldest due job, campaigns, balances, database size", async () => {
  const a = await createTestApp(withToken);
  try {
    // A webhook endpoint that answers 500, so its attempts count as failures.
    const receiver = Bun.serve({ port: 0, fetch: () => new Response("no", { status: 500 }) });
    await a.request("POST", "/webhooks", { body: { url: `http://127.0.0.1:${receiver.port}/hook`, events: ["message.sent"] } });
    const send = (phone: string) =>
      a.request("POST", "/messages", {
        body: { channel: "whatsapp", to: { phone }, type: "template", template: { name: "hello_world", params: { "body.1": "A" } } },
      });
    await send("+14155550101");
    await send("+12025550102"); // the sandbox's PROVIDER_REJECTED number
    const before = (await scrape(a)).body as string;
    expect(before).toMatch(/switchboard_jobs_oldest_due_age_seconds\{type="message\.dispatch"\} \d/);
    await a.deps.queue.drain();
    const text = (await scrape(a)).body as string;
    receiver.stop(true);
    expect(text).toContain('switchboard_dispatch_total{channel="whatsapp",outcome="sent"} 1');
    expect(text).toContain('switchboard_dispatch_total{channel="whatsapp",outcome="failed"} 1');
    expect(text).toContain("# TYPE switchboard_dispatch_duration_seconds histogram");
    expect(text).toContain('switchboard_dispatch_duration_seconds_bucket{channel="whatsapp",le="+Inf"} 2');
    expect(text).toMatch(/switchboard_webhook_deliveries_total\{outcome="failure"\} [1-9]/);
    expect(text).toContain('switchboard_company_balance{company="default",currency="USD"} 99.95'); // 100 − one priced send
    expect(text).toMatch(/switchboard_database_bytes\{file="db"\} [1-9]\d*/);
    // SQLite's write-ahead log is the appliance's own file; PostgreSQL's belongs to the server and is not reported.
    if (a.deps.db.engine === "sqlite") expect(text).toMatch(/switchboard_database_bytes\{file="wal"\} \d+/);
    else expect(text).not.toContain('switchboard_database_bytes{file="wal"}');
  } finally {
    await a.close();
  }
});

test("/metrics with [metrics] token: 401 without it, 200 with it", async () => {
  const a = await createTestApp(withToken);
  try {
    expect((await a.request("GET", "/metrics", { key: null })).status).toBe(401);
    expect((await a.request("GET", "/metrics", { key: null, headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    expect((await a.request("GET", "/metrics", { key: null, headers: { authorization: "Bearer s3cret-token" } })).status).toBe(200);
  } finally {
    await a.close();
  }
});

test("/metrics with an empty [metrics] token: 401 to everyone (even an empty Bearer), no balance or account id shown", async () => {
  const a = await createTestApp();
  try {
    for (const headers of [{}, { authorization: "Bearer " }, { authorization: "Bearer" }] as Record<string, string>[]) {
      const res = await a.request("GET", "/metrics", { key: null, headers });
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="metrics"');
      expect(String(res.body)).toContain("set [metrics] token");
      expect(String(res.body)).not.toContain("switchboard_company_balance");
      expect(String(res.body)).not.toContain(ACCOUNTS.whatsapp);
    }
  } finally {
    await a.close();
  }
});

test("/metrics: recipients of unfinished campaigns by status", async () => {
  const a = await createTestApp(withToken);
  try {
    await a.request("POST", "/contacts", { body: { identities: [{ channel: "whatsapp", value: "+14155550131" }], tags: ["m"], optIn: true } });
    const templateId = (await a.request("GET", "/templates?channel=whatsapp")).body.data.find((t: { name: string }) => t.name === "hello_world").id;
    const c = await a.request("POST", "/campaigns", {
      body: { name: "m", templateId, audience: { type: "tags", tags: ["m"] }, askValues: { "body.1": "x" }, scheduledAt: "2099-01-01T00:00:00.000Z" },
    });
    expect(c.status).toBe(201);
    const text = (await scrape(a)).body as string;
    expect(text).toContain(`switchboard_campaign_recipients{campaign="${c.body.data.id}",company="default",campaign_status="scheduled",status="matched"} 1`);
  } finally {
    await a.close();
  }
});
