/**
 * The OpenAPI document as integrators use it: it must pass a strict JSON Schema 2020-12 validator and
 * Redocly's lint (config: .redocly.yaml, each disabled rule justified there), and a client generated with
 * openapi-typescript must type-check a small openapi-fetch program that then runs against the live app on
 * loopback (send a message, page contacts with a numeric limit, read a campaign).
 */
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import openapiTS, { astToString } from "openapi-typescript";
import { eventsOf } from "../../../test/helpers/messaging";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { FAILURE_REASONS } from "../../channels/channel.types";
import { EVENT_TYPES } from "../../events";

const ROOT = resolve(import.meta.dir, "../../..");
let app: TestApp;
let doc: any;

beforeAll(async () => {
  app = await createTestApp();
  const res = await app.request("GET", "/api/public/v1/openapi.json", { key: null });
  expect(res.status).toBe(200);
  doc = res.body;
});
afterAll(() => app.close());

const ops = () => Object.entries<any>(doc.paths).flatMap(([path, item]) => Object.entries<any>(item).map(([method, op]) => ({ path, method, op })));

describe("the document", () => {
  test("is valid OpenAPI 3.1 under a strict JSON Schema 2020-12 validator", async () => {
    const result = await new Validator().validate(structuredClone(doc));
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  test("passes redocly lint with no errors and no warnings", () => {
    const dir = join(ROOT, "node_modules/.cache/openapi-test");
    mkdirSync(dir, { recursive: true });
    const file = join(dir, "openapi.json");
    writeFileSync(file, JSON.stringify(doc));
    const run = Bun.spawnSync([join(ROOT, "node_modules/.bin/redocly"), "lint", file, "--config", join(ROOT, ".redocly.yaml"), "--format", "stylish"], {
      cwd: ROOT,
    });
    const out = run.stdout.toString() + run.stderr.toString();
    if (!/Your API description is valid/.test(out) || /warning|error/i.test(out.replace(/Deprecation warning[\s\S]*?╝/g, "").replace(/validated in/, "")))
      console.log(out);
    expect(run.exitCode).toBe(0);
    expect(out).toMatch(/Woohoo! Your API description is valid/);
    expect(out).not.toMatch(/You have \d+ warning/);
  });

  test("names its resources and references them; no $id anywhere", () => {
    const s = JSON.stringify(doc);
    expect(s).not.toContain('"$id"');
    for (const name of [
      "Error",
      "Message",
      "MessageAccepted",
      "Contact",
      "Conversation",
      "Campaign",
      "SocialPost",
      "PipelineRecord",
      "PipelineTask",
      "WebhookEndpoint",
      "Media",
      "Template",
      "Money",
    ])
      expect(doc.components.schemas[name]).toBeDefined();
    expect(s.split('"#/components/schemas/Error"').length).toBeGreaterThan(50);
  });

  test("integers are integers: no string|integer coercion unions, limit is numeric, no invented defaults", () => {
    const s = JSON.stringify(doc);
    expect(s).not.toMatch(/"format":"(integer|number|numeric)"/);
    const limit = doc.paths["/api/public/v1/contacts"].get.parameters.find((p: any) => p.name === "limit");
    expect(limit.schema.type).toBe("integer");
    expect(s).not.toContain('"default":"File"');
    expect(s).not.toContain('"default":"opted_in"');
    expect(JSON.stringify(doc.components.schemas.Contact)).not.toContain('"default"');
  });

  test("every operation has a description, an operationId and declares its security and error codes", () => {
    for (const { path, method, op } of ops()) {
      expect({ path, method, description: !!op.description?.trim() }).toEqual({ path, method, description: true });
      expect(op.operationId).toBeTruthy();
      expect(Array.isArray(op.security)).toBe(true);
      if (path.startsWith("/api/public/v1/") && op.security.length) {
        expect(op.responses["401"]).toBeDefined();
        expect(op.responses["429"].headers["Retry-After"]).toBeDefined();
        expect(op.parameters.some((p: any) => p.$ref === "#/components/parameters/XRequestId")).toBe(true);
        if (method === "post" || method === "patch" || method === "put")
          expect({ path, method, idem: op.parameters.some((p: any) => p.$ref === "#/components/parameters/IdempotencyKey") }).toEqual({
            path,
            method,
            idem: true,
          });
      }
      for (const [status, r] of Object.entries<any>(op.responses)) if (Number(status) >= 400) expect(r.description).not.toContain("…");
    }
  });

  test("operations name their scope and their 422 rule codes", () => {
    const send = doc.paths["/api/public/v1/messages"].post;
    expect(send.security).toEqual([{ bearer: ["messages:send"] }, { apiKey: ["messages:send"] }]);
    const codes = send.responses["422"].content["application/json"].schema.allOf[1].properties.error.properties.code.enum;
    expect(codes).toEqual(expect.arrayContaining(["VALIDATION_FAILED", "MESSAGING_WINDOW_CLOSED", "CHANNEL_ACCOUNT_MISSING", "CONTACT_BLOCKED"]));
    expect(send.requestBody.content["application/json"].examples).toBeDefined();
    expect(doc.paths["/api/public/v1/openapi.json"].get).toBeDefined();
  });

  test("uploads are multipart only, imports take NDJSON or CSV, media content is binary", () => {
    expect(Object.keys(doc.paths["/api/public/v1/media"].post.requestBody.content)).toEqual(["multipart/form-data"]);
    expect(Object.keys(doc.paths["/api/public/v1/contacts/import"].post.requestBody.content).sort()).toEqual(["application/x-ndjson", "text/csv"]);
    const content = doc.paths["/api/public/v1/media/{id}/content"].get.responses["200"].content;
    expect(Object.keys(content)).toEqual(["application/octet-stream"]);
    expect(content["application/octet-stream"].schema).toEqual({ type: "string", contentMediaType: "application/octet-stream" });
  });
});

describe("what a first integrator needs (issue 41)", () => {
  const schemas = () => doc.components.schemas;
  const codesOf = (op: any, status: string) => op.responses[status]?.content["application/json"].schema.allOf[1].properties.error.properties.code.enum;

  test("webhooks: every event type with its payload schema and the Standard Webhooks headers", () => {
    expect(Object.keys(doc.webhooks).sort()).toEqual(EVENT_TYPES.map((e) => e.name).sort());
    for (const e of EVENT_TYPES) {
      const op = doc.webhooks[e.name].post;
      const ref = op.requestBody.content["application/json"].schema.$ref as string;
      const body = schemas()[ref.replace("#/components/schemas/", "")];
      expect(body.properties.type.const).toBe(e.name);
      expect(body.required).toEqual(["type", "timestamp", "data"]);
      expect(Object.keys(body.properties.data.properties).sort()).toEqual(Object.keys(e.example).sort());
      expect(op.parameters.filter((p: any) => p.in === "header" && p.required).map((p: any) => p.name)).toEqual([
        "webhook-id",
        "webhook-timestamp",
        "webhook-signature",
      ]);
      expect(op.requestBody.content["application/json"].example.data).toEqual(e.example);
    }
    expect(schemas().MessageSentEvent.properties.data.properties.message).toEqual({ $ref: "#/components/schemas/Message" });
  });

  test("X-API-Key is a security scheme beside bearer, on every operation that takes a key, and the API takes it", async () => {
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: "apiKey", in: "header", name: "X-API-Key" });
    for (const { path, method, op } of ops())
      if (op.security.length)
        expect({ path, method, schemes: op.security.map((s: any) => Object.keys(s)[0]) }).toEqual({ path, method, schemes: ["bearer", "apiKey"] });
    const res = await app.request("GET", "/me", { key: null, headers: { "x-api-key": app.key } });
    expect(res.status).toBe(200);
  });

  test("closed sets are enums: priceType, error.reason, the social {platform}", () => {
    const priceTypes = ["wa_template_text", "x_dm_campaign", "email_campaign", "tg_text", "tg_media", "free"].sort();
    expect([...schemas().MessageAccepted.properties.priceType.enum].sort()).toEqual(priceTypes);
    expect([...schemas().Message.properties.priceType.enum].sort()).toEqual(priceTypes);
    expect(schemas().Message.properties.error.properties.reason.enum).toEqual([...FAILURE_REASONS]);
    const platform = doc.paths["/api/public/v1/social/analytics/{platform}"].get.parameters.find((p: any) => p.name === "platform");
    expect(platform.schema.enum).toEqual(["instagram", "facebook", "x", "tiktok"]);
  });

  test("the send body's prose rules are schema keywords, and the text limits are in the description", () => {
    const body = doc.paths["/api/public/v1/messages"].post.requestBody.content["application/json"].schema.properties;
    expect(body.to.minProperties).toBe(1);
    expect(body.media.oneOf).toEqual([{ required: ["mediaId"] }, { required: ["url"] }]);
    expect(body.template.oneOf).toEqual([{ required: ["templateId"] }, { required: ["name"] }]);
    expect(body.email.anyOf).toEqual([{ required: ["html"] }, { required: ["text"] }]);
    for (const limit of ["1,000 (instagram)", "2,000 (messenger)", "4,096 (whatsapp, telegram)", "6,000 (tiktok)", "10,000 (x)"])
      expect(body.text.description).toContain(limit);
  });

  test("the routes it lacked: QR codes, the sandbox simulation; Idempotency-Key on PUT; 503 on every write", () => {
    expect(Object.keys(doc.paths["/api/public/v1/sources/{id}/qr.svg"].get.responses["200"].content)).toEqual(["image/svg+xml"]);
    expect(Object.keys(doc.paths["/api/public/v1/sources/{id}/qr.png"].get.responses["200"].content)).toEqual(["image/png"]);
    const hook = doc.paths["/hooks/{channelAccountId}"].post;
    expect(hook.tags).toEqual(["Sandbox simulation"]);
    expect(hook.security).toEqual([{ bearer: ["messages:send"] }, { apiKey: ["messages:send"] }]);
    const put = doc.paths["/api/public/v1/contacts/{id}/source"].put;
    expect(put.parameters).toContainEqual({ $ref: "#/components/parameters/IdempotencyKey" });
    expect(codesOf(put, "409")).toContain("IDEMPOTENCY_CONFLICT");
    for (const { path, method, op } of ops()) {
      if (!path.startsWith("/api/public/v1/") || !op.security.length) continue;
      const writes = ["post", "put", "patch", "delete"].includes(method);
      expect({ path, method, codes: codesOf(op, "503") ?? null }).toEqual({ path, method, codes: writes ? ["STORAGE_UNAVAILABLE"] : null });
      if (writes) expect(op.responses["503"].headers["Retry-After"]).toBeDefined();
    }
  });
});

