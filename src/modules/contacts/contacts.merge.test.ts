/**
 * POST /contacts/{id}/merge (DESIGN §21) through the real app: the routes and their errors, the identity 409's
 * `existingContactId`, every kind of related row moving (read back from the tables themselves), a merge racing
 * a send, and the guard that every table with a contact column has a merge rule.
 */
import { holdAt } from "../../../test/helpers/gate";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { is } from "drizzle-orm";
import { getTableConfig as pgTableConfig, PgTable } from "drizzle-orm/pg-core";
import { getTableConfig as sqliteTableConfig, SQLiteTable } from "drizzle-orm/sqlite-core";
import { signLicense } from "../../../scripts/sign-license";
import * as pgSchema from "../../db/postgres/schema.gen";
import * as schema from "../../schema";
import { EVENT_TYPES } from "../../events";
import { expectSameShape } from "../../../test/helpers/examples";
import { eventsOf, inbound } from "../../../test/helpers/messaging";
import { runScenarios } from "../../../test/helpers/scenarios";
import { createTestApp, TEST_ENGINE, type TestApp } from "../../../test/helpers/test-app";
import { modulesOf } from "../../assembly";
import { contactMergeStore, MERGED_CONTACT_TABLES } from "./contacts-merge.repository";

const devKey = readFileSync(join(import.meta.dir, "../../../test/fixtures/license-dev.private.key"), "utf8");

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ config: { rate_limit: { requests_per_second: 10000, burst: 10000 } } });
  writeFileSync(
    app.config.license.file,
    signLicense({ company: "default", modules: ["pipeline", "sources"], expiresAt: "2099-01-01T00:00:00.000Z", privateKey: devKey }),
  );
  await app.request("POST", "/custom-fields", { body: { key: "plan", label: "Plan", type: "text" } });
  await app.request("POST", "/custom-fields", { body: { key: "tier", label: "Tier", type: "text" } });
});
afterAll(() => app.close());

const upsert = async (body: Record<string, unknown>) => {
  const r = await app.request("POST", "/contacts", { body });
  if (r.status >= 300) throw new Error(JSON.stringify(r.body));
  return r.body.data.contact.id as string;
};
const merge = (id: string, fromContactId: unknown, o: { key?: string; headers?: Record<string, string> } = {}) =>
  app.request("POST", `/contacts/${id}/merge`, { body: { fromContactId }, ...o });
/** Rows of a table naming the contact (read with the app's own connection: either engine). */
const rowsOf = async (table: string, contactId: string) =>
  (await app.deps.db.sql(`SELECT * FROM ${table} WHERE contact_id = ?`).all(contactId)) as Record<string, any>[];
const UNKNOWN = "0193a4b2-0000-7000-8000-00000000fffe";

