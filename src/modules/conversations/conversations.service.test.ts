/** The conversations service on the asynchronous store contract: its writes are steps of the caller's unit. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ACCOUNTS, createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { conversationForInbound } from "./conversations.service";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ start: new Date("2026-06-01T12:00:00Z") });
});
afterAll(() => app.close());

async function newContact(phone: string): Promise<string> {
  const r = await app.request("POST", "/contacts", { body: { firstName: "Unit", identities: [{ channel: "whatsapp", value: phone }] } });
  expect(r.status).toBe(201);
  return r.body.data.contact.id;
}

const forInbound = (contactId: string) =>
  conversationForInbound({
    db: app.deps.db,
    events: app.deps.events,
    now: app.deps.now,
    companyId: app.company.id,
    contactId,
    channel: "whatsapp",
    channelAccountId: ACCOUNTS.whatsapp,
  });

const conversationsOf = async (contactId: string) => (await app.request("GET", `/conversations?contactId=${contactId}`)).body.data;

test("conversationForInbound joins the caller's unit: undone with it, nothing stored and no conversation.opened delivered", async () => {
  const contactId = await newContact("+14155550901");
  const opened = app.emitted.filter((e) => e.type === "conversation.opened").length;
  let id: string | undefined;
  await expect(
    app.deps.db.unit(async () => {
      id = await forInbound(contactId);
      throw new Error("the caller fails after the conversation was opened");
    }),
  ).rejects.toThrow("the caller fails");
  expect(id).toEqual(expect.any(String));
  expect(await conversationsOf(contactId)).toEqual([]);
  expect(app.emitted.filter((e) => e.type === "conversation.opened").length).toBe(opened);
});

test("conversationForInbound: opens one, returns the open one, reopens the closed one (the same id throughout)", async () => {
  const contactId = await newContact("+14155550902");
  const first = await app.deps.db.unit(() => forInbound(contactId));
  expect(await app.deps.db.unit(() => forInbound(contactId))).toBe(first);
  expect((await app.request("POST", `/conversations/${first}/close`)).body.data.status).toBe("closed");
  expect(await app.deps.db.unit(() => forInbound(contactId))).toBe(first);
  expect((await conversationsOf(contactId)).map((c: any) => [c.id, c.status])).toEqual([[first, "open"]]);
  const reopened = app.emitted.filter((e) => e.type === "conversation.opened" && (e.data as any).conversation.id === first);
  expect(reopened.map((e) => (e.data as any).reopened ?? false)).toEqual([false, true]);
});
