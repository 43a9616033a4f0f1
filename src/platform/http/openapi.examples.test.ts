/**
 * Every example the OpenAPI document shows is executed against a fresh sandbox appliance and must answer what
 * the document says (issue 41, item 6):
 *   - each request example of an operation gets the operation's success status, and the response example of
 *     the same name (or the only one) the answer's shape and values, ids and times aside;
 *   - each event example of the `webhooks` section has the keys of the event a real flow emits;
 *   - the field examples of named schemas are values the API really answers.
 * A precondition an example states in its summary (the contact wrote in) is done first, as a reader would.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventsOf, inbound } from "../../../test/helpers/messaging";
import { expectSameShape } from "../../../test/helpers/examples";
import { ACCOUNTS, createTestApp, sandboxChannels, type TestApp } from "../../../test/helpers/test-app";
import { EVENT_TYPES } from "../../events";

let doc: any;
beforeAll(async () => {
  const app = await createTestApp();
  doc = (await app.request("GET", "/api/public/v1/openapi.json", { key: null })).body;
  await app.close();
});

/** Preconditions stated by an example's summary, by `METHOD path#example`. */
const BEFORE: Record<string, (app: TestApp) => Promise<unknown>> = {
  "POST /api/public/v1/messages#text": (app) => inbound(app, "whatsapp", { phone: "+14155550101" }),
  "POST /api/public/v1/messages#buttons": (app) => inbound(app, "whatsapp", { phone: "+14155550101" }),
  "POST /api/public/v1/messages#list": (app) => inbound(app, "telegram", { handle: "1001" }),
  // Its scheduledAt is a fixed time that must be ahead: the appliance's clock at the day the summary says.
  "POST /api/public/v1/messages#scheduled": async (app) => app.clock.set(new Date("2026-06-01T12:00:00Z")),
};

/** Examples naming resources a fresh appliance has not got: made first, their ids put in the path and body. */
const MADE: Record<string, (app: TestApp) => Promise<{ path: Record<string, string>; body: Record<string, unknown> }>> = {
  "POST /api/public/v1/contacts/{id}/merge": async (app) => {
    const upsert = async (value: string) =>
      (await app.request("POST", "/contacts", { body: { identities: [{ channel: "email", value }] } })).body.data.contact.id as string;
    return { path: { id: await upsert("ann@example.com") }, body: { fromContactId: await upsert("ann.lee@example.com") } };
  },
};

interface RequestExample {
  id: string;
  method: string;
  path: string;
  contentType: string;
  value: unknown;
  /** The operation's success statuses (an upsert has two), each with the response example of this name. */
  answers: Map<number, unknown>;
}

function requestExamples(): RequestExample[] {
  const out: RequestExample[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths))
    for (const [method, op] of Object.entries<any>(item)) {
      const statuses = Object.keys(op.responses)
        .map(Number)
        .filter((s) => s >= 200 && s < 300);
      for (const [contentType, media] of Object.entries<any>(op.requestBody?.content ?? {})) {
        const named: [string, unknown][] = media.examples
          ? Object.entries<any>(media.examples).map(([k, e]) => [k, e.value])
          : "example" in media
            ? [["", media.example]]
            : [];
        for (const [name, value] of named) {
          // Per status, the response example of the same name, else the only one.
          const answers = new Map(
            statuses.map((s) => {
              const a = op.responses[String(s)]?.content?.["application/json"] ?? {};
              return [s, a.examples?.[name]?.value ?? a.example];
            }),
          );
          out.push({
            id: `${method.toUpperCase()} ${path}${name ? `#${name}` : ""}${contentType === "application/json" ? "" : ` (${contentType})`}`,
            method: method.toUpperCase(),
            path,
            contentType,
            value,
            answers,
          });
        }
      }
    }
  return out;
}

