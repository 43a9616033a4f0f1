import { describe, expect, test } from "bun:test";
import { createTestContext } from "../../../test/fakes/adapter-context";
import { parseWhatsappWebhook } from "./whatsapp-cloud.inbound";

const PHONE_ID = "PHONE_NUMBER_ID";
const { ctx } = createTestContext({ provider: "whatsapp-cloud", channel: "whatsapp", settings: {} });
const parse = (payload: unknown) => parseWhatsappWebhook({ payload, phoneNumberId: PHONE_ID, log: ctx.log });

/** The envelope of Meta's documented webhook examples. */
const envelope = (value: object) => ({
  object: "whatsapp_business_account",
  entry: [
    {
      id: "WHATSAPP_BUSINESS_ACCOUNT_ID",
      changes: [
        { value: { messaging_product: "whatsapp", metadata: { display_phone_number: "15550783881", phone_number_id: PHONE_ID }, ...value }, field: "messages" },
      ],
    },
  ],
});
const inbound = (message: object) =>
  envelope({
    contacts: [{ profile: { name: "Kerry Fisher" }, wa_id: "16315551181" }],
    messages: [{ from: "16315551181", id: "wamid.ABGGFlA5Fpa", timestamp: "1504902988", ...message }],
  });
const at = new Date(1504902988 * 1000);

describe("whatsapp inbound messages", () => {
  test("text: E.164 sender, profile name, provider timestamp (epoch s)", () => {
    expect(parse(inbound({ type: "text", text: { body: "this is a text message" } }))).toEqual([
      {
        kind: "message",
        providerMessageId: "wamid.ABGGFlA5Fpa",
        from: { value: "+16315551181", displayName: "Kerry Fisher" },
        timestamp: at,
        content: { type: "text", text: "this is a text message" },
      },
    ]);
  });

  test("reply context.id → inReplyTo; click-to-WhatsApp referral kept", () => {
    const referral = {
      source_url: "https://fb.me/2ZulEu42P",
      source_id: "120216",
      source_type: "ad",
      headline: "Chat with us",
      body: "Deals",
      media_type: "image",
      image_url: "https://x",
      ctwa_clid: "ARAkLkA8rmlFeiCktEJQ-QTwRiyYHAFDLMNDBH0CD3qpjd0HR4irJ6LEkR7JwFF4XvnO2E4Nx0-eM-ZABe4Ghh0rd4Gx3bVvrqI",
    };
    const [event] = parse(inbound({ type: "text", text: { body: "yes" }, context: { from: "15550783881", id: "wamid.ORIGINAL" }, referral }));
    expect(event).toMatchObject({ kind: "message", inReplyTo: "wamid.ORIGINAL", referral });
  });

  test("media kinds carry the provider media id, mime type, caption and filename", () => {
    const cases = [
      [
        { type: "image", image: { caption: "CAPTION", mime_type: "image/jpeg", sha256: "IMAGE_HASH", id: "IMAGE_ID" } },
        { kind: "image", providerMediaId: "IMAGE_ID", mimeType: "image/jpeg", caption: "CAPTION" },
      ],
      [
        { type: "video", video: { mime_type: "video/mp4", sha256: "h", id: "VIDEO_ID" } },
        { kind: "video", providerMediaId: "VIDEO_ID", mimeType: "video/mp4" },
      ],
      [
        { type: "audio", audio: { mime_type: "audio/ogg; codecs=opus", sha256: "h", id: "AUDIO_ID", voice: true } },
        { kind: "audio", providerMediaId: "AUDIO_ID", mimeType: "audio/ogg; codecs=opus" },
      ],
      [
        { type: "document", document: { caption: "Q3", filename: "report.pdf", mime_type: "application/pdf", sha256: "h", id: "DOC_ID" } },
        { kind: "document", providerMediaId: "DOC_ID", mimeType: "application/pdf", caption: "Q3", filename: "report.pdf" },
      ],
      [
        { type: "sticker", sticker: { mime_type: "image/webp", sha256: "h", id: "STICKER_ID", animated: false } },
        { kind: "sticker", providerMediaId: "STICKER_ID", mimeType: "image/webp" },
      ],
    ] as const;
    for (const [message, media] of cases) {
      expect(parse(inbound(message))[0]).toMatchObject({ content: { type: "media", media } });
    }
  });

  test("location and contacts", () => {
    expect(parse(inbound({ type: "location", location: { latitude: 52.52, longitude: 13.405, name: "Office", address: "Main St 1" } }))[0]).toMatchObject({
      content: { type: "location", location: { latitude: 52.52, longitude: 13.405, name: "Office", address: "Main St 1" } },
    });
    const contacts = [{ name: { formatted_name: "Jane Doe", first_name: "Jane" }, phones: [{ phone: "+1 555 0100", type: "CELL", wa_id: "15550100" }] }];
    expect(parse(inbound({ type: "contacts", contacts }))[0]).toMatchObject({ content: { type: "contacts", contacts } });
  });

  test("interactive button/list replies arrive as taps (id, title, context.id); template quick-reply buttons as text", () => {
    // Meta's documented button_reply / list_reply webhook examples.
    const context = { from: "15550783881", id: "wamid.OURS" };
    expect(
      parse(
        inbound({
          type: "interactive",
          context,
          interactive: { type: "button_reply", button_reply: { id: "unique-button-identifier-here", title: "Yes, please" } },
        }),
      )[0],
    ).toMatchObject({
      content: { type: "interactive", interactive: { replyId: "unique-button-identifier-here", replyTitle: "Yes, please" } },
      inReplyTo: "wamid.OURS",
    });
    expect(
      parse(
        inbound({ type: "interactive", context, interactive: { type: "list_reply", list_reply: { id: "row-1", title: "Tomorrow", description: "9-12" } } }),
      )[0],
    ).toMatchObject({ content: { type: "interactive", interactive: { replyId: "row-1", replyTitle: "Tomorrow" } }, inReplyTo: "wamid.OURS" });
    expect(parse(inbound({ type: "interactive", interactive: { type: "button_reply", button_reply: { title: "no id" } } }))[0]).toMatchObject({
      content: { type: "unsupported" },
    });
    expect(
      parse(
        inbound({ type: "button", button: { payload: "STOP_PROMOS", text: "Stop promotions" }, context: { from: "15550783881", id: "wamid.TEMPLATE" } }),
      )[0],
    ).toMatchObject({ content: { type: "text", text: "Stop promotions" }, inReplyTo: "wamid.TEMPLATE" });
  });

  test("unsupported and unknown types keep the raw message", () => {
    const raw = {
      from: "16315551181",
      id: "wamid.ABGGFlA5Fpa",
      timestamp: "1504902988",
      type: "unsupported",
      errors: [{ code: 131051, title: "Message type is currently not supported." }],
    };
    expect(parse(inbound(raw))[0]).toMatchObject({ content: { type: "unsupported", raw } });
    expect(parse(inbound({ type: "reaction", reaction: { message_id: "wamid.X", emoji: "👍" } }))[0]).toMatchObject({ content: { type: "unsupported" } });
  });
});

