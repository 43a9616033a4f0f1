/**
 * Every example of docs/api.md (each fenced block) is executed against a fresh sandbox appliance and must answer
 * what it shows (issue 41, item 6). The event catalogue is written from the event types (scripts/api-md-events.ts)
 * and checked against real events in openapi.examples.test.ts; every other block is listed below, by its first
 * line, with what runs it — a block nobody runs fails the first test.
 *
 * How a shown answer is read (test/helpers/examples.ts, `expectShown`): a value with "…" stands for any value;
 * `a|b|c` for one of them; an object ending in `…` for "at least these keys"; ids and times for any id and time.
 */
import { afterEach, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { API_MD, withEventTypes } from "../../../scripts/api-md-events";
import { signLicense } from "../../../scripts/sign-license";
import { expectShown, parseShown } from "../../../test/helpers/examples";
import { sandboxSocialAccounts } from "../../../test/helpers/social";
import { ACCOUNTS, createTestApp, sandboxChannels, type TestApp } from "../../../test/helpers/test-app";
import { startReceiver, verifyWithLibrary } from "../../modules/webhooks/webhooks.test-receiver";

const md = readFileSync(API_MD, "utf8");
const devKey = readFileSync(join(import.meta.dir, "../../../test/fixtures/license-dev.private.key"), "utf8");

/** Fenced blocks outside the generated event catalogue: [first line, the block's text]. */
function blocks(): [string, string][] {
  const catalogue = md.slice(md.indexOf("### Event types"), md.indexOf("<!-- /section:webhooks -->"));
  const out: [string, string][] = [];
  for (const m of md.matchAll(/^```[a-z]*\n([\s\S]*?)^```$/gm)) if (!catalogue.includes(m[0])) out.push([m[1]!.split("\n")[0]!, m[1]!]);
  return out;
}
const block = (first: string) => blocks().find(([f]) => f.startsWith(first))?.[1] ?? "";

let app: TestApp;
const fresh = async (o: Parameters<typeof createTestApp>[0] = {}) => (app = await createTestApp(o));
afterEach(() => app?.close());
const templateId = async (channel = "whatsapp") =>
  (await app.request("GET", `/templates?channel=${channel}`)).body.data.find((t: { name: string }) => t.name === "hello_world").id;
/** `curl` of a block → a request of the test app ($KEY is its key, $BASE and localhost:8080 the app). */
function curl(text: string) {
  const line = text.replace(/\\\n\s*/g, " ");
  const url = /"((?:\$BASE|http:\/\/localhost:8080)[^"]*)"/
    .exec(line)![1]!
    .replace(/^(\$BASE|http:\/\/localhost:8080)/, "")
    .replace("$WHATSAPP_ACCOUNT_ID", ACCOUNTS.whatsapp);
  const data = /-d '([^']*)'/.exec(line)?.[1];
  const files = [...line.matchAll(/-F (\w+)=(@?[\w.]+)/g)].map((m) => [m[1]!, m[2]!] as const);
  return { method: /-X (\w+)/.exec(line)?.[1] ?? (data || files.length ? "POST" : "GET"), url, data, files };
}

