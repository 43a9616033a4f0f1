/**
 * WhatsApp template sync through the engine: the scheduled task (`templates-sync`, the same function as
 * `switchboard templates sync` and the start-up sync) against the Graph fake, and provider statuses
 * respected at send — at acceptance (422 /template) and at dispatch (a template paused after acceptance).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { metaTemplate, startGraphFake, type GraphFake } from "../../../test/fakes/graph.fake";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { syncAllTemplates } from "../messages/messages.wire";

const WA_ID = "0193a4b2-0000-7000-8000-00000000c001";
const settings = (fake: GraphFake) => ({
  phone_number_id: "555000",
  waba_id: "WABA_1",
  access_token: "tok",
  app_secret: "sec",
  verify_token: "vt",
  base_url: fake.url,
});
const sendOrder = (app: TestApp) =>
  app.request("POST", "/messages", {
    body: { channel: "whatsapp", to: { phone: "+14155550123" }, type: "template", template: { name: "order_update", params: { "body.1": "Ann" } } },
  });

describe("WhatsApp template sync", () => {
  let fake: GraphFake;
  let app: TestApp;
  beforeAll(async () => {
    fake = startGraphFake({ templatePageSize: 1 });
    fake.templates = [
      metaTemplate({ name: "order_update", language: "en_US" }),
      metaTemplate({ name: "promo", language: "en_US", status: "PENDING", category: "MARKETING" }),
    ];
    app = await createTestApp({
      config: { channels: [{ id: WA_ID, channel: "whatsapp", provider: "whatsapp-cloud", name: "wa", default: true, settings: settings(fake) }] },
    });
  });
  afterAll(async () => {
    await app.close();
    await fake.stop();
  });

  const statusOf = async (name: string) => (await app.deps.db.sql("SELECT status FROM templates WHERE name = ?").get(name)) as { status: string } | null;

  test("the scheduled task is registered every 30 minutes and syncs every page", async () => {
    const task = app.deps.scheduler.tasks.get("templates-sync");
    expect(task).toBeDefined();
    await task!();
    expect(fake.requestsTo("WABA_1/message_templates")).toHaveLength(2);
    expect((await statusOf("order_update"))?.status).toBe("approved");
    expect((await statusOf("promo"))?.status).toBe("pending");
    const listed = await app.request("GET", "/templates?channel=whatsapp&status=all");
    expect((await app.request("GET", "/templates?channel=whatsapp")).body.data.map((t: any) => t.name)).toEqual(["order_update"]);
    expect(listed.body.data.map((t: any) => [t.name, t.status, t.params])).toEqual([
      ["order_update", "approved", ["body.1"]],
      ["promo", "pending", ["body.1"]],
    ]);
    expect((await sendOrder(app)).status).toBe(202);
    await app.deps.queue.drain();
    expect(fake.requestsTo("555000/messages").at(-1)!.body).toMatchObject({
      type: "template",
      template: { name: "order_update", components: [{ type: "body", parameters: [{ type: "text", text: "Ann" }] }] },
    });
  });

  test("paused at the provider → 422 TEMPLATE_NOT_APPROVED /template at send", async () => {
    fake.templates[0]!.status = "PAUSED";
    expect(await syncAllTemplates(app.deps)).toEqual([{ accountId: WA_ID, synced: 2 }]);
    const r = await sendOrder(app);
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ code: "TEMPLATE_NOT_APPROVED", details: [{ pointer: "/template", message: "template is paused" }] });
  });

  test("paused after acceptance → the queued message fails TEMPLATE_INVALID (refunded), nothing sent", async () => {
    fake.templates[0]!.status = "APPROVED";
    await syncAllTemplates(app.deps);
    const before = (await app.request("GET", "/me")).body.data.company.balance.amount;
    const accepted = await sendOrder(app);
    expect(accepted.status).toBe(202);
    fake.templates[0]!.status = "PAUSED";
    await syncAllTemplates(app.deps);
    const sends = fake.requestsTo("555000/messages").length;
    await app.deps.queue.drain();
    const m = await app.request("GET", `/messages/${accepted.body.data.id}`);
    expect(m.body.data).toMatchObject({ status: "failed", refunded: true, error: { reason: "TEMPLATE_INVALID" } });
    expect(fake.requestsTo("555000/messages")).toHaveLength(sends);
    expect((await app.request("GET", "/me")).body.data.company.balance.amount).toBe(before);
  });

  test("a template deleted at the provider becomes disabled; a 190 during sync marks the account auth_failed", async () => {
    fake.templates = [fake.templates[1]!];
    await syncAllTemplates(app.deps);
    expect((await statusOf("order_update"))?.status).toBe("disabled");
    expect((await statusOf("promo"))?.status).toBe("pending");

    fake.failNext({ kind: "graph", code: 190 }, { path: "message_templates" });
    const [result] = await syncAllTemplates(app.deps);
    expect(result).toMatchObject({ accountId: WA_ID, error: expect.stringContaining("AUTH_FAILED") });
    expect((await app.request("GET", "/channels")).body.data[0].status).toBe("auth_failed");
    expect((await statusOf("promo"))?.status).toBe("pending"); // a failed sync changes no template
  });
});