describe("whatsapp statuses", () => {
  const status = (s: object) => envelope({ statuses: [{ id: "wamid.OUT", recipient_id: "16315551181", timestamp: "1750263773", ...s }] });
  test("sent, delivered, read", () => {
    for (const s of ["sent", "delivered", "read"] as const) {
      expect(parse(status({ status: s, pricing: { billable: true, pricing_model: "PMP", category: "utility" } }))).toEqual([
        { kind: "status", providerMessageId: "wamid.OUT", status: s, timestamp: new Date(1750263773 * 1000) },
      ]);
    }
  });
  test("failed carries errors[] mapped through the error table", () => {
    const [event] = parse(
      status({
        status: "failed",
        errors: [
          {
            code: 131047,
            title: "Re-engagement message",
            message: "Re-engagement message",
            error_data: { details: "Message failed to send because more than 24 hours have passed since the customer last replied to this number." },
          },
        ],
      }),
    );
    expect(event).toEqual({
      kind: "status",
      providerMessageId: "wamid.OUT",
      status: "failed",
      timestamp: new Date(1750263773 * 1000),
      error: {
        reason: "MESSAGING_WINDOW_CLOSED",
        providerCode: "131047",
        message: "Re-engagement message: Message failed to send because more than 24 hours have passed since the customer last replied to this number.",
      },
    });
  });
  test("unknown statuses (deleted, warning) are skipped", () => {
    expect(parse(status({ status: "deleted" }))).toEqual([]);
  });
});

describe("envelope handling", () => {
  test("another phone number's change is skipped; other objects and fields yield nothing", () => {
    const foreign = inbound({ type: "text", text: { body: "x" } });
    (foreign.entry[0].changes[0].value as { metadata: { phone_number_id: string } }).metadata.phone_number_id = "OTHER";
    expect(parse(foreign)).toEqual([]);
    expect(parse({ object: "page", entry: [] })).toEqual([]);
    expect(parse({ object: "whatsapp_business_account", entry: [{ id: "W", changes: [{ field: "account_update", value: {} }] }] })).toEqual([]);
    expect(parse(null)).toEqual([]);
  });
  test("several messages and statuses in one delivery", () => {
    const payload = envelope({
      contacts: [
        { profile: { name: "A" }, wa_id: "111" },
        { profile: { name: "B" }, wa_id: "222" },
      ],
      messages: [
        { from: "111", id: "wamid.1", timestamp: "1", type: "text", text: { body: "a" } },
        { from: "222", id: "wamid.2", timestamp: "2", type: "text", text: { body: "b" } },
      ],
      statuses: [{ id: "wamid.OUT", status: "read", timestamp: "3", recipient_id: "111" }],
    });
    expect(parse(payload).map((e) => (e.kind === "message" ? `${e.from.displayName}:${e.providerMessageId}` : `${e.kind}`))).toEqual([
      "A:wamid.1",
      "B:wamid.2",
      "status",
    ]);
  });
});