describe("POST /contacts/{id}/merge: routes and errors", () => {
  let a: string;
  let b: string;
  let self: string;
  let readKey: string;
  beforeAll(async () => {
    a = await upsert({ firstName: "Ann", identities: [{ channel: "email", value: "s-ann@example.com" }] });
    b = await upsert({ lastName: "Lee", identities: [{ channel: "telegram", value: "5001" }] });
    self = await upsert({ identities: [{ channel: "email", value: "s-self@example.com" }] });
    readKey = (await app.newKey({ name: "read", scopes: ["contacts:read"] })).key;
  });

  runScenarios(
    () => app,
    [
      {
        name: "a contact into itself → 422 at /fromContactId",
        method: "POST",
        url: "/contacts/SELF/merge",
        body: { fromContactId: "SELF" },
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/fromContactId" }] } },
      },
      {
        name: "no fromContactId → 422 naming it",
        method: "POST",
        url: `/contacts/${UNKNOWN}/merge`,
        body: {},
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/fromContactId" }] } },
      },
      { name: "unknown target → 404", method: "POST", url: `/contacts/${UNKNOWN}/merge`, body: { fromContactId: "B" }, status: 404 },
      { name: "unknown fromContactId → 404", method: "POST", url: "/contacts/A/merge", body: { fromContactId: UNKNOWN }, status: 404 },
      { name: "a key without contacts:write → 403", method: "POST", url: "/contacts/A/merge", body: { fromContactId: "B" }, key: "READ", status: 403 },
    ].map((s) => ({
      ...s,
      // The ids exist only once beforeAll ran: put them in at request time.
      get url() {
        return s.url.replace("SELF", self).replace("/A/", `/${a}/`);
      },
      get body() {
        const f = (s.body as { fromContactId?: string }).fromContactId;
        return f === undefined ? {} : { fromContactId: f === "SELF" ? self : f === "B" ? b : f };
      },
      get key() {
        return s.key === "READ" ? readKey : undefined;
      },
    })),
  );

  test("merges → 200 the target with both contacts' data; the merged-away one is gone (404), replayed with its Idempotency-Key", async () => {
    const res = await merge(a, b, { headers: { "idempotency-key": "merge-1" } });
    expect(res.status).toBe(200);
    expect(res.body.data).toMatchObject({
      id: a,
      firstName: "Ann",
      lastName: "Lee",
      identities: [
        { channel: "email", value: "s-ann@example.com" },
        { channel: "telegram", value: "5001" },
      ],
    });
    expect((await app.request("GET", `/contacts/${b}`)).status).toBe(404);
    const replay = await merge(a, b, { headers: { "idempotency-key": "merge-1" } });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(res.body);
    // Without the key, a second merge of the same contact finds it gone.
    expect((await merge(a, b)).status).toBe(404);
    expect((await merge(b, a)).status).toBe(404);
  });

  test("the 409 for an identity of another contact names it in details.existingContactId (upsert and PATCH)", async () => {
    const x = await upsert({ identities: [{ channel: "email", value: "x409@example.com" }] });
    const y = await upsert({ identities: [{ channel: "email", value: "y409@example.com" }] });
    const both = await app.request("POST", "/contacts", {
      body: {
        identities: [
          { channel: "email", value: "x409@example.com" },
          { channel: "email", value: "y409@example.com" },
        ],
      },
    });
    expect(both.status).toBe(409);
    expect(both.body.error.details).toEqual([
      { pointer: "/identities/0", message: `belongs to contact ${x}`, existingContactId: x },
      { pointer: "/identities/1", message: `belongs to contact ${y}`, existingContactId: y },
    ]);
    const patch = await app.request("PATCH", `/contacts/${x}`, { body: { identities: [{ channel: "email", value: "y409@example.com" }] } });
    expect(patch.status).toBe(409);
    expect(patch.body.error).toMatchObject({ code: "CONFLICT", details: [{ pointer: "/identities/0", existingContactId: y }] });
    // The way forward the detail names: merge, then the identities can be set together.
    expect((await merge(x, patch.body.error.details[0].existingContactId)).status).toBe(200);
    expect((await app.request("PATCH", `/contacts/${x}`, { body: { identities: [{ channel: "email", value: "y409@example.com" }] } })).status).toBe(200);
  });
});

