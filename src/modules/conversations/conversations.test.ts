/** Inbound path (/hooks sandbox simulation) and the 7 conversation endpoints, through the real app. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ACCOUNTS, createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { eventsOf, inbound } from "../../../test/helpers/messaging";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ start: new Date("2026-06-01T12:00:00Z") });
});
afterAll(() => app.close());

describe("inbound (sandbox simulation through /hooks)", () => {
  test("needs an API key of the account's company with messages:send", async () => {
    const url = `/hooks/${ACCOUNTS.whatsapp}`;
    const body = { from: { phone: "+14155550301" }, text: "hi" };
    expect((await app.request("POST", url, { body, key: null })).status).toBe(401);
    const { key } = await app.newKey({ scopes: ["contacts:read"] });
    expect((await app.request("POST", url, { body, key })).body.error.code).toBe("API_SCOPE_MISSING");
    expect((await app.request("POST", "/hooks/0193a4b2-0000-7000-8000-00000000ffff", { body })).status).toBe(404);
  });

  test("bad simulation bodies are 422 with pointers and store nothing", async () => {
    const before = eventsOf(app).length;
    const r = await app.request("POST", `/hooks/${ACCOUNTS.whatsapp}`, { body: { from: {}, timestamp: "yesterday" } });
    expect(r.status).toBe(422);
    expect(r.body.error.details.map((d: any) => d.pointer).sort()).toEqual(["/from", "/text", "/timestamp"]);
    expect(eventsOf(app).length).toBe(before);
  });

  test("creates contact, identity, conversation and the inbound message; duplicates are ignored", async () => {
    await inbound(app, "whatsapp", { phone: "+1 (415) 555-0302", name: "Ann Lee" }, "hello", 60_000, "wamid.dup1");
    await inbound(app, "whatsapp", { phone: "+14155550302" }, "hello", 60_000, "wamid.dup1");
    const list = (await app.request("GET", "/contacts?q=Ann")).body.data;
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ firstName: "Ann", lastName: "Lee", identities: [{ channel: "whatsapp", value: "+14155550302", status: "verified" }] });
    const convs = (await app.request("GET", `/conversations?contactId=${list[0].id}`)).body.data;
    expect(convs).toHaveLength(1);
    expect(convs[0]).toMatchObject({ status: "open", channel: "whatsapp", channelAccountId: ACCOUNTS.whatsapp });
    const msgs = (await app.request("GET", `/conversations/${convs[0].id}/messages`)).body.data;
    expect(msgs).toHaveLength(1);
    expect(msgs[0]).toMatchObject({ direction: "inbound", status: "received", type: "text", content: { text: "hello" }, providerMessageId: "wamid.dup1" });
    expect(eventsOf(app, "message.received").filter((e) => e.data.message.providerMessageId === "wamid.dup1")).toHaveLength(1);
    expect(eventsOf(app, "conversation.opened").some((e) => e.data.conversation.id === convs[0].id)).toBe(true);
  });

  test("a pending @username identity is resolved by the sender's user id", async () => {
    const c = await app.request("POST", "/contacts", { body: { firstName: "Tom", identities: [{ channel: "telegram", value: "@tom_t" }] } });
    expect(c.body.data.contact.identities[0].status).toBe("pending");
    await inbound(app, "telegram", { handle: "777001", username: "tom_t" });
    const after = (await app.request("GET", `/contacts/${c.body.data.contact.id}`)).body.data;
    expect(after.identities).toEqual([{ channel: "telegram", value: "777001", status: "verified" }]);
    const send = await app.request("POST", "/messages", { body: { channel: "telegram", to: { contactId: after.id }, type: "text", text: "hi Tom" } });
    expect(send.status).toBe(202);
  });

  test("STOP opts the contact out of the channel, START opts back in", async () => {
    await inbound(app, "whatsapp", { phone: "+14155550303" }, "STOP");
    const contact = (await app.request("GET", "/contacts?q=%2B14155550303")).body.data[0];
    expect(contact.consent.whatsapp.status).toBe("opted_out");
    await inbound(app, "whatsapp", { phone: "+14155550303" }, "start");
    expect((await app.request("GET", `/contacts/${contact.id}`)).body.data.consent.whatsapp.status).toBe("opted_in");
  });

  test("the window opens at the provider timestamp, and an older late webhook does not move it back", async () => {
    await inbound(app, "whatsapp", { phone: "+14155550304" }, "new", 2 * 3_600_000, "wamid.w1");
    await inbound(app, "whatsapp", { phone: "+14155550304" }, "old", 30 * 3_600_000, "wamid.w0");
    const contact = (await app.request("GET", "/contacts?q=%2B14155550304")).body.data[0];
    const conv = (await app.request("GET", `/conversations?contactId=${contact.id}`)).body.data[0];
    const d = (await app.request("GET", `/conversations/${conv.id}`)).body.data;
    expect(d.window).toEqual({ kind: "since_last_inbound", open: true, lastInboundAt: "2026-06-01T10:00:00.000Z", expiresAt: "2026-06-02T10:00:00.000Z" });
  });
});

describe("conversation endpoints", () => {
  let convId: string;
  let contactId: string;
  beforeAll(async () => {
    await inbound(app, "instagram", { handle: "ig_conv", name: "Ivy" });
    contactId = (await app.request("GET", "/contacts?q=ig_conv")).body.data[0].id;
    convId = (await app.request("GET", `/conversations?contactId=${contactId}`)).body.data[0].id;
  });

  test("detail: contact summary, last message, window, notes", async () => {
    await app.request("POST", `/conversations/${convId}/notes`, { body: { text: "VIP, answer fast", author: "sam" } });
    const d = (await app.request("GET", `/conversations/${convId}`)).body.data;
    expect(d).toMatchObject({
      id: convId,
      status: "open",
      contact: { id: contactId, firstName: "Ivy", blocked: false },
      lastMessage: { direction: "inbound" },
      window: { open: true },
    });
    expect(d.notes).toEqual([{ id: expect.any(String), text: "VIP, answer fast", author: "sam", createdAt: expect.any(String) }]);
  });

  test("assign, reassign, unassign; events only on change", async () => {
    const before = eventsOf(app, "conversation.assigned").length;
    const a = await app.request("POST", `/conversations/${convId}/assign`, { body: { assigneeId: "u1", assigneeName: "Sam" } });
    expect(a.body.data.assignee).toEqual({ id: "u1", name: "Sam" });
    await app.request("POST", `/conversations/${convId}/assign`, { body: { assigneeId: "u1", assigneeName: "Sam" } });
    expect((await app.request("GET", "/conversations?assigneeId=u1")).body.data.map((c: any) => c.id)).toEqual([convId]);
    const u = await app.request("POST", `/conversations/${convId}/assign`, { body: { assigneeId: null } });
    expect(u.body.data.assignee).toBeNull();
    expect(eventsOf(app, "conversation.assigned").length - before).toBe(2);
    expect((await app.request("POST", `/conversations/${convId}/assign`, { body: {} })).status).toBe(422);
  });

  test("close, reopen, and a new inbound on a closed conversation reopens it", async () => {
    const closed = await app.request("POST", `/conversations/${convId}/close`);
    expect(closed.body.data).toMatchObject({ status: "closed", closedAt: expect.any(String) });
    expect((await app.request("GET", "/conversations?status=closed")).body.data.some((c: any) => c.id === convId)).toBe(true);
    const reopened = await app.request("POST", `/conversations/${convId}/reopen`);
    expect(reopened.body.data.status).toBe("open");
    await app.request("POST", `/conversations/${convId}/close`);
    await inbound(app, "instagram", { handle: "ig_conv" }, "are you there?");
    const d = (await app.request("GET", `/conversations/${convId}`)).body.data;
    expect(d.status).toBe("open");
    expect(eventsOf(app, "conversation.closed").filter((e) => e.data.conversation.id === convId)).toHaveLength(2);
  });

  test("an outbound send attaches to the open conversation", async () => {
    const s = await app.request("POST", "/messages", { body: { channel: "instagram", to: { contactId }, type: "text", text: "yes!" } });
    expect(s.body.data.conversationId).toBe(convId);
    const msgs = (await app.request("GET", `/conversations/${convId}/messages?limit=1`)).body;
    expect(msgs.data[0]).toMatchObject({ id: s.body.data.id, direction: "outbound" });
    expect(msgs.page.nextCursor).not.toBeNull();
    const next = (await app.request("GET", `/conversations/${convId}/messages?limit=1&cursor=${msgs.page.nextCursor}`)).body;
    expect(next.data[0].id).not.toBe(s.body.data.id);
  });

  test("foreign and unknown ids are 404; pagination of the list", async () => {
    expect((await app.request("GET", "/conversations/0193a4b2-0000-7000-8000-00000000ffff")).status).toBe(404);
    expect((await app.request("POST", "/conversations/0193a4b2-0000-7000-8000-00000000ffff/close")).status).toBe(404);
    const p1 = (await app.request("GET", "/conversations?limit=2")).body;
    expect(p1.data).toHaveLength(2);
    const p2 = (await app.request("GET", `/conversations?limit=2&cursor=${p1.page.nextCursor}`)).body;
    expect(p2.data.map((c: any) => c.id)).not.toContain(p1.data[0].id);
  });
});

describe("conversation writes are units of work (idem.batch)", () => {
  let convId: string;
  let contactId: string;
  beforeAll(async () => {
    await inbound(app, "instagram", { handle: "ig_units", name: "Una" });
    contactId = (await app.request("GET", "/contacts?q=ig_units")).body.data[0].id;
    convId = (await app.request("GET", `/conversations?contactId=${contactId}`)).body.data[0].id;
  });

  test("Idempotency-Key: a replayed note is the same note, stored once; another body under the key is 409", async () => {
    const headers = { "Idempotency-Key": "note-una-1" };
    const first = await app.request("POST", `/conversations/${convId}/notes`, { body: { text: "call back Monday" }, headers });
    const again = await app.request("POST", `/conversations/${convId}/notes`, { body: { text: "call back Monday" }, headers });
    expect([first.status, again.status]).toEqual([201, 201]);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.data).toEqual(first.body.data);
    expect((await app.request("GET", `/conversations/${convId}`)).body.data.notes.map((n: any) => n.id)).toEqual([first.body.data.id]);
    const other = await app.request("POST", `/conversations/${convId}/notes`, { body: { text: "something else" }, headers });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe("IDEMPOTENCY_CONFLICT");
  });

  test("Idempotency-Key: a replayed close answers the same and emits conversation.closed once", async () => {
    const before = eventsOf(app, "conversation.closed").filter((e) => e.data.conversation.id === convId).length;
    const headers = { "Idempotency-Key": "close-una-1" };
    const c1 = await app.request("POST", `/conversations/${convId}/close`, { headers });
    const c2 = await app.request("POST", `/conversations/${convId}/close`, { headers });
    expect([c1.status, c2.status]).toEqual([200, 200]);
    expect(c2.headers.get("idempotent-replayed")).toBe("true");
    expect(c2.body.data).toEqual(c1.body.data);
    expect(c1.body.data.status).toBe("closed");
    expect(eventsOf(app, "conversation.closed").filter((e) => e.data.conversation.id === convId).length - before).toBe(1);
  });

  test("a refused reopen (409: the contact has another open conversation on the account) changes nothing and emits nothing", async () => {
    // The conversation is closed (above): a send opens a second one on the same account.
    const s = await app.request("POST", "/messages", { body: { channel: "instagram", to: { contactId }, type: "text", text: "following up" } });
    expect(s.status).toBe(202);
    const second = s.body.data.conversationId;
    expect(second).not.toBe(convId);
    const opened = eventsOf(app, "conversation.opened").length;
    const r = await app.request("POST", `/conversations/${convId}/reopen`);
    expect(r.status).toBe(409);
    expect(r.body.error.message).toContain(second);
    expect((await app.request("GET", `/conversations/${convId}`)).body.data.status).toBe("closed");
    expect(eventsOf(app, "conversation.opened").length).toBe(opened);
  });
});

describe("GET /channels and templates", () => {
  test("lists the company's accounts with their inbound webhook URL", async () => {
    const r = (await app.request("GET", "/channels")).body.data;
    expect(r).toHaveLength(7);
    expect(r.find((a: any) => a.channel === "whatsapp")).toEqual({
      id: ACCOUNTS.whatsapp,
      channel: "whatsapp",
      provider: "sandbox",
      name: "whatsapp sandbox",
      default: true,
      status: "active",
      webhookUrl: `http://localhost:8080/hooks/${ACCOUNTS.whatsapp}`,
      health: expect.objectContaining({ status: expect.stringMatching(/^(ok|degraded|failing|unknown)$/) }),
    });
  });

  test("every sandbox account ships hello_world; own templates for e-mail render with params", async () => {
    const list = (await app.request("GET", "/templates?channel=whatsapp")).body.data;
    expect(list).toEqual([expect.objectContaining({ name: "hello_world", language: "en", status: "approved", params: ["body.1"] })]);
    const t = await app.request("POST", "/templates", {
      body: { channel: "email", name: "order_shipped", language: "en", subject: "Order {{1}} shipped", body: "Hi {{2}}, order {{1}} is on its way." },
    });
    expect(t.status).toBe(201);
    expect(t.body.data.params).toEqual(["body.1", "body.2"]);
    expect(
      (await app.request("POST", "/templates", { body: { channel: "email", name: "order_shipped", language: "en", subject: "x", body: "y" } })).status,
    ).toBe(409);
    expect(
      (await app.request("POST", "/templates", { body: { channel: "email", name: "Bad Name", language: "english", body: "y" } })).body.error.details
        .map((d: any) => d.pointer)
        .sort(),
    ).toEqual(["/language", "/name"]);
    const s = await app.request("POST", "/messages", {
      body: {
        channel: "email",
        to: { email: "kim@example.com" },
        type: "template",
        template: { templateId: t.body.data.id, params: { "body.1": "A-1", "body.2": "Kim" } },
      },
    });
    expect(s.status).toBe(202);
    expect(s.body.data.priceType).toBe("email_campaign");
  });
});
