/**
 * `type: "interactive"` on POST /messages (DESIGN §16), through the real app on sandbox accounts: per channel ×
 * kind accepted, every limit's 422 with its pointer, the unsupported channels, the window; then the sandbox
 * tap end to end (message.received carries `interactive`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, ACCOUNTS, type TestApp } from "../../../test/helpers/test-app";
import { runScenarios, type Scenario } from "../../../test/helpers/scenarios";
import { eventsOf, inbound } from "../../../test/helpers/messaging";

const HOUR = 3_600_000;
const buttons = (extra: object = {}) => ({
  kind: "buttons",
  header: { text: "Booking" },
  body: { text: "Keep your table for Friday?" },
  footer: { text: "Reply by Thursday" },
  buttons: [
    { id: "keep", title: "Keep it" },
    { id: "cancel", title: "Cancel" },
  ],
  ...extra,
});
const list = (rows: object[] = [{ id: "am", title: "Morning", description: "08-12" }], extra: object = {}) => ({
  kind: "list",
  body: { text: "Pick a slot" },
  list: { button: "Slots", sections: [{ title: "Tomorrow", rows }] },
  ...extra,
});
const rowsOf = (n: number) => Array.from({ length: n }, (_, i) => ({ id: `r${i}`, title: `Row ${i}` }));

/** Recipients who wrote in recently on each channel that has interactive messages. */
const TO = {
  whatsapp: { phone: "+14155550101" },
  messenger: { handle: "psid_recent" },
  instagram: { handle: "ig_recent" },
  telegram: { handle: "1001" },
  x: { handle: "2002" },
} as const;