describe("a merge of two richly populated contacts", () => {
  let a: string;
  let b: string;
  let convA: string;
  let convB: string;
  let closedB: string;
  let campaignId: string;
  let recordId: string;
  let taskId: string;
  let sourceEarly: string;
  let messagesBefore: string[];
  let eventsBefore: number;
  let merged: any;

  beforeAll(async () => {
    a = await upsert({
      firstName: "Ann",
      identities: [{ channel: "whatsapp", value: "+14155550111" }],
      tags: ["vip", "june"],
      customFields: { plan: "pro" },
      optIn: true,
    });
    app.clock.advance(1000);
    b = await upsert({
      firstName: "Annie",
      lastName: "Lee",
      city: "Istanbul",
      identities: [
        { channel: "whatsapp", value: "+14155550112" },
        { channel: "email", value: "ann.lee@example.com" },
      ],
      tags: ["vip", "newsletter"],
      customFields: { plan: "free", tier: "gold" },
      optIn: true,
    });
    // B also wrote in on e-mail once, in a conversation since closed (it moves as it is).
    await inbound(app, "email", { email: "ann.lee@example.com" }, "old question");
    closedB = (await app.request("GET", `/conversations?contactId=${b}`)).body.data[0].id;
    expect((await app.request("POST", `/conversations/${closedB}/close`, { body: {} })).status).toBe(200);
    // Both write in on the same WhatsApp account: two open conversations there, to be folded into A's.
    await inbound(app, "whatsapp", { phone: "+14155550111" }, "from A", 120_000);
    await inbound(app, "whatsapp", { phone: "+14155550112" }, "from B", 30_000);
    const open = async (id: string) =>
      (await app.request("GET", `/conversations?contactId=${id}`)).body.data.find((c: any) => c.status === "open" && c.channel === "whatsapp").id;
    convA = await open(a);
    convB = await open(b);
    const reply = await app.request("POST", "/messages", { body: { channel: "whatsapp", to: { contactId: b }, type: "text", text: "hello B" } });
    expect([reply.status, reply.body.error]).toEqual([202, undefined]);
    expect((await app.request("POST", `/conversations/${convB}/notes`, { body: { text: "same person as Ann?" } })).status).toBe(201);
    // B opts out of WhatsApp after that reply: the opt-out must win over A's opt-in.
    expect((await app.request("POST", `/contacts/${b}/opt-out`, { body: { channels: ["whatsapp"] } })).status).toBe(200);
    // Pipeline: a deal and a task on B.
    recordId = (await app.request("POST", "/records", { body: { title: "Deal", contactId: b, conversationId: convB } })).body.data.id;
    taskId = (await app.request("POST", "/tasks", { body: { title: "call back", recordId } })).body.data.id;
    // Sources: B was attributed first (earlier), A later — B's wins.
    const src = async (name: string, code: string) =>
      (await app.request("POST", "/sources", { body: { name, type: "link", channel: "whatsapp", code } })).body.data.id as string;
    sourceEarly = await src("Poster", "poster");
    const later = await src("Ad", "ad1");
    expect((await app.request("PUT", `/contacts/${b}/source`, { body: { sourceId: sourceEarly } })).status).toBe(200);
    app.clock.advance(60_000);
    expect((await app.request("PUT", `/contacts/${a}/source`, { body: { sourceId: later } })).status).toBe(200);
    // A campaign to tag vip: A is sent, B excluded (opted out on WhatsApp). One recipient row must remain: A's.
    const templateId = (await app.request("GET", "/templates?channel=whatsapp")).body.data.find((t: { name: string }) => t.name === "hello_world").id;
    const campaign = await app.request("POST", "/campaigns", {
      body: { name: "June", templateId, audience: { type: "tags", tags: ["vip"] }, askValues: { "body.1": "Sale" } },
    });
    expect(campaign.status).toBe(201);
    campaignId = campaign.body.data.id;
    await app.deps.queue.drain();
    expect((await rowsOf("campaign_recipients", a))[0]).toMatchObject({ status: "sent" });
    expect((await rowsOf("campaign_recipients", b))[0]).toMatchObject({ status: "excluded", reason: "noConsent" });

    messagesBefore = [...(await rowsOf("messages", a)), ...(await rowsOf("messages", b))].map((m) => m.id).sort();
    expect(messagesBefore.length).toBe(5); // 3 inbound, the reply, the campaign's message
    eventsBefore = app.emitted.length;
    const res = await merge(a, b);
    expect(res.status).toBe(200);
    merged = res.body.data;
  });

  test("no table names the merged-away contact any more, and it is gone", async () => {
    for (const table of Object.keys(MERGED_CONTACT_TABLES).filter((t) => t !== "contacts"))
      expect([table, (await rowsOf(table, b)).length]).toEqual([table, 0]);
    expect((await app.request("GET", `/contacts/${b}`)).status).toBe(404);
    const tomb = (await app.deps.db.sql(`SELECT first_name, last_name, deleted_at FROM contacts WHERE id = ?`).get(b)) as Record<string, unknown>;
    expect(tomb.first_name).toBeNull();
    expect(tomb.deleted_at).not.toBeNull();
  });

  test("fields: the target's value wins where both have one; identities and tags are the union; an opt-out wins", async () => {
    expect(merged).toMatchObject({
      id: a,
      firstName: "Ann",
      lastName: "Lee",
      city: "Istanbul",
      customFields: { plan: "pro", tier: "gold" },
      tags: ["june", "newsletter", "vip"],
      consent: { whatsapp: { status: "opted_out" }, email: { status: "opted_in" } },
    });
    expect(merged.identities.map((i: any) => `${i.channel}:${i.value}`).sort()).toEqual([
      "email:ann.lee@example.com",
      "whatsapp:+14155550111",
      "whatsapp:+14155550112",
    ]);
    expect((await rowsOf("contact_tags", a)).length).toBe(3);
    // The consent ledger: A's opt-in, B's two opt-ins and B's opt-out, all on A now.
    const history = (await rowsOf("consent_history", a)).map((h) => `${h.channel}:${h.status}`).sort();
    expect(history).toEqual(["email:opted_in", "whatsapp:opted_in", "whatsapp:opted_in", "whatsapp:opted_out"]);
    expect((await app.request("GET", `/contacts/${a}`)).body.data).toEqual(merged);
  });

  test("conversations: B's open one on the same account is folded into A's (messages, note, record link), the closed one moves", async () => {
    const conversations = await rowsOf("conversations", a);
    expect(conversations.map((c) => c.id).sort()).toEqual([convA, closedB].sort());
    expect((await app.request("GET", `/conversations/${convB}`)).status).toBe(404);
    const kept = (await app.request("GET", `/conversations/${convA}`)).body.data;
    expect(kept.status).toBe("open");
    expect(kept.notes.map((n: any) => n.text)).toEqual(["same person as Ann?"]);
    const inThread = (await app.deps.db.sql(`SELECT id, contact_id FROM messages WHERE conversation_id = ?`).all(convA)) as any[];
    // A's inbound, B's inbound, the reply to B and the campaign message to A.
    expect(inThread.length).toBe(4);
    expect(inThread.every((m) => m.contact_id === a)).toBe(true);
    expect((await rowsOf("messages", a)).map((m) => m.id).sort()).toEqual(messagesBefore);
    const state = await rowsOf("contact_channel_state", a);
    expect(state.length).toBe(2); // the WhatsApp account (B's later inbound won) and the e-mail account
  });

  test("pipeline record and task, source (the earlier first touch), campaign recipient (the one further along)", async () => {
    expect((await app.request("GET", `/records/${recordId}`)).body.data).toMatchObject({ contactId: a, conversationId: convA });
    expect((await app.request("GET", `/tasks?contactId=${a}`)).body.data).toEqual([expect.objectContaining({ id: taskId, contactId: a })]);
    expect((await app.request("GET", `/contacts/${a}/source`)).body.data).toMatchObject({ source: { id: sourceEarly } });
    expect((await rowsOf("contact_source_history", a)).length).toBe(2);
    expect(await rowsOf("campaign_recipients", a)).toEqual([expect.objectContaining({ campaign_id: campaignId, status: "sent" })]);
    const c = (await app.deps.db.sql(`SELECT matched, n_sent, x_no_consent FROM campaigns WHERE id = ?`).get(campaignId)) as any;
    expect([Number(c.matched), Number(c.n_sent), Number(c.x_no_consent)]).toEqual([1, 1, 0]);
  });

  test("events: contact.merged {contactId, mergedContactId} as the catalogue shows it; the target's new opt-out reported", () => {
    const events = eventsOf(app).slice(eventsBefore);
    expect(events.map((e) => e.type)).toEqual(["contact.opted_out", "contact.merged"]);
    expect(events[1]!.data).toEqual({ contactId: a, mergedContactId: b });
    expectSameShape(events[1]!.data, EVENT_TYPES.find((e) => e.name === "contact.merged")!.example, "$", { keysOnly: true });
    expect(events[0]!.data).toMatchObject({ contact: { id: a }, channel: "whatsapp", source: "api" });
  });
});

