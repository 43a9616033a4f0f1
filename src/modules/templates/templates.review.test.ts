/**
 * WhatsApp template management (DESIGN §17) through the real app: submit → pending → Meta's verdict by the
 * template webhooks and by sync → `template.status_changed`; sends and campaigns refuse what is not approved
 * (422 TEMPLATE_NOT_APPROVED); DELETE at Meta, then here, refused while a campaign uses it; the exact bytes
 * sent to the Graph fake for create and delete. And the sandbox's review job (2 s; `reject_*`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { GraphFake, whatsappPayloads } from "../../../test/fakes/graph.fake";
import { eventsOf, inbound } from "../../../test/helpers/messaging";
import { createTestApp, sandboxChannels, type TestApp } from "../../../test/helpers/test-app";
import { syncAllTemplates } from "../messages/messages.wire";

const WA = "0193a4b2-0000-7000-8000-00000000c0a1";
const TOKEN = "tok";
const APP_SECRET = "sec";
const statusEvents = (app: TestApp) => eventsOf(app, "template.status_changed").map((e) => e.data);

describe("WhatsApp Cloud: submit, review, delete", () => {
  let graph: GraphFake;
  let app: TestApp;
  let base: string;
  const hook = (payload: unknown) => graph.pushWebhook({ url: `${base}/hooks/${WA}`, appSecret: APP_SECRET, payload });
  /** Meta's verdict: its list changes, and it tells us by the status webhook. */
  const review = (name: string, event: string, reason?: string) => {
    const meta = graph.templates.find((t) => t.name === name)!;
    meta.status = event;
    return hook(whatsappPayloads.templateStatus({ wabaId: "WABA_1", id: String(meta.id), name, event, reason }));
  };
  const submit = (body: Record<string, unknown>) =>
    app.request("POST", "/templates", { body: { channel: "whatsapp", language: "en_US", category: "marketing", ...body } });

  beforeAll(async () => {
    graph = new GraphFake({ tokens: [TOKEN] });
    app = await createTestApp({
      config: {
        channels: [
          ...sandboxChannels().filter((c) => c.channel !== "whatsapp"),
          {
            id: WA,
            channel: "whatsapp",
            provider: "whatsapp-cloud",
            name: "WA",
            default: true,
            settings: { phone_number_id: "PNID1", waba_id: "WABA_1", access_token: TOKEN, app_secret: APP_SECRET, verify_token: "v", base_url: graph.url },
          },
        ],
      },
    });
    app.app.listen({ hostname: "127.0.0.1", port: 0 });
    base = `http://127.0.0.1:${app.app.server!.port}`;
  });
  afterAll(async () => {
    await app.app.stop(true);
    await app.close();
    await graph.stop();
  });

  let orderId: string;
  let metaId: string;

  test("submitted with Meta's components and examples (exact bytes); stored pending with Meta's id", async () => {
    const r = await submit({
      name: "order_ready",
      header: "Your order",
      body: "Hi {{1}}, order {{2}} is ready.",
      footer: "Reply STOP to opt out",
      buttons: [
        { type: "quick_reply", text: "Thanks" },
        { type: "url", text: "Track", url: "https://shop.example/t/{{1}}" },
        { type: "phone_number", text: "Call us", phoneNumber: "+14155550100" },
      ],
      examples: { "body.1": "Ann", "body.2": "A-1", "button.1.1": "A-1" },
    });
    expect(r.status).toBe(201);
    const sent = graph.requestsTo("WABA_1/message_templates").at(-1)!;
    expect(sent.method).toBe("POST");
    expect(sent.path).toEndWith("v23.0/WABA_1/message_templates");
    expect(new TextDecoder().decode(sent.raw)).toBe(
      JSON.stringify({
        name: "order_ready",
        language: "en_US",
        category: "MARKETING",
        components: [
          { type: "HEADER", format: "TEXT", text: "Your order" },
          { type: "BODY", text: "Hi {{1}}, order {{2}} is ready.", example: { body_text: [["Ann", "A-1"]] } },
          { type: "FOOTER", text: "Reply STOP to opt out" },
          {
            type: "BUTTONS",
            buttons: [
              { type: "QUICK_REPLY", text: "Thanks" },
              { type: "URL", text: "Track", url: "https://shop.example/t/{{1}}", example: ["https://shop.example/t/A-1"] },
              { type: "PHONE_NUMBER", text: "Call us", phone_number: "+14155550100" },
            ],
          },
        ],
      }),
    );
    metaId = String(graph.templates.at(-1)!.id);
    expect(r.body.data).toMatchObject({
      name: "order_ready",
      status: "pending",
      rejectedReason: null,
      quality: null,
      source: "provider",
      params: ["body.1", "body.2", "button.1.1"],
    });
    orderId = r.body.data.id;
    expect(await app.deps.db.sql("SELECT provider_template_id AS p FROM templates WHERE id = ?").get(orderId)).toEqual({ p: metaId });
    const got = await app.request("GET", `/templates/${orderId}`);
    expect(got.status).toBe(200);
    expect(got.body.data.status).toBe("pending");
  });

  test("an example missing (or one the template lacks) → 422 with a pointer naming it; nothing sent to Meta", async () => {
    const before = graph.requestsTo("message_templates").length;
    const r = await submit({ name: "promo", body: "Hi {{1}}, {{2}} off", examples: { "body.1": "Ann", "body.9": "x" } });
    expect(r.status).toBe(422);
    expect(r.body.error.code).toBe("VALIDATION_FAILED");
    expect(r.body.error.details).toEqual([
      { pointer: "/examples/body.2", message: "required: an example value for body.2" },
      { pointer: "/examples/body.9", message: "the template takes body.1, body.2" },
    ]);
    const none = await submit({ name: "promo", body: "Hi {{1}}" });
    expect(none.body.error.details).toEqual([{ pointer: "/examples/body.1", message: "required: an example value for body.1" }]);
    expect(graph.requestsTo("message_templates")).toHaveLength(before);
  });

  test("Meta refuses (same name and language) → 502 PROVIDER_ERROR, nothing stored", async () => {
    graph.templates.push({ id: "777", name: "taken", language: "en_US", status: "APPROVED", category: "UTILITY", components: [] });
    const r = await submit({ name: "taken", body: "Hello" });
    expect(r.status).toBe(502);
    expect(r.body.error.code).toBe("PROVIDER_ERROR");
    expect(r.body.error.message).toContain("Content in this language already exists");
    expect((await app.request("GET", "/templates?channel=whatsapp&status=all")).body.data.map((t: { name: string }) => t.name)).toEqual(["order_ready"]);
  });

  test("a send with the pending template → 422 TEMPLATE_NOT_APPROVED", async () => {
    const r = await app.request("POST", "/messages", {
      body: {
        channel: "whatsapp",
        to: { phone: "+14155550123" },
        type: "template",
        template: { templateId: orderId, params: { "body.1": "Ann", "body.2": "A-1", "button.1.1": "A-1" } },
      },
    });
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ code: "TEMPLATE_NOT_APPROVED", details: [{ pointer: "/template", message: "template is pending" }] });
  });

  test("a campaign with the pending template → 422 TEMPLATE_NOT_APPROVED", async () => {
    const r = await app.request("POST", "/campaigns", {
      body: { name: "June", templateId: orderId, audience: { type: "tags", tags: ["vip"] }, askValues: { "body.1": "x", "body.2": "y", "button.1.1": "z" } },
    });
    expect(r.status).toBe(422);
    expect(r.body.error).toMatchObject({ code: "TEMPLATE_NOT_APPROVED", details: [{ pointer: "/templateId", message: "template is pending" }] });
  });

  test("APPROVED by the status webhook → approved, template.status_changed; quality by its own webhook", async () => {
    const seen = statusEvents(app).length;
    expect((await review("order_ready", "APPROVED")).status).toBe(200);
    expect((await app.request("GET", `/templates/${orderId}`)).body.data).toMatchObject({ status: "approved", rejectedReason: null });
    expect(statusEvents(app).slice(seen)).toEqual([
      expect.objectContaining({ template: expect.objectContaining({ id: orderId, status: "approved" }), previousStatus: "pending", previousQuality: null }),
    ]);

    await hook(whatsappPayloads.templateQuality({ wabaId: "WABA_1", id: metaId, name: "order_ready", score: "YELLOW" }));
    expect((await app.request("GET", `/templates/${orderId}`)).body.data).toMatchObject({ status: "approved", quality: "YELLOW" });
    expect(statusEvents(app).slice(seen)).toHaveLength(2);
    expect(statusEvents(app).at(-1)).toMatchObject({ template: { quality: "YELLOW" }, previousStatus: "approved", previousQuality: null });

    // The same news again (Meta retries deliveries) changes nothing and emits nothing.
    await hook(whatsappPayloads.templateQuality({ wabaId: "WABA_1", id: metaId, name: "order_ready", score: "YELLOW" }));
    expect(statusEvents(app).slice(seen)).toHaveLength(2);
  });

  test("REJECTED by the webhook keeps Meta's reason", async () => {
    const r = await submit({ name: "flash_sale", body: "Sale {{1}}", examples: { "body.1": "50%" } });
    const id = r.body.data.id;
    await review("flash_sale", "REJECTED", "INCORRECT_CATEGORY");
    expect((await app.request("GET", `/templates/${id}`)).body.data).toMatchObject({ status: "rejected", rejectedReason: "INCORRECT_CATEGORY" });
    expect(statusEvents(app).at(-1)).toMatchObject({ template: { id, status: "rejected", rejectedReason: "INCORRECT_CATEGORY" }, previousStatus: "pending" });
    // Listed in the default (approved) list? No: only with status=rejected.
    expect((await app.request("GET", "/templates?channel=whatsapp&status=rejected")).body.data.map((t: { id: string }) => t.id)).toEqual([id]);
  });

  test("through sync: Meta's list moves a pending template to approved (quality too), with the event", async () => {
    const r = await submit({ name: "welcome", body: "Welcome {{1}}", examples: { "body.1": "Ann" } });
    const id = r.body.data.id;
    const meta = graph.templates.find((t) => t.name === "welcome")!;
    meta.status = "APPROVED";
    meta.quality_score = { score: "GREEN" };
    const seen = statusEvents(app).length;
    const [result] = await syncAllTemplates(app.deps);
    expect(result).toMatchObject({ accountId: WA });
    expect(graph.requestsTo("WABA_1/message_templates").at(-1)!.query.get("fields")).toBe(
      "id,name,language,status,category,components,rejected_reason,quality_score",
    );
    expect((await app.request("GET", `/templates/${id}`)).body.data).toMatchObject({ status: "approved", quality: "GREEN" });
    // Only welcome changed: order_ready's quality (known from the webhook, not in Meta's list) and flash_sale's
    // rejection reason are kept, so they emit nothing.
    expect(
      statusEvents(app)
        .slice(seen)
        .map((e) => [e.template.name, e.previousStatus, e.template.status]),
    ).toEqual([["welcome", "pending", "approved"]]);
    expect((await app.request("GET", `/templates/${orderId}`)).body.data).toMatchObject({ status: "approved", quality: "YELLOW" });
  });

  test("DELETE: 409 TEMPLATE_IN_USE while a scheduled campaign uses it; then deleted at Meta (exact query) and here", async () => {
    const welcome = (await app.request("GET", "/templates?channel=whatsapp")).body.data.find((t: { name: string }) => t.name === "welcome");
    await app.request("POST", "/contacts", { body: { identities: [{ channel: "whatsapp", value: "+12025550177" }], optIn: true, tags: ["vip"] } });
    const campaign = await app.request("POST", "/campaigns", {
      body: {
        name: "Later",
        templateId: welcome.id,
        audience: { type: "tags", tags: ["vip"] },
        askValues: { "body.1": "friend" },
        scheduledAt: new Date(app.deps.now().getTime() + 86_400_000).toISOString(),
      },
    });
    expect(campaign.body).toMatchObject({ data: { status: "scheduled" } });
    expect(campaign.body.data.status).toBe("scheduled");
    const deletesBefore = graph.requests.filter((q) => q.method === "DELETE").length;
    const refused = await app.request("DELETE", `/templates/${welcome.id}`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("TEMPLATE_IN_USE");
    expect(refused.body.error.message).toContain(campaign.body.data.id);
    expect(graph.requests.filter((q) => q.method === "DELETE")).toHaveLength(deletesBefore);

    expect((await app.request("POST", `/campaigns/${campaign.body.data.id}/cancel`, { body: {} })).status).toBe(200);
    const hsm = String(graph.templates.find((t) => t.name === "welcome")!.id);
    const deleted = await app.request("DELETE", `/templates/${welcome.id}`);
    expect(deleted.status).toBe(200);
    expect(deleted.body.data).toEqual({ id: welcome.id, deleted: true });
    const del = graph.requests.filter((q) => q.method === "DELETE").at(-1)!;
    expect(del.path).toEndWith("WABA_1/message_templates");
    expect([...del.query.entries()]).toEqual([
      ["hsm_id", hsm],
      ["name", "welcome"],
    ]);
    expect(del.raw.length).toBe(0);
    expect(graph.templates.some((t) => t.name === "welcome")).toBe(false);
    expect((await app.request("GET", `/templates/${welcome.id}`)).status).toBe(404);
  });

  test("Meta refuses the delete → 502, the template stays", async () => {
    graph.failNext({ kind: "graph", code: 100 }, { path: "message_templates" });
    const r = await app.request("DELETE", `/templates/${orderId}`);
    expect(r.status).toBe(502);
    expect((await app.request("GET", `/templates/${orderId}`)).status).toBe(200);
  });

  test("GET /templates/{id}: unknown id → 404", async () => {
    expect((await app.request("GET", "/templates/0193a4b2-0000-7000-8000-00000000ffff")).status).toBe(404);
  });
});

