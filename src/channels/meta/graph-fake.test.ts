/**
 * The Graph fake is reused by end-to-end tests of the compiled appliance: its own behaviour (auto status
 * webhooks, failure targeting, paging, signatures) is pinned here.
 */
import { afterAll, describe, expect, test } from "bun:test";
import { GraphFake, hubSignature, whatsappPayloads } from "../../../test/fakes/graph.fake";
import { verifyHubSignature } from "./meta.signature";

const received: { headers: Headers; body: string }[] = [];
const sink = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  async fetch(req) {
    received.push({ headers: req.headers, body: await req.text() });
    return new Response("ok");
  },
});
const sinkUrl = `http://127.0.0.1:${sink.port}/hooks/x`;
afterAll(() => sink.stop(true));

const waSend = (fake: GraphFake, to = "4915112345678") =>
  fetch(`${fake.url}/PHONE/messages`, {
    method: "POST",
    headers: { authorization: "Bearer t", "content-type": "application/json" },
    body: JSON.stringify({ messaging_product: "whatsapp", recipient_type: "individual", to, type: "text", text: { body: "hi" } }),
  });

describe("GraphFake", () => {
  test("autoStatuses: signed sent+delivered webhooks for each WhatsApp send", async () => {
    received.length = 0;
    const fake = new GraphFake({ webhook: { url: sinkUrl, appSecret: "s3cret" }, autoStatuses: ["sent", "delivered"] });
    const answer = (await (await waSend(fake)).json()) as { messages: { id: string }[]; contacts: { wa_id: string }[] };
    await fake.settle();
    expect(answer.contacts[0].wa_id).toBe("4915112345678");
    expect(received.map((r) => JSON.parse(r.body).entry[0].changes[0].value.statuses[0].status)).toEqual(["sent", "delivered"]);
    for (const r of received) {
      expect(JSON.parse(r.body).entry[0].changes[0].value.statuses[0].id).toBe(answer.messages[0].id);
      expect(verifyHubSignature({ appSecret: "s3cret", rawBody: new TextEncoder().encode(r.body), header: r.headers.get("x-hub-signature-256") })).toBe(true);
    }
    await fake.stop();
  });

  test("failNext targets a path and repeats `times`; other paths are served normally", async () => {
    const fake = new GraphFake();
    fake.failNext({ kind: "http", status: 503 }, { path: "/messages", times: 2 });
    const templates = await fetch(`${fake.url}/WABA/message_templates`, { headers: { authorization: "Bearer t" } });
    expect(templates.status).toBe(200);
    expect((await waSend(fake)).status).toBe(503);
    expect((await waSend(fake)).status).toBe(503);
    expect((await waSend(fake)).status).toBe(200);
    await fake.stop();
  });

  test("Graph errors carry Graph's body and status; no token → 190", async () => {
    const fake = new GraphFake();
    fake.failNext({ kind: "graph", code: 131047 });
    const r = await waSend(fake);
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { code: number; type: string; fbtrace_id: string } }).error).toMatchObject({
      code: 131047,
      type: "OAuthException",
      fbtrace_id: expect.any(String),
    });
    const anon = await fetch(`${fake.url}/PHONE/messages`, { method: "POST", body: "{}" });
    expect(anon.status).toBe(401);
    await fake.stop();
  });

  test("Send API upload endpoints answer with ids", async () => {
    const fake = new GraphFake();
    const r = await fetch(`${fake.url}/PAGE/message_attachments`, {
      method: "POST",
      headers: { authorization: "Bearer t", "content-type": "application/json" },
      body: JSON.stringify({ message: { attachment: { type: "image", payload: { url: "https://x/a.png", is_reusable: true } } } }),
    });
    expect(await r.json()).toEqual({ attachment_id: expect.stringMatching(/^\d+$/) });
    await fake.stop();
  });

  test("pushWebhook signs exactly the bytes it sends", async () => {
    received.length = 0;
    const fake = new GraphFake();
    const payload = whatsappPayloads.text({ phoneNumberId: "P", from: "111", text: "héllo" });
    await fake.pushWebhook({ url: sinkUrl, payload, appSecret: "k" });
    expect(received[0].headers.get("x-hub-signature-256")).toBe(hubSignature({ appSecret: "k", body: received[0].body }));
    await fake.stop();
  });
});