describe("the other side of each rule", () => {
  test("the source's recipient row is kept when it got further; the target's later inbound and unread counts add up", async () => {
    const templateId = (await app.request("GET", "/templates?channel=whatsapp")).body.data.find((t: { name: string }) => t.name === "hello_world").id;
    const a = await upsert({ identities: [{ channel: "whatsapp", value: "+14155550121" }], tags: ["autumn"], optIn: false });
    const b = await upsert({ identities: [{ channel: "whatsapp", value: "+14155550122" }], tags: ["autumn"], optIn: true });
    const campaign = await app.request("POST", "/campaigns", {
      body: { name: "Autumn", templateId, audience: { type: "tags", tags: ["autumn"] }, askValues: { "body.1": "Sale" } },
    });
    await app.deps.queue.drain();
    expect((await rowsOf("campaign_recipients", a))[0]).toMatchObject({ status: "excluded", reason: "noConsent" });
    expect((await rowsOf("campaign_recipients", b))[0]).toMatchObject({ status: "sent" });
    const bMessage = (await rowsOf("campaign_recipients", b))[0]!.message_id;
    // B wrote last, on the same account as A: B's inbound time (the window) is kept.
    await inbound(app, "whatsapp", { phone: "+14155550121" }, "a1", 600_000);
    await inbound(app, "whatsapp", { phone: "+14155550121" }, "a2", 500_000);
    app.clock.advance(1000); // conversations order by when a message arrived
    await inbound(app, "whatsapp", { phone: "+14155550122" }, "b1", 10_000);
    const bInbound = Number((await rowsOf("contact_channel_state", b))[0]!.last_inbound_at);
    expect((await merge(a, b)).status).toBe(200);
    expect(await rowsOf("campaign_recipients", a)).toEqual([
      expect.objectContaining({ campaign_id: campaign.body.data.id, status: "sent", message_id: bMessage }),
    ]);
    const c = (await app.deps.db.sql(`SELECT matched, n_sent, x_no_consent FROM campaigns WHERE id = ?`).get(campaign.body.data.id)) as any;
    expect([Number(c.matched), Number(c.n_sent), Number(c.x_no_consent)]).toEqual([1, 1, 0]);
    const state = await rowsOf("contact_channel_state", a);
    expect(state.map((s) => Number(s.last_inbound_at))).toEqual([bInbound]);
    const open = (await rowsOf("conversations", a)).filter((x) => x.status === "open");
    expect(open.length).toBe(1);
    expect(Number(open[0]!.unread_count)).toBe(3);
    // The kept conversation's last message is B's, the later one.
    const last = (await app.deps.db.sql(`SELECT content FROM messages WHERE id = ?`).get(open[0]!.last_message_id)) as { content: string };
    expect(JSON.parse(last.content)).toMatchObject({ text: "b1" });
  });

  test("the target's source is kept when it was attributed first", async () => {
    const a = await upsert({ identities: [{ channel: "email", value: "first@example.com" }] });
    const b = await upsert({ identities: [{ channel: "email", value: "second@example.com" }] });
    const src = async (code: string) =>
      (await app.request("POST", "/sources", { body: { name: code, type: "link", channel: "whatsapp", code } })).body.data.id as string;
    const first = await src("first-touch");
    const second = await src("second-touch");
    await app.request("PUT", `/contacts/${a}/source`, { body: { sourceId: first } });
    app.clock.advance(1000);
    await app.request("PUT", `/contacts/${b}/source`, { body: { sourceId: second } });
    expect((await merge(a, b)).status).toBe(200);
    expect((await app.request("GET", `/contacts/${a}/source`)).body.data).toMatchObject({ source: { id: first } });
    expect((await rowsOf("contact_sources", a)).length).toBe(1);
  });

  test("one unit of work: a failure part-way leaves both contacts as they were", async () => {
    const a = await upsert({ identities: [{ channel: "email", value: "unit-a@example.com" }], tags: ["one"] });
    const b = await upsert({ identities: [{ channel: "email", value: "unit-b@example.com" }], tags: ["two"], optIn: false });
    const store = contactMergeStore(app.deps.db);
    const original = store.foldCampaignRecipients;
    // The last rule but one: identities, tags, consent, conversations, messages have been re-pointed by then.
    store.foldCampaignRecipients = () => {
      throw new Error("disk full");
    };
    try {
      expect((await merge(a, b)).status).toBe(500);
    } finally {
      store.foldCampaignRecipients = original;
    }
    const after = (await app.request("GET", `/contacts/${b}`)).body.data;
    expect(after).toMatchObject({ identities: [{ value: "unit-b@example.com" }], tags: ["two"], consent: { email: { status: "opted_out" } } });
    expect((await app.request("GET", `/contacts/${a}`)).body.data).toMatchObject({ identities: [{ value: "unit-a@example.com" }], tags: ["one"] });
    expect(eventsOf(app, "contact.merged").some((e) => e.data.mergedContactId === b)).toBe(false);
  });
});