describe("sandbox WhatsApp: the review job", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp();
  });
  afterAll(() => app.close());

  const submit = (name: string) =>
    app.request("POST", "/templates", { body: { channel: "whatsapp", name, language: "en", body: "Hi {{1}}", examples: { "body.1": "Ann" } } });

  test("pending at once, approved 2 s later (a durable job), with the event", async () => {
    const r = await submit("order_ready");
    expect(r.status).toBe(201);
    expect(r.body.data).toMatchObject({ status: "pending", source: "provider" });
    expect(await app.deps.queue.listJobs({ type: "templates.sandbox_review" })).toHaveLength(1);
    await app.deps.queue.drain();
    expect((await app.request("GET", `/templates/${r.body.data.id}`)).body.data.status).toBe("pending");
    app.clock.advance(2000);
    await app.deps.queue.drain();
    expect((await app.request("GET", `/templates/${r.body.data.id}`)).body.data).toMatchObject({ status: "approved", quality: "UNKNOWN" });
    expect(statusEvents(app).at(-1)).toMatchObject({ template: { id: r.body.data.id, status: "approved" }, previousStatus: "pending" });
    // …and sendable now.
    await inbound(app, "whatsapp", { phone: "+14155550101" });
    const sent = await app.request("POST", "/messages", {
      body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "template", template: { templateId: r.body.data.id, params: { "body.1": "Ann" } } },
    });
    expect(sent.status).toBe(202);
  });

  test("reject_* is rejected with a reason", async () => {
    const r = await submit("reject_promo");
    app.clock.advance(2000);
    await app.deps.queue.drain();
    expect((await app.request("GET", `/templates/${r.body.data.id}`)).body.data).toMatchObject({ status: "rejected", rejectedReason: "INVALID_FORMAT" });
    expect(statusEvents(app).at(-1)).toMatchObject({ template: { name: "reject_promo", status: "rejected" } });
  });

  test("our own templates (e-mail) are approved at once; WhatsApp-only fields refused there", async () => {
    const ok = await app.request("POST", "/templates", {
      body: { channel: "email", name: "receipt", language: "en", subject: "Receipt", body: "Thanks {{1}}" },
    });
    expect(ok.status).toBe(201);
    expect(ok.body.data.status).toBe("approved");
    const bad = await app.request("POST", "/templates", {
      body: { channel: "telegram", name: "hi", language: "en", body: "Hi {{1}}", examples: { "body.1": "Ann" } },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details).toEqual([{ pointer: "/examples", message: "WhatsApp templates only (they are reviewed by Meta)" }]);
  });

  test("a sandbox template is deleted here only (no provider)", async () => {
    const r = await submit("short_lived");
    expect((await app.request("DELETE", `/templates/${r.body.data.id}`)).status).toBe(200);
    expect((await app.request("GET", `/templates/${r.body.data.id}`)).status).toBe(404);
    app.clock.advance(2000);
    await app.deps.queue.drain(); // the review job finds nothing to review
    expect(await app.deps.queue.listJobs({ dead: true, type: "templates.sandbox_review" })).toEqual([]);
  });
});
