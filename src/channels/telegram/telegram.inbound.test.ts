import { describe, expect, test } from "bun:test";
import { parseTelegramUpdate, type TgUpdate } from "./telegram.inbound";

const from = { id: 1001, is_bot: false, first_name: "Ann", last_name: "Lee", username: "annlee", language_code: "en" };
const chat = { id: 1001, first_name: "Ann", last_name: "Lee", username: "annlee", type: "private" };
const msg = (extra: Record<string, unknown>): TgUpdate => ({ update_id: 1, message: { message_id: 10, from, chat, date: 1700000000, ...extra } as any });
const sender = { value: "1001", username: "annlee", displayName: "Ann Lee" };

describe("parseTelegramUpdate", () => {
  test("text message", () => {
    expect(parseTelegramUpdate(msg({ text: "hello" })).events).toEqual([
      {
        kind: "message",
        providerMessageId: "1001:10",
        from: sender,
        timestamp: new Date("2023-11-14T22:13:20.000Z"),
        content: { type: "text", text: "hello" },
      },
    ]);
  });

  test("/start payload → deep_link referral", () => {
    const [e] = parseTelegramUpdate(msg({ text: "/start promo_2024-x", entities: [{ offset: 0, length: 6, type: "bot_command" }] })).events;
    expect(e).toMatchObject({
      kind: "message",
      referral: { type: "deep_link", payload: "promo_2024-x" },
      content: { type: "text", text: "/start promo_2024-x" },
    });
  });

  test("plain /start has no referral", () => {
    const [e] = parseTelegramUpdate(msg({ text: "/start" })).events;
    expect(e.kind === "message" && e.referral).toBeUndefined();
  });

  test("photo → largest size, caption", () => {
    const photo = [
      { file_id: "small", file_unique_id: "a", width: 90, height: 67, file_size: 1000 },
      { file_id: "big", file_unique_id: "c", width: 1280, height: 960, file_size: 90000 },
      { file_id: "mid", file_unique_id: "b", width: 320, height: 240, file_size: 10000 },
    ];
    const [e] = parseTelegramUpdate(msg({ photo, caption: "my cat" })).events;
    expect(e).toMatchObject({ content: { type: "media", media: { kind: "image", providerMediaId: "big", mimeType: "image/jpeg", caption: "my cat" } } });
  });

  test("document, video, audio, voice, sticker", () => {
    const kinds = [
      [
        { document: { file_id: "D", file_unique_id: "d", file_name: "a.pdf", mime_type: "application/pdf" } },
        { kind: "document", providerMediaId: "D", filename: "a.pdf", mimeType: "application/pdf" },
      ],
      [
        { video: { file_id: "V", file_unique_id: "v", width: 1, height: 1, duration: 3, mime_type: "video/mp4" } },
        { kind: "video", providerMediaId: "V", mimeType: "video/mp4" },
      ],
      [
        { audio: { file_id: "A", file_unique_id: "a", duration: 3, mime_type: "audio/mpeg", file_name: "s.mp3" } },
        { kind: "audio", providerMediaId: "A", mimeType: "audio/mpeg" },
      ],
      [{ voice: { file_id: "O", file_unique_id: "o", duration: 2, mime_type: "audio/ogg" } }, { kind: "audio", providerMediaId: "O", mimeType: "audio/ogg" }],
      [
        { sticker: { file_id: "S", file_unique_id: "s", type: "regular", width: 512, height: 512, is_animated: false, is_video: false, emoji: "😀" } },
        { kind: "sticker", providerMediaId: "S", mimeType: "image/webp", caption: "😀" },
      ],
    ] as const;
    for (const [extra, media] of kinds) {
      const [e] = parseTelegramUpdate(msg(extra as any)).events;
      expect(e).toMatchObject({ kind: "message", content: { type: "media", media } });
    }
  });

  test("location and contact", () => {
    expect(parseTelegramUpdate(msg({ location: { latitude: 52.52, longitude: 13.405 } })).events[0]).toMatchObject({
      content: { type: "location", location: { latitude: 52.52, longitude: 13.405 } },
    });
    const [c] = parseTelegramUpdate(msg({ contact: { phone_number: "+4915112345678", first_name: "Bob", user_id: 77 } })).events;
    expect(c).toMatchObject({ content: { type: "contacts", contacts: [{ phone: "+4915112345678", firstName: "Bob", telegramUserId: 77 }] } });
  });

  test("reply carries inReplyTo in our id form", () => {
    const [e] = parseTelegramUpdate(msg({ text: "yes", reply_to_message: { message_id: 7, chat, date: 1 } })).events;
    expect(e).toMatchObject({ inReplyTo: "1001:7" });
  });

  test("unknown message kind → unsupported", () => {
    const [e] = parseTelegramUpdate(msg({ dice: { emoji: "🎲", value: 3 } })).events;
    expect(e).toMatchObject({ content: { type: "unsupported" } });
  });

  test("group messages and bots are ignored", () => {
    expect(parseTelegramUpdate({ update_id: 1, message: { message_id: 1, from, chat: { id: -100, type: "group" }, date: 1, text: "x" } }).events).toEqual([]);
    expect(parseTelegramUpdate({ update_id: 1, message: { message_id: 1, from: { ...from, is_bot: true }, chat, date: 1, text: "x" } }).events).toEqual([]);
  });

  test("my_chat_member kicked → blocked, member → unblocked", () => {
    const member = (status: string): TgUpdate => ({
      update_id: 2,
      my_chat_member: {
        chat,
        from,
        date: 1700000100,
        old_chat_member: { status: "member", user: { id: 42, is_bot: true } },
        new_chat_member: { status, user: { id: 42, is_bot: true, first_name: "Bot" } },
      } as any,
    });
    expect(parseTelegramUpdate(member("kicked")).events).toEqual([{ kind: "blocked", from: sender, timestamp: new Date(1700000100 * 1000), blocked: true }]);
    expect(parseTelegramUpdate(member("member")).events).toEqual([{ kind: "blocked", from: sender, timestamp: new Date(1700000100 * 1000), blocked: false }]);
  });

  test("other update types → no events", () => {
    expect(parseTelegramUpdate({ update_id: 3, edited_message: {} }).events).toEqual([]);
  });
});