describe("links that name a merged-away contact", () => {
  test("an unsubscribe link mailed to it opts out the contact it went into, through a chain of merges; a deleted one's is dead", async () => {
    const a = await upsert({ identities: [{ channel: "email", value: "chain-a@example.com" }], optIn: true });
    const b = await upsert({ identities: [{ channel: "email", value: "chain-b@example.com" }] });
    const c = await upsert({ identities: [{ channel: "email", value: "chain-c@example.com" }] });
    const u = await modulesOf(app.deps).unsubscribe.service.load();
    const link = (contactId: string) => new URL(u.url({ companyId: app.company.id, contactId, channel: "email" })!).pathname;
    const oneClick = (path: string) =>
      app.app.handle(
        new Request(`http://localhost${path}`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "List-Unsubscribe=One-Click",
        }),
      );
    const toC = link(c);
    // C into B, then B into A: C's link reaches A in one lookup.
    expect((await merge(b, c)).status).toBe(200);
    expect((await merge(a, b)).status).toBe(200);
    expect((await rowsOf("contact_merges", a)).map((m) => m.merged_contact_id).sort()).toEqual([b, c].sort());
    expect((await app.app.handle(new Request(`http://localhost${toC}`))).status).toBe(200);
    expect((await oneClick(toC)).status).toBe(200);
    expect((await app.request("GET", `/contacts/${a}`)).body.data.consent.email).toMatchObject({ status: "opted_out" });
    expect(eventsOf(app, "contact.opted_out").at(-1)!.data).toMatchObject({ contact: { id: a }, channel: "email", source: "campaign_unsubscribe" });
    // The contact it went into deleted: the link is dead, as a deleted contact's own.
    expect((await app.request("DELETE", `/contacts/${a}`)).status).toBe(200);
    expect((await oneClick(toC)).status).toBe(404);
  });
});