// The blocks, by first line, and what runs each.
const RUNS: Record<string, () => Promise<void>> = {
  '{"error": {"code": "VALIDATION_FAILED"': async () => {
    await fresh();
    const res = await app.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone: "12" }, type: "text", text: "hi" } });
    expect(res.status).toBe(422);
    expectShown(res.body, parseShown(block('{"error": {"code": "VALIDATION_FAILED"')));
  },
  "{": async () => {
    // The Contact.
    await fresh();
    await app.request("POST", "/custom-fields", { body: { key: "vip", label: "VIP", type: "boolean" } });
    await app.request("POST", "/custom-fields", { body: { key: "plan", label: "Plan", type: "text" } });
    const up = await app.request("POST", "/contacts", {
      body: {
        firstName: "Ada",
        lastName: "Lovelace",
        city: "London",
        country: "GB",
        identities: [
          { channel: "email", value: "ada@example.com" },
          { channel: "instagram", value: "@ada" },
        ],
        tags: ["vip", "london"],
        customFields: { vip: true, plan: "pro" },
      },
    });
    expect(up.status).toBe(201);
    await app.request("POST", `/contacts/${up.body.data.contact.id}/opt-in`, { body: { channels: ["email"] } });
    expectShown((await app.request("GET", `/contacts/${up.body.data.contact.id}`)).body.data, parseShown(blocks().find(([f]) => f === "{")![1]));
  },
  "POST /api/public/v1/contacts/import": async () => {
    await fresh();
    const [head, ndjson] = block("POST /api/public/v1/contacts/import").split("\n\n");
    const started = await app.request("POST", "/contacts/import", { raw: ndjson, headers: { "content-type": head!.split("\n")[1]!.split(": ")[1]! } });
    expect(started.status).toBe(202);
    await app.deps.queue.drain();
    const res = await app.request("GET", `/contacts/imports/${started.body.data.id}`);
    expectShown(res.body.data, parseShown(block('{ "id": "…", "status": "completed"')));
  },
  "POST /api/public/v1/contacts/{id}/merge": async () => {
    // The merge's worked example, every step in order: two contacts, the 409 naming them, the merge.
    await fresh();
    const section = md.slice(md.indexOf("### Merging duplicates"), md.indexOf("### Tags on a contact"));
    const steps = [...section.matchAll(/```(http|json)\n([\s\S]*?)```/g)].map((m) => [m[1]!, m[2]!] as const);
    const made: string[] = [];
    let last: { status: number; body: any } | null = null;
    for (const [kind, text] of steps) {
      if (kind === "json") {
        expectShown(last!.body, parseShown(text));
        continue;
      }
      const [head, json] = text.split("\n\n");
      const [method, path] = head!.split("\n")[0]!.split(" ");
      const body = JSON.parse(json!.replaceAll('"0193…"', JSON.stringify(made[1])));
      last = await app.request(method!, path!.replace("{id}", made[0]!), { body });
      if (last.status === 201) made.push(last.body.data.contact.id);
      if (last.status === 409) expect(last.body.error.details.map((d: { existingContactId: string }) => d.existingContactId)).toEqual(made);
    }
    expect(last!.status).toBe(200);
    expect((await app.request("GET", `/contacts/${made[1]}`)).status).toBe(404);
  },
  '{"data": {"id": "0193…", "status": "queued"': async () => {
    await fresh();
    const res = await app.request("POST", "/messages", {
      body: {
        channel: "whatsapp",
        to: { phone: "+14155550101" },
        type: "template",
        template: { name: "hello_world", params: { "body.1": "Ann" } },
        metadata: { orderId: "A1" },
      },
    });
    expect(res.status).toBe(202);
    expectShown(res.body, parseShown(block('{"data": {"id": "0193…", "status": "queued"')));
  },
  'curl -X POST "http://localhost:8080/hooks/$WHATSAPP_ACCOUNT_ID"': async () => {
    await fresh();
    const c = curl(block('curl -X POST "http://localhost:8080/hooks/'));
    const res = await app.request(c.method, c.url, { body: JSON.parse(c.data!) });
    expect(res.status).toBe(202);
    expect((await app.request("GET", "/contacts")).body.data[0].firstName).toBe("Ann");
  },
  'curl -H "Authorization: Bearer $KEY" -F file=@photo.jpg': async () => {
    await fresh();
    const c = curl(block('curl -H "Authorization: Bearer $KEY" -F file=@photo.jpg'));
    const form = new FormData();
    // A real JPEG's first bytes (the upload compares the declared type with the content).
    const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, ...new Array(200).fill(0), 0xff, 0xd9]);
    for (const [k, v] of c.files) form.append(k, v.startsWith("@") ? new File([jpeg], v.slice(1), { type: "image/jpeg" }) : v);
    const res = await app.app.handle(
      new Request(`http://localhost${c.url}`, { method: c.method, headers: { authorization: `Bearer ${app.key}` }, body: form }),
    );
    expect(res.status).toBe(201);
  },
  "POST /api/public/v1/contacts": async () => {
    // The worked example, from its first step: two contacts tagged newsletter (one opted in), the estimate, the create.
    await fresh();
    const steps = [...md.slice(md.indexOf("### A worked example"), md.indexOf("### The request")).matchAll(/```(http|json)\n([\s\S]*?)```/g)].map((m) => [
      m[1],
      m[2]!,
    ]);
    const id = await templateId();
    let last: { status: number; body: any } | null = null;
    for (const [kind, text] of steps) {
      if (kind === "json") {
        expectShown(last!.body, parseShown(text));
        continue;
      }
      const [first, ...rest] = text.split("\n");
      const [method, path] = first!.split(" ");
      const body = JSON.parse(rest.join("\n").replaceAll('"0193…"', JSON.stringify(id)));
      last = await app.request(method!, path!, { body });
      expect({ path, error: last.body?.error }).toEqual({ path, error: undefined });
    }
    expect(last!.status).toBe(201);
    expect(last!.body.data.status).toBe("scheduled");
  },
  "POST /api/public/v1/messages": async () => {
    // The interactive worked example: the contact wrote in, buttons sent, the tap simulated, message.received.
    await fresh();
    await app.request("POST", `/hooks/${ACCOUNTS.whatsapp}`, { body: { from: { phone: "+14155550101" }, text: "hi" } });
    const section = md.slice(md.indexOf("### Interactive messages"), md.indexOf("### Templates"));
    const [send, accepted, tap, received] = [...section.matchAll(/```(?:http|json)\n([\s\S]*?)```/g)].map((m) => m[1]!);
    const body = (text: string) => JSON.parse(text.split("\n").slice(1).join("\n"));
    const sent = await app.request("POST", "/messages", { body: body(send!) });
    expect(sent.status).toBe(202);
    expectShown(sent.body, parseShown(accepted!));
    await app.deps.queue.drain();
    const tapped = await app.request("POST", `/hooks/${ACCOUNTS.whatsapp}`, {
      body: JSON.parse(JSON.stringify(body(tap!)).replace('"0193…"', JSON.stringify(sent.body.data.id))),
    });
    expect(tapped.status).toBe(202);
    const event = app.emitted.filter((e) => e.type === "message.received").at(-1)!;
    const shown = parseShown(received!) as { data: { message: { content: { interactive: { inReplyTo: string } } } } };
    expectShown({ type: event.type, ...JSON.parse(JSON.stringify({ data: event.data })) }, shown);
    expect(JSON.parse(JSON.stringify(event.data)).message.content.interactive.inReplyTo).toBe(sent.body.data.id);
  },
  'curl -X POST "$BASE/messages" -H "Authorization: Bearer $KEY"': async () => {
    // Send later: "remind tomorrow at 10", sent on the day the guide says, then canceled.
    await fresh({ start: new Date("2026-06-01T12:00:00Z") });
    const send = curl(block('curl -X POST "$BASE/messages"'));
    const res = await app.request(send.method, send.url, { body: JSON.parse(send.data!), headers: { "Idempotency-Key": "remind-AP-7" } });
    expect(res.status).toBe(202);
    expectShown(res.body, parseShown(block('{"data": {"id": "0193…", "status": "scheduled"')));
    const id = res.body.data.id;
    expect((await app.request("GET", "/messages?status=scheduled")).body.data.map((m: { id: string }) => m.id)).toEqual([id]);
    const shown = (await app.request("GET", `/messages/${id}`)).body.data;
    expect([shown.scheduledAt, shown.statusTimes.queuedAt]).toEqual(["2026-06-02T07:00:00.000Z", null]);
    const cancel = curl(block('curl -X POST "$BASE/messages/$MESSAGE_ID/cancel"'));
    const canceled = await app.request(cancel.method, cancel.url.replace("$MESSAGE_ID", id));
    expect(canceled.status).toBe(200);
    expectShown(canceled.body, parseShown(block('{"data": {"id": "0193…", "status": "canceled"')));
    expect(app.emitted.filter((e) => e.type === "message.canceled").length).toBe(1);
  },
  "POST /api/public/v1/templates": async () => {
    // The WhatsApp template worked example: submitted on the sandbox, pending, approved 2 s later.
    await fresh();
    const section = md.slice(md.indexOf("#### WhatsApp templates"), md.indexOf("### Media"));
    const [submit, answer, event] = [...section.matchAll(/```(?:http|json)\n([\s\S]*?)```/g)].map((m) => m[1]!);
    const res = await app.request("POST", "/templates", { body: JSON.parse(submit!.split("\n").slice(1).join("\n")) });
    expect(res.status).toBe(201);
    expectShown(res.body, parseShown(answer!));
    app.clock.advance(2000);
    await app.deps.queue.drain();
    const changed = app.emitted.filter((e) => e.type === "template.status_changed").at(-1)!;
    expectShown({ type: changed.type, ...JSON.parse(JSON.stringify({ data: changed.data })) }, parseShown(event!));
  },
  "POST /api/public/v1/segments/count": async () => {
    // The segments worked example: Ayşe wrote in, two Istanbul contacts opted in, the count, the save, the estimate.
    await fresh();
    const section = md.slice(md.indexOf("### A segment, worked"), md.indexOf("### Segments as campaign audiences"));
    const id = await templateId();
    let last: { status: number; body: any } | null = null;
    let segmentId = "";
    for (const [, kind, text] of section.matchAll(/```(http|json)\n([\s\S]*?)```/g)) {
      if (kind === "json") {
        expectShown(last!.body, parseShown(text!));
        continue;
      }
      const [first, ...rest] = text!.split("\n");
      const [method, path] = first!.split(" ");
      const body = JSON.parse(
        rest
          .join("\n")
          .replace('"templateId": "0193…"', `"templateId": ${JSON.stringify(id)}`)
          .replace('"segmentId": "0193…"', `"segmentId": ${JSON.stringify(segmentId)}`),
      );
      last = await app.request(method!, path!.replace("{channelAccountId}", ACCOUNTS.whatsapp), { body });
      expect({ path, error: last.body?.error }).toEqual({ path, error: undefined });
      if (path === "/api/public/v1/segments") segmentId = last.body.data.id;
    }
    expect(last!.body.data.sendable).toBe(1);
    const members = await app.request("GET", `/segments/${segmentId}/contacts`);
    expect(members.body.data.map((c: { firstName: string }) => c.firstName)).toEqual(["Ayşe"]);
  },
  "[pipeline]": async () => {
    const toml = Bun.TOML.parse(block("[pipeline]")) as Record<string, unknown>;
    await fresh({ config: toml });
    writeFileSync(app.config.license.file, signLicense({ company: "default", modules: ["pipeline"], expiresAt: "2099-01-01T00:00:00Z", privateKey: devKey }));
    const res = await app.request("GET", "/pipeline");
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({ template: "recruiting", terms: { record: "Applicant" } });
  },
  '{"data": {"source": {"id": "0193…", "name": "Spring poster"': async () => {
    await fresh({ config: { channels: sandboxChannels().map((c) => (c.channel === "whatsapp" ? { ...c, chat_handle: "15550100000" } : c)) } });
    writeFileSync(app.config.license.file, signLicense({ company: "default", modules: ["sources"], expiresAt: "2099-01-01T00:00:00Z", privateKey: devKey }));
    const source = await app.request("POST", "/sources", { body: { name: "Spring poster", type: "qr", channel: "whatsapp", code: "spring24" } });
    expect(source.status).toBe(201);
    // A referral as a provider sends it (the sandbox simulation passes `referral` on).
    const referral = { ref: "spring24", source: "SHORTLINK", type: "OPEN_THREAD" };
    expect((await app.request("POST", `/hooks/${ACCOUNTS.whatsapp}`, { body: { from: { phone: "+14155550101" }, text: "Hi!", referral } })).status).toBe(202);
    const contactId = (await app.request("GET", "/contacts")).body.data[0].id;
    expectShown(
      (await app.request("GET", `/contacts/${contactId}/source`)).body,
      parseShown(block('{"data": {"source": {"id": "0193…", "name": "Spring poster"')),
    );
  },
  "POST /webhooks": async () => {
    await fresh();
    const [request, answer] = block("POST /webhooks").split(/\n\n(?=\d{3} )/);
    const res = await app.request("POST", "/webhooks", { body: JSON.parse(request!.slice(request!.indexOf("\n"))) });
    expect(res.status).toBe(Number(answer!.slice(0, 3)));
    expectShown(res.body, parseShown(answer!.slice(4)));
  },
  "POST /hooks/switchboard HTTP/1.1": async () => {
    // What a delivery looks like, and the library's verification of it (the ts block below).
    await fresh({ config: { webhooks: { allow: ["127.0.0.0/8"] } } });
    const receiver = startReceiver();
    try {
      const endpoint = (await app.request("POST", "/webhooks", { body: { url: receiver.url, events: ["message.sent"] } })).body.data;
      await app.request("POST", "/messages", {
        body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "template", template: { name: "hello_world", params: { "body.1": "Ann" } } },
      });
      for (let i = 0; i < 5 && !receiver.received.length; i++) await app.deps.queue.drain();
      const got = receiver.received[0]!;
      const shown = block("POST /hooks/switchboard HTTP/1.1").split("\n\n");
      for (const h of shown[0]!.split("\n").slice(1)) {
        const name = h.slice(0, h.indexOf(":"));
        expect({ name, present: name in got.headers }).toEqual({ name, present: true });
      }
      expect(got.headers["user-agent"]).toStartWith("Switchboard-Webhooks/");
      expectShown(JSON.parse(got.body), parseShown(shown[1]!));
      // The verification snippet, as written (its `rawBody`, `id`, `ts`, `sig` are the received request's).
      const snippet = block('import { Webhook } from "standardwebhooks";');
      expect(snippet).toContain('wh.verify(rawBody, { "webhook-id": id, "webhook-timestamp": ts, "webhook-signature": sig })');
      expect(verifyWithLibrary(endpoint.secret, got, app.clock.now())).toMatchObject({ type: "message.sent" });
    } finally {
      receiver.stop();
    }
  },
  '{"data": [{': async () => {
    // The delivery log, after one failed attempt (the receiver answers 503) and its retry due.
    await fresh({ config: { webhooks: { allow: ["127.0.0.0/8"] } } });
    const receiver = startReceiver(() => new Response("upstream unavailable", { status: 503 }));
    try {
      const endpoint = (await app.request("POST", "/webhooks", { body: { url: receiver.url, events: ["message.sent"] } })).body.data;
      await app.request("POST", "/messages", {
        body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "template", template: { name: "hello_world", params: { "body.1": "Ann" } } },
      });
      for (let i = 0; i < 5 && !receiver.received.length; i++) await app.deps.queue.drain();
      app.clock.advance(6_000); // the second attempt, 5 s (±10 %) later
      for (let i = 0; i < 5 && receiver.received.length < 2; i++) await app.deps.queue.drain();
      const log = await app.request("GET", `/webhooks/${endpoint.id}/deliveries`);
      expectShown(log.body, parseShown(block('{"data": [{')));
    } finally {
      receiver.stop();
    }
  },
  '{"accountIds": ["…ig", "…x", "…tiktok"]': async () => {
    await fresh({ config: { social_accounts: sandboxSocialAccounts() } });
    const accounts = Object.fromEntries(
      (await app.request("GET", "/social/accounts")).body.data.map((a: { platform: string; id: string }) => [a.platform, a.id]),
    );
    const video = new FormData();
    video.append(
      "file",
      new File([new Uint8Array([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70, 0x6d, 0x70, 0x34, 0x32, ...new Array(64).fill(0)])], "v.mp4", { type: "video/mp4" }),
    );
    const media = (await (
      await app.app.handle(
        new Request("http://localhost/api/public/v1/media", { method: "POST", headers: { authorization: `Bearer ${app.key}` }, body: video }),
      )
    ).json()) as { data?: { id: string } };
    const later = new Date(app.clock.now().getTime() + 86_400_000).toISOString();
    const text = block('{"accountIds": ["…ig", "…x", "…tiktok"]')
      .replaceAll('"…ig"', JSON.stringify(accounts.instagram))
      .replaceAll('"…x"', JSON.stringify(accounts.x))
      .replaceAll('"…tiktok"', JSON.stringify(accounts.tiktok))
      .replaceAll('"0197…"', JSON.stringify(media.data?.id))
      .replace(/"scheduledAt": "[^"]*"/, `"scheduledAt": ${JSON.stringify(later)}`);
    const res = await app.request("POST", "/social/posts", { body: JSON.parse(text) });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 201, error: undefined });
    expect(res.body.data.status).toBe("scheduled");
  },
};