describe("callback_query (a tap on our inline keyboard, DESIGN §16)", () => {
  const now = new Date("2026-06-01T12:00:00Z");
  const ours = {
    message_id: 77,
    from: { id: 42, is_bot: true, first_name: "Bot" },
    chat,
    date: 1700000000,
    text: "Pick",
    reply_markup: { inline_keyboard: [[{ text: "Morning", callback_data: "am" }], [{ text: "Afternoon", callback_data: "pm" }]] },
  };
  const tap = (q: Record<string, unknown>): TgUpdate => ({ update_id: 2, callback_query: { id: "4382", from, chat_instance: "-1", ...q } as any });

  test("data → replyId, the button's text → replyTitle, the message → inReplyTo; dated when it reaches us", () => {
    expect(parseTelegramUpdate(tap({ message: ours, data: "pm" }), now).events).toEqual([
      {
        kind: "message",
        providerMessageId: "callback:4382",
        from: sender,
        timestamp: now,
        content: { type: "interactive", interactive: { replyId: "pm", replyTitle: "Afternoon" } },
        inReplyTo: "1001:77",
      },
    ]);
  });

  test("no message (too old for Telegram to include): no inReplyTo, no title", () => {
    expect(parseTelegramUpdate(tap({ data: "am" }), now).events).toMatchObject([
      { content: { type: "interactive", interactive: { replyId: "am", replyTitle: null } } },
    ]);
    expect(parseTelegramUpdate(tap({ data: "am" }), now).events[0]).not.toHaveProperty("inReplyTo");
  });

  test("a game callback (no data), a group chat's keyboard or a bot's tap: nothing", () => {
    expect(parseTelegramUpdate(tap({ message: ours, game_short_name: "g" }), now).events).toEqual([]);
    expect(parseTelegramUpdate(tap({ message: { ...ours, chat: { id: -100, type: "group" } }, data: "am" }), now).events).toEqual([]);
    expect(parseTelegramUpdate(tap({ from: { ...from, is_bot: true }, message: ours, data: "am" }), now).events).toEqual([]);
  });
});