describe("a merge racing a send to the merged-away contact loses nothing", () => {
  for (const order of ["send first", "merge first"] as const)
    test(order, async () => {
      const n = order === "send first" ? 1 : 2;
      const phone = `+1415555013${n}`;
      const a = await upsert({ identities: [{ channel: "email", value: `race${n}@example.com` }] });
      const b = await upsert({ identities: [{ channel: "whatsapp", value: phone }] });
      await inbound(app, "whatsapp", { phone }, "hi");
      const send = () => app.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone }, type: "text", text: "on its way" } });
      // Both in flight at once: they meet in the same group commit or in consecutive ones.
      const [sent, done] = order === "send first" ? await Promise.all([send(), merge(a, b)]) : (await Promise.all([merge(a, b), send()])).reverse();
      expect(done!.status).toBe(200);
      expect(sent!.status).toBe(202);
      const message = (await app.request("GET", `/messages/${sent!.body.data.id}`)).body.data;
      expect(message.contactId).toBe(a);
      const conversation = (await app.request("GET", `/conversations/${message.conversationId}`)).body.data;
      expect(conversation.contact?.id ?? conversation.contactId).toBe(a);
      expect(await rowsOf("messages", b)).toEqual([]);
      expect((await rowsOf("messages", a)).length).toBe(2);
    });
});

/** Holds the next merge after it moved every row, before it commits: `atGate` when it is there, `open` lets it go on. */
const holdMerge = () => holdAt(contactMergeStore(app.deps.db), "keepEarlierCreatedAt", "before");