describe("request examples, each on a fresh sandbox appliance", () => {
  test("the document has them (the send has three, each with its answer)", () => {
    const ids = requestExamples().map((e) => e.id);
    expect(ids).toEqual(
      expect.arrayContaining([
        "POST /api/public/v1/messages#template",
        "POST /api/public/v1/messages#text",
        "POST /api/public/v1/messages#email",
        "POST /api/public/v1/messages#buttons",
        "POST /api/public/v1/messages#list",
        "POST /api/public/v1/templates#whatsapp",
        "POST /api/public/v1/templates#email",
        "POST /api/public/v1/contacts",
        "POST /hooks/{channelAccountId}",
      ]),
    );
    expect(
      requestExamples()
        .filter((e) => e.path === "/api/public/v1/messages")
        .every((e) => e.answers.get(202)),
    ).toBe(true);
  });

  test("each answers its operation's success status and its response example", async () => {
    const wrong: string[] = [];
    for (const ex of requestExamples()) {
      const app = await createTestApp();
      try {
        await BEFORE[ex.id.replace(/ \(.*\)$/, "")]?.(app);
        const made = await MADE[ex.id]?.(app);
        let url = ex.path.replace("{channelAccountId}", ACCOUNTS.whatsapp);
        for (const [name, value] of Object.entries(made?.path ?? {})) url = url.replace(`{${name}}`, value);
        const json = ex.contentType === "application/json";
        const body = made ? { ...(ex.value as object), ...made.body } : ex.value;
        const res = await app.request(ex.method, url, json ? { body } : { raw: String(ex.value), headers: { "content-type": ex.contentType } });
        if (!ex.answers.has(res.status)) wrong.push(`${ex.id}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
        else if (ex.answers.get(res.status) !== undefined) {
          try {
            expectSameShape(res.body, ex.answers.get(res.status));
          } catch (e) {
            wrong.push(`${ex.id}: ${(e as Error).message}`);
          }
        }
      } finally {
        await app.close();
      }
    }
    expect(wrong).toEqual([]);
  }, 60_000);
});

describe("event examples against the events a sandbox really emits", () => {
  let app: TestApp;
  beforeAll(async () => {
    // Reports at once, so one drain takes a send to read.
    app = await createTestApp({ config: { channels: sandboxChannels({ sent_after_ms: 0, delivered_after_ms: 0, read_after_ms: 0 }) } });
    await inbound(app, "whatsapp", { phone: "+14155550101", name: "Ann Lee" }, "hi");
    const contactId = (await app.request("GET", "/contacts?limit=1")).body.data[0].id;
    await app.request("PATCH", `/contacts/${contactId}`, { body: { city: "London" } });
    await app.request("POST", `/contacts/${contactId}/opt-in`, { body: { channel: "whatsapp" } });
    await app.request("POST", "/contacts", { body: { identities: [{ channel: "whatsapp", value: "+12025550101" }], optIn: true, tags: ["vip"] } });
    const send = (phone: string) =>
      app.request("POST", "/messages", {
        body: {
          channel: "whatsapp",
          to: { phone },
          type: "template",
          template: { name: "hello_world", params: { "body.1": "Ann" } },
          metadata: { orderId: "A-1042" },
        },
      });
    await send("+14155550101");
    await send("+12025550101"); // the sandbox's USER_BLOCKED recipient: message.failed, contact.opted_out
    const conversationId = (await app.request("GET", "/conversations?limit=1")).body.data[0].id;
    await app.request("POST", `/conversations/${conversationId}/assign`, { body: { assigneeId: "agent-7", assigneeName: "Grace" } });
    await app.request("POST", `/conversations/${conversationId}/close`, { body: {} });
    const templateId = (await app.request("GET", "/templates?channel=whatsapp")).body.data.find((t: { name: string }) => t.name === "hello_world").id;
    const campaign = (
      await app.request("POST", "/campaigns", {
        body: { name: "June", templateId, audience: { type: "tags", tags: ["vip"] }, askValues: { "body.1": "Sale" } },
      })
    ).body.data;
    await app.request("POST", `/campaigns/${campaign.id}/pause`, { body: {} });
    await app.request("POST", `/campaigns/${campaign.id}/resume`, { body: {} });
    await app.deps.queue.drain();
    const second = (
      await app.request("POST", "/campaigns", {
        body: { name: "July", templateId, audience: { type: "tags", tags: ["vip"] }, askValues: { "body.1": "Sale" } },
      })
    ).body.data;
    await app.request("POST", `/campaigns/${second.id}/cancel`, { body: {} });
    await app.deps.queue.drain();
    // A WhatsApp template submitted on the sandbox, approved by its review job 2 s later.
    await app.request("POST", "/templates", {
      body: { channel: "whatsapp", name: "order_ready", language: "en", body: "Hi {{1}}", examples: { "body.1": "Ann" } },
    });
    app.clock.advance(2000);
    await app.deps.queue.drain();
  });
  afterAll(() => app.close());

  test("every event type this flow emits has its example's keys, and the flow covers the common ones", () => {
    const seen = new Set<string>();
    const wrong: string[] = [];
    for (const e of EVENT_TYPES) {
      const real = eventsOf(app, e.name)[0];
      if (!real) continue;
      seen.add(e.name);
      try {
        expectSameShape(real.data, e.example, "$", { keysOnly: true });
      } catch (err) {
        wrong.push(`${e.name}: ${(err as Error).message}`);
      }
    }
    expect(wrong).toEqual([]);
    const common = [
      "message.sent",
      "message.delivered",
      "message.read",
      "message.failed",
      "message.received",
      "contact.created",
      "contact.updated",
      "contact.opted_in",
      "contact.opted_out",
      "conversation.opened",
      "conversation.assigned",
      "conversation.closed",
      "campaign.started",
      "campaign.paused",
      "campaign.resumed",
      "campaign.completed",
      "campaign.canceled",
      "template.status_changed",
    ];
    expect(common.filter((t) => !seen.has(t))).toEqual([]);
  });

  test("the webhooks section shows exactly the catalogue's examples", () => {
    for (const e of EVENT_TYPES) expect(doc.webhooks[e.name].post.requestBody.content["application/json"].example.data).toEqual(e.example);
  });
});

test("field examples of named schemas are values the API answers (Money)", async () => {
  const app = await createTestApp();
  try {
    const me = (await app.request("GET", "/me")).body.data;
    const money = doc.components.schemas.Money.properties;
    expect(money.unit.examples).toEqual([me.company.balance.unit]);
    expect(money.amount.examples[0]).toMatch(/^\d+\.\d{6}$/);
    expect(me.company.balance.amount).toMatch(/^\d+\.\d{6}$/);
  } finally {
    await app.close();
  }
});