describe("a batch with bad entries keeps the good ones (DESIGN §23)", () => {
  test("messages with a malformed wa_id, a field of the wrong type or no id are skipped; statuses, other changes and entries kept", () => {
    const ok = (n: number) => ({ from: `1631555118${n}`, id: `wamid.OK${n}`, timestamp: "1504902988", type: "text", text: { body: `m${n}` } });
    const payload = {
      object: "whatsapp_business_account",
      entry: [
        {
          id: "W",
          changes: [
            {
              field: "messages",
              value: {
                metadata: { phone_number_id: PHONE_ID },
                contacts: [{ wa_id: 5, profile: { name: {} } }],
                messages: [ok(1), { ...ok(2), from: "not-a-wa-id" }, { ...ok(3), from: 16315551183 }, { ...ok(4), id: undefined }, null, ok(5)],
                statuses: [
                  { id: "wamid.OUT", status: "read", timestamp: "1750263773" },
                  { id: 7, status: "read" },
                ],
              },
            },
          ],
        },
        { id: "W", changes: "not a list" },
        {
          id: "W",
          changes: [
            { field: "messages", value: { metadata: { phone_number_id: PHONE_ID }, messages: { not: "a list" } } },
            { field: "messages", value: { metadata: { phone_number_id: PHONE_ID }, messages: [ok(6)] } },
          ],
        },
      ],
    };
    const events = parse(payload);
    expect(events.map((e) => (e as { providerMessageId: string }).providerMessageId)).toEqual(["wamid.OK1", "wamid.OK5", "wamid.OUT", "wamid.OK6"]);
  });
});

describe("template review fields (DESIGN §17)", () => {
  const at = 1_700_000_000;
  const change = (field: string, value: Record<string, unknown>) => ({
    object: "whatsapp_business_account",
    entry: [{ id: "WABA", time: at, changes: [{ field, value }] }],
  });
  const status = (event: string, reason = "NONE") =>
    change("message_template_status_update", {
      event,
      message_template_id: 1234567,
      message_template_name: "order_ready",
      message_template_language: "en_US",
      reason,
      message_template_category: "UTILITY",
    });

  test.each([
    ["APPROVED", "NONE", { status: "approved", rejectedReason: null }],
    ["REJECTED", "INVALID_FORMAT", { status: "rejected", rejectedReason: "INVALID_FORMAT" }],
    ["REJECTED", "NONE", { status: "rejected", rejectedReason: null }],
    ["PAUSED", "NONE", { status: "paused", rejectedReason: null }],
    ["DISABLED", "NONE", { status: "disabled", rejectedReason: null }],
    ["PENDING_DELETION", "NONE", { status: "disabled", rejectedReason: null }],
    // As the template list maps it: gone, so never sent.
    ["ARCHIVED", "NONE", { status: "disabled", rejectedReason: null }],
  ])("status %s (reason %s) → %o", (event, reason, expected) => {
    expect(parse(status(event, reason))).toEqual([
      { kind: "template", providerTemplateId: "1234567", name: "order_ready", language: "en_US", timestamp: new Date(at * 1000), ...expected },
    ] as never);
  });

  test("events without a status of ours (UNARCHIVED, FLAGGED, LOCKED) are skipped: the next sync says where it stands", () => {
    expect(parse(status("UNARCHIVED"))).toEqual([]);
    expect(parse(status("FLAGGED"))).toEqual([]);
    expect(parse(status("LOCKED"))).toEqual([]);
  });

  test("quality update → the new score", () => {
    const payload = change("message_template_quality_update", {
      previous_quality_score: "GREEN",
      new_quality_score: "YELLOW",
      message_template_id: 1234567,
      message_template_name: "order_ready",
      message_template_language: "en_US",
    });
    expect(parse(payload)).toEqual([
      { kind: "template", providerTemplateId: "1234567", name: "order_ready", language: "en_US", timestamp: new Date(at * 1000), quality: "YELLOW" },
    ]);
  });

  test("a change without name or language is skipped; the rest of the delivery is kept", () => {
    const payload = status("APPROVED");
    (payload.entry[0]!.changes as unknown[]).unshift({ field: "message_template_status_update", value: { event: "APPROVED" } });
    expect(parse(payload)).toHaveLength(1);
  });
});