describe("POST /messages type interactive", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ start: new Date("2026-06-01T12:00:00Z") });
    await inbound(app, "whatsapp", TO.whatsapp, "hi", HOUR);
    await inbound(app, "messenger", TO.messenger, "hi", HOUR);
    await inbound(app, "instagram", TO.instagram, "hi", HOUR);
    await inbound(app, "telegram", TO.telegram, "hi", HOUR);
    await inbound(app, "x", TO.x, "hi", HOUR);
    await inbound(app, "whatsapp", { phone: "+14155550102" }, "hi", 25 * HOUR);
    await inbound(app, "tiktok", { handle: "tt_recent" }, "hi", HOUR);
  });
  afterAll(() => app.close());

  const send = (channel: string, interactive: unknown, to: object = TO[channel as keyof typeof TO]): Pick<Scenario, "method" | "url" | "body"> => ({
    method: "POST",
    url: "/messages",
    body: { channel, to, type: "interactive", interactive },
  });
  const refused = (name: string, channel: string, interactive: unknown, pointer: string, code = "VALIDATION_FAILED"): Scenario => ({
    name: `${channel}: ${name} → 422 ${code} at ${pointer}`,
    ...send(channel, interactive),
    status: 422,
    contains: { error: { code, details: [{ pointer }] } },
  });

  const scenarios: Scenario[] = [];
  for (const channel of Object.keys(TO)) {
    for (const [kind, interactive] of [
      ["buttons", buttons()],
      ["list", list(rowsOf(10))],
    ] as const)
      scenarios.push({
        name: `${channel} ${kind}: 202 queued, priced as text (free)`,
        ...send(channel, interactive),
        status: 202,
        contains: { data: { status: "queued", channel, priceType: "free", unitPrice: "0.000000", charged: false } },
      });
    scenarios.push(
      refused("no buttons", channel, buttons({ buttons: [] }), "/interactive/buttons"),
      refused("4 buttons", channel, buttons({ buttons: rowsOf(4) }), "/interactive/buttons"),
      refused("button title of 21", channel, buttons({ buttons: [{ id: "a", title: "x".repeat(21) }] }), "/interactive/buttons/0/title"),
      refused("button id of 257", channel, buttons({ buttons: [{ id: "i".repeat(257), title: "ok" }] }), "/interactive/buttons/0/id"),
      refused(
        "duplicate ids",
        channel,
        buttons({
          buttons: [
            { id: "a", title: "A" },
            { id: "a", title: "B" },
          ],
        }),
        "/interactive/buttons/1/id",
      ),
      refused("11 rows", channel, list(rowsOf(11)), "/interactive/list/sections"),
      refused("no rows", channel, list([]), "/interactive/list/sections"),
      refused("row title of 25", channel, list([{ id: "a", title: "t".repeat(25) }]), "/interactive/list/sections/0/rows/0/title"),
      refused(
        "row description of 73",
        channel,
        list([{ id: "a", title: "A", description: "d".repeat(73) }]),
        "/interactive/list/sections/0/rows/0/description",
      ),
      refused("buttons with a list", channel, buttons({ list: list().list }), "/interactive/list"),
      refused("kind buttons without buttons", channel, { kind: "buttons", body: { text: "?" } }, "/interactive/buttons"),
      refused("kind list without list", channel, { kind: "list", body: { text: "?" } }, "/interactive/list"),
      refused("an empty button id", channel, buttons({ buttons: [{ id: "", title: "A" }] }), "/interactive/buttons/0/id"),
      refused("list button of 21", channel, { ...list(), list: { button: "b".repeat(21), sections: list().list.sections } }, "/interactive/list/button"),
    );
  }
  scenarios.push(
    refused(
      "two sections, one untitled",
      "whatsapp",
      { ...list(), list: { button: "Slots", sections: [{ title: "A", rows: [{ id: "a", title: "A" }] }, { rows: [{ id: "b", title: "B" }] }] } },
      "/interactive/list/sections/1/title",
    ),
    {
      name: "telegram: two sections, one untitled, are accepted (the rows are flattened)",
      ...send("telegram", {
        ...list(),
        list: { button: "Slots", sections: [{ title: "A", rows: [{ id: "a", title: "A" }] }, { rows: [{ id: "b", title: "B" }] }] },
      }),
      status: 202,
    },
    refused("body over 1000 characters", "instagram", buttons({ body: { text: "b".repeat(1001) } }), "/interactive/body/text"),
    refused("body over 4096 characters", "whatsapp", buttons({ body: { text: "b".repeat(4097) } }), "/interactive/body/text"),
    refused("id of 65 bytes (callback_data)", "telegram", buttons({ buttons: [{ id: "é".repeat(33), title: "ok" }] }), "/interactive/buttons/0/id"),
    {
      name: "telegram: an id of 64 bytes is accepted",
      ...send("telegram", buttons({ buttons: [{ id: "é".repeat(32), title: "ok" }] })),
      status: 202,
    },
    {
      name: "whatsapp: an id of 256 characters is accepted (no byte limit but Telegram's)",
      ...send("whatsapp", buttons({ buttons: [{ id: "é".repeat(256), title: "ok" }] })),
      status: 202,
    },
    {
      name: "whatsapp: type interactive without interactive → 422 at /interactive",
      method: "POST",
      url: "/messages",
      body: { channel: "whatsapp", to: TO.whatsapp, type: "interactive" },
      status: 422,
      contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/interactive" }] } },
    },
    {
      name: "whatsapp: interactive with type text → 422 at /interactive",
      method: "POST",
      url: "/messages",
      body: { channel: "whatsapp", to: TO.whatsapp, type: "text", text: "hi", interactive: buttons() },
      status: 422,
      contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/interactive" }] } },
    },
    {
      name: "tiktok buttons → 422 CHANNEL_UNSUPPORTED naming tiktok",
      ...send("tiktok", buttons(), { handle: "tt_recent" }),
      status: 422,
      contains: { error: { code: "CHANNEL_UNSUPPORTED", message: "Interactive messages are not available on tiktok", details: [{ pointer: "/channel" }] } },
    },
    {
      name: "email list → 422 CHANNEL_UNSUPPORTED naming email",
      ...send("email", list(), { email: "ann@example.com" }),
      status: 422,
      contains: { error: { code: "CHANNEL_UNSUPPORTED", message: "Interactive messages are not available on email" } },
    },
    {
      name: "whatsapp buttons 25 h after the contact wrote: 422 MESSAGING_WINDOW_CLOSED (as text)",
      ...send("whatsapp", buttons(), { phone: "+14155550102" }),
      status: 422,
      contains: { error: { code: "MESSAGING_WINDOW_CLOSED" } },
    },
    {
      name: "telegram list to a contact who never wrote: 422 MESSAGING_WINDOW_CLOSED",
      ...send("telegram", list(), { handle: "9999" }),
      status: 422,
      contains: { error: { code: "MESSAGING_WINDOW_CLOSED" } },
    },
    {
      name: "messenger buttons to a new contact: 422 MESSAGING_WINDOW_CLOSED",
      ...send("messenger", buttons(), { handle: "psid_new" }),
      status: 422,
      contains: { error: { code: "MESSAGING_WINDOW_CLOSED" } },
    },
  );
  runScenarios(() => app, scenarios);
});

