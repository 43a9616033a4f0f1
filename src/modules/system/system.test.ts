import { afterAll, beforeAll, expect, test } from "bun:test";
import { ACCOUNTS, createTestApp, type TestApp } from "../../../test/helpers/test-app";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

test("/metrics: request counters by route pattern (never raw paths), job and account gauges, no key needed", async () => {
  await app.request("GET", "/me");
  await app.request("GET", "/me");
  await app.request("GET", "/messages/0193a4b2-0000-7000-8000-00000000ffff");
  await app.request("GET", "/definitely/not/a/route/12345");
  await app.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "template", template: { name: "hello_world", params: { "body.1": "A" } } } });
  await Bun.sleep(10); // afterResponse hooks run after the response
  const res = await app.request("GET", "/metrics", { key: null });
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