describe("/docs works with no internet", () => {
  test("the page loads only its own assets, hides cloud-only buttons and tries requests on the serving origin", async () => {
    const res = await app.request("GET", "/docs", { key: null });
    expect(res.status).toBe(200);
    const html = res.body as string;
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).toContain('<script src="/docs/scalar.js">');
    expect(html).toContain("withDefaultFonts: false");
    expect(html).toContain("agent: { disabled: true }");
    expect(html).toContain('showDeveloperTools: "never"');
    expect(html).toContain('proxyUrl: ""');
    expect(html).toContain("servers: [{ url: window.location.origin");
    expect(html).toContain('url: "/api/public/v1/openapi.json"');
  });
  test("the guide is served from the binary", async () => {
    const res = await app.request("GET", "/docs/guide", { key: null });
    expect(res.status).toBe(200);
    for (const part of ["Authentication", "Idempotency", "Pagination", "Webhook signatures"]) expect(res.body).toContain(part);
    expect(res.body).not.toMatch(/src="https?:|href="https?:/);
  });
});

describe("a generated client", () => {
  test("type-checks an openapi-fetch program that runs against the live app", async () => {
    const dir = join(ROOT, "node_modules/.cache/openapi-client");
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "schema.d.ts"), astToString(await openapiTS(structuredClone(doc))));
    writeFileSync(join(dir, "program.ts"), PROGRAM);
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          target: "ESNext",
          module: "ESNext",
          moduleResolution: "bundler",
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: [],
          lib: ["ESNext", "DOM"],
        },
        files: ["program.ts"],
      }),
    );
    const tsc = Bun.spawnSync([join(ROOT, "node_modules/.bin/tsc"), "-p", join(dir, "tsconfig.json")], { cwd: dir });
    expect(tsc.stdout.toString()).toBe("");
    expect(tsc.exitCode).toBe(0);

    // The program, over real HTTP on loopback.
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => app.app.handle(req) });
    try {
      await app.request("POST", "/contacts", {
        body: { identities: [{ channel: "whatsapp", value: "+14155550199" }], tags: ["vip"], optIn: true, firstName: "Ann" },
      });
      const { run } = await import(join(dir, "program.ts"));
      const out = await run(`http://127.0.0.1:${server.port}`, app.key);
      expect(out.messageStatus).toBe("queued");
      expect(out.pageLimit).toBe(1);
      expect(typeof out.pageLimit).toBe("number");
      expect(out.campaignName).toBe("June");
      expect(out.errorCode).toBe("VALIDATION_FAILED");

      // A real message.sent, as an endpoint receives it, read through the generated webhook type.
      await app.deps.queue.drain();
      const sent = eventsOf(app, "message.sent")[0]!;
      const { describeSent } = await import(join(dir, "program.ts"));
      expect(describeSent({ type: sent.type, timestamp: new Date().toISOString(), data: sent.data })).toBe("message.sent sent whatsapp hello_world");
    } finally {
      server.stop(true);
    }
  }, 30_000);
});