describe("sandbox tap end to end", () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ start: new Date("2026-06-01T12:00:00Z") });
  });
  afterAll(() => app.close());

  test("send buttons → tap → message.received carries interactive with our message id", async () => {
    await inbound(app, "whatsapp", TO.whatsapp);
    const sent = await app.request("POST", "/messages", { body: { channel: "whatsapp", to: TO.whatsapp, type: "interactive", interactive: buttons() } });
    expect(sent.status).toBe(202);
    await app.deps.queue.drain();
    const stored = await app.request("GET", `/messages/${sent.body.data.id}`);
    expect(stored.body.data).toMatchObject({ status: "sent", type: "interactive", content: { interactive: buttons() } });

    const tap = await app.request("POST", `/hooks/${ACCOUNTS.whatsapp}`, {
      body: { from: TO.whatsapp, interactive: { replyId: "keep", replyTitle: "Keep it", inReplyTo: sent.body.data.id } },
    });
    expect(tap.status).toBe(202);
    const received = eventsOf(app, "message.received").at(-1)!.data.message;
    expect(received).toMatchObject({
      direction: "inbound",
      type: "interactive",
      content: { interactive: { replyId: "keep", replyTitle: "Keep it", inReplyTo: sent.body.data.id } },
      replyToMessageId: sent.body.data.id,
    });
    const again = await app.request("GET", `/messages/${received.id}`);
    expect(again.body.data.content).toEqual({ interactive: { replyId: "keep", replyTitle: "Keep it", inReplyTo: sent.body.data.id } });
  });

  test("a tap naming no (or an unknown) message: inReplyTo null, replyTitle null when not given", async () => {
    for (const inReplyTo of [undefined, "0197aaaa-0000-7000-8000-000000000000"]) {
      const tap = await app.request("POST", `/hooks/${ACCOUNTS.telegram}`, { body: { from: { handle: "1001" }, interactive: { replyId: "am", inReplyTo } } });
      expect(tap.status).toBe(202);
      expect(eventsOf(app, "message.received").at(-1)!.data.message.content).toEqual({ interactive: { replyId: "am", replyTitle: null, inReplyTo: null } });
    }
  });

  test("a tap is no consent keyword: a 'STOP' button leaves consent alone", async () => {
    await app.request("POST", `/hooks/${ACCOUNTS.messenger}`, {
      body: { from: { handle: "psid_stop" }, interactive: { replyId: "stop", replyTitle: "STOP" } },
    });
    expect(eventsOf(app, "consent.updated").filter((e) => JSON.stringify(e.data).includes("opted_out"))).toEqual([]);
  });

  test("the simulated tap is checked: replyId required, not with text", async () => {
    const bad = await app.request("POST", `/hooks/${ACCOUNTS.whatsapp}`, { body: { from: TO.whatsapp, text: "hi", interactive: { replyTitle: 3 } } });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details.map((d: { pointer: string }) => d.pointer).sort()).toEqual(["/interactive/replyId", "/interactive/replyTitle", "/text"]);
  });
});