test("every block of docs/api.md outside the event catalogue has a runner below", () => {
  // Run inside another block's runner: the worked example's later steps, the import's answer, the verification snippet.
  const within = [
    "POST /api/public/v1/campaigns",
    '{"data": {"channel": "whatsapp", "matched"',
    '{"data": {"id": "0193…", "status": "queued", "conversationId"',
    // (the send-later example's answer, cancel and its answer)
    '{"data": {"id": "0193…", "status": "scheduled"',
    'curl -X POST "$BASE/messages/$MESSAGE_ID/cancel"',
    '{"data": {"id": "0193…", "status": "canceled"',
    "POST /hooks/{channelAccountId}",
    '{"type": "message.received"',
    '{"data": {"id": "0193…", "channel": "whatsapp", "name": "order_ready"',
    '{"type": "template.status_changed"',
    '{ "id": "…", "status": "completed"',
    "import { Webhook }",
    // (the segments worked example)
    "POST /api/public/v1/segments",
    '{"data": {"count"',
    '{"data": {"id": "0193…", "name": "Istanbul, active"',
  ];
  const runnable = (first: string) => first === "{" || [...Object.keys(RUNS), ...within].some((k) => first.startsWith(k));
  expect(
    blocks()
      .map(([first]) => first)
      .filter((f) => !runnable(f)),
  ).toEqual([]);
});

test("the event catalogue of docs/api.md is the event types' (bun scripts/api-md-events.ts)", () => {
  expect(withEventTypes(md) === md).toBe(true);
});

for (const [first, run] of Object.entries(RUNS)) test(`docs/api.md: ${first.slice(0, 60)}`, run, 30_000);