/** What an integrator writes: typed calls only (a type error fails the tsc step above). */
const PROGRAM = `
import createClient from "openapi-fetch";
import type { paths, components, webhooks } from "./schema";

type Message = components["schemas"]["MessageAccepted"];
type MessageSent = webhooks["message.sent"]["post"]["requestBody"]["content"]["application/json"];

/** A webhook receiver's handler, typed by the document's \`webhooks\` section. */
export function describeSent(event: MessageSent): string {
  const m = event.data.message;
  const status: "scheduled" | "queued" | "sent" | "delivered" | "read" | "failed" | "canceled" | "received" = m.status;
  const template = typeof m.content.template === "object" && m.content.template ? (m.content.template as { name?: string }).name : "";
  return [event.type, status, m.channel, template].join(" ");
}
type Campaign = components["schemas"]["Campaign"];

export async function run(baseUrl: string, key: string) {
  const api = createClient<paths>({ baseUrl, headers: { Authorization: "Bearer " + key } });

  const sent = await api.POST("/api/public/v1/messages", {
    params: { header: { "Idempotency-Key": "openapi-client-1" } },
    body: { channel: "whatsapp", to: { phone: "+14155550199" }, type: "template", template: { name: "hello_world", params: { "body.1": "Ann" } } },
  });
  if (!sent.data) throw new Error("send failed: " + JSON.stringify(sent.error));
  const message: Message = sent.data.data;

  const page = await api.GET("/api/public/v1/contacts", { params: { query: { limit: 1 } } });
  if (!page.data) throw new Error("list failed");
  const limit: number = page.data.page.limit;
  const firstIdentity: string | undefined = page.data.data[0]?.identities[0]?.value;

  const templates = await api.GET("/api/public/v1/templates", { params: { query: { channel: "whatsapp" } } });
  const templateId = templates.data?.data.find((t) => t.name === "hello_world")?.id;
  if (!templateId) throw new Error("no template");
  const created = await api.POST("/api/public/v1/campaigns", {
    body: { name: "June", templateId, audience: { type: "tags", tags: ["vip"] }, askValues: { "body.1": "Sale" } },
  });
  if (!created.data) throw new Error("campaign failed: " + JSON.stringify(created.error));
  const read = await api.GET("/api/public/v1/campaigns/{id}", { params: { path: { id: created.data.data.id } } });
  if (!read.data) throw new Error("read failed");
  const campaign: Campaign = read.data.data;

  const bad = await api.POST("/api/public/v1/messages", { body: { channel: "whatsapp", to: {}, type: "text", text: "" } });
  const errorCode: string | undefined = bad.error?.error.code;

  return { messageStatus: message.status, pageLimit: limit, firstIdentity, campaignName: campaign.name, errorCode };
}
`;