describe("a send or upsert that resolves the merged-away contact while the merge is under way (PostgreSQL: units side by side)", () => {
  // The merge is held after it moved every row but before it commits; the send starts then. Read committed, the
  // send still sees the identity and the contact as they were: without a row lock it wrote its message and
  // conversation on the contact being merged away, after the merge had moved that contact's rows.
  for (const to of ["phone", "contactId"] as const)
    test.if(TEST_ENGINE === "postgres")(`to.${to}: the send waits for the merge, then lands on the contact it went into`, async () => {
      const phone = `+1415555014${to === "phone" ? 1 : 2}`;
      const a = await upsert({ identities: [{ channel: "email", value: `held-${to}@example.com` }] });
      const b = await upsert({ identities: [{ channel: "whatsapp", value: phone }] });
      await inbound(app, "whatsapp", { phone }, "hi");
      const { atGate, open, restore } = holdMerge();
      try {
        const merging = merge(a, b);
        await atGate;
        let settled = false;
        const sending = app
          .request("POST", "/messages", {
            body: { channel: "whatsapp", to: to === "phone" ? { phone } : { contactId: b }, type: "text", text: "during the merge" },
          })
          .finally(() => (settled = true));
        await Bun.sleep(300);
        expect(settled).toBe(false); // it waits for the merge's lock on the contact
        open();
        expect((await merging).status).toBe(200);
        const sent = await sending;
        if (to === "contactId") {
          // It named the merged-away contact itself: gone (404), nothing written for it.
          expect(sent.status).toBe(404);
        } else {
          expect([sent.status, sent.body.error]).toEqual([202, undefined]);
          const message = (await app.request("GET", `/messages/${sent.body.data.id}`)).body.data;
          expect(message.contactId).toBe(a);
          expect((await app.request("GET", `/conversations/${message.conversationId}`)).body.data.contact?.id).toBe(a);
        }
        expect(await rowsOf("messages", b)).toEqual([]);
        expect(await rowsOf("conversations", b)).toEqual([]);
      } finally {
        restore();
      }
    });

  test.if(TEST_ENGINE === "postgres")("an upsert adding an identity to the merged-away contact waits too; the identity lands on the target", async () => {
    const a = await upsert({ identities: [{ channel: "email", value: "held-up-a@example.com" }] });
    const b = await upsert({ identities: [{ channel: "email", value: "held-up-b@example.com" }] });
    const { atGate, open, restore } = holdMerge();
    try {
      const merging = merge(a, b);
      await atGate;
      const upserting = app.request("POST", "/contacts", {
        body: {
          identities: [
            { channel: "email", value: "held-up-b@example.com" },
            { channel: "telegram", value: "7070" },
          ],
        },
      });
      await Bun.sleep(200);
      open();
      expect((await merging).status).toBe(200);
      const up = await upserting;
      // Without the hold it updated B (200, B's id) and its new identity stayed on the tombstone.
      expect([up.status, up.body.data?.contact?.id]).toEqual([200, a]);
      expect((await app.request("GET", `/contacts/${a}`)).body.data.identities.map((i: { value: string }) => i.value).sort()).toEqual([
        "7070",
        "held-up-a@example.com",
        "held-up-b@example.com",
      ]);
      expect(await rowsOf("contact_identities", b)).toEqual([]);
    } finally {
      restore();
    }
  });
});

describe("every table with a contact column has a merge rule", () => {
  const contactColumn = /(^|_)contact_id$/;
  test("SQLite schema", () => {
    const tables = Object.values(schema)
      .filter((v) => is(v, SQLiteTable))
      .map((v) => sqliteTableConfig(v as SQLiteTable))
      .filter((c) => c.columns.some((col) => contactColumn.test(col.name)))
      .map((c) => c.name);
    expect(tables.sort()).toEqual(
      Object.keys(MERGED_CONTACT_TABLES)
        .filter((t) => t !== "contacts")
        .sort(),
    );
  });
  test("PostgreSQL schema", () => {
    const tables = Object.values(pgSchema)
      .filter((v) => is(v, PgTable))
      .map((v) => pgTableConfig(v as PgTable))
      .filter((c) => c.columns.some((col) => contactColumn.test(col.name)))
      .map((c) => c.name);
    expect(tables.sort()).toEqual(
      Object.keys(MERGED_CONTACT_TABLES)
        .filter((t) => t !== "contacts")
        .sort(),
    );
  });
});
