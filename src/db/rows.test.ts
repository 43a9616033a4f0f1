/** mapRow: a raw snake_case row to the drizzle-typed row, with the table's own decoders. */
import { expect, test } from "bun:test";
import { getTableColumns } from "drizzle-orm";
import { messages } from "../modules/messages/messages.table";
import { openDatabase } from "./client";
import { migrate } from "./migrate";
import { insertInto, insertRow, mapRow, updateById } from "./rows";

test("mapRow decodes JSON, booleans and timestamps, keeps null, leaves columns the row lacks undefined", () => {
  const at = Date.UTC(2026, 10, 26, 8, 0, 0);
  const row = mapRow(messages, {
    id: "m1",
    company_id: "c1",
    content: '{"text":"hi"}',
    metadata: "{}",
    charged: 1,
    refunded: 0,
    unit_price: 50_000,
    created_at: at,
    sent_at: null,
    provider_message_id: null,
  })!;
  expect(row.id).toBe("m1");
  expect(row.content).toEqual({ text: "hi" });
  expect(row.metadata).toEqual({});
  expect([row.charged, row.refunded]).toEqual([true, false]);
  expect(row.unitPrice).toBe(50_000);
  expect(row.createdAt).toEqual(new Date(at));
  expect(row.sentAt).toBeNull();
  expect(row.providerMessageId).toBeNull();
  expect("readAt" in row && row.readAt === undefined).toBe(true); // not selected
  expect(Object.keys(row)).toEqual(Object.keys(getTableColumns(messages)));
  expect(mapRow(messages, null)).toBeUndefined();
});

test("insertRow encodes JSON, booleans and timestamps, keeps null, gives an omitted column its default; mapRow reads it back", () => {
  const db = openDatabase(":memory:");
  migrate(db);
  db.$client.exec("PRAGMA foreign_keys = OFF");
  const at = new Date(Date.UTC(2026, 10, 26, 8, 0, 0));
  const given = {
    id: "m1",
    companyId: "c1",
    conversationId: "v1",
    contactId: "k1",
    channel: "whatsapp",
    channelAccountId: "a1",
    direction: "outbound",
    type: "text",
    content: { text: 'hi "there"' },
    address: "+14155550100",
    status: "queued",
    priceType: "free",
    unitPrice: 0,
    charged: true,
    metadata: { k: "v" },
    createdAt: at,
    updatedAt: at,
    sentAt: null,
  } as const;
  insertRow(db, messages, given as never);
  const raw = db.$client.query("SELECT * FROM messages WHERE id = 'm1'").get() as Record<string, unknown>;
  expect([raw.content, raw.metadata, raw.charged, raw.refunded, raw.created_at, raw.sent_at]).toEqual([
    '{"text":"hi \\"there\\""}',
    '{"k":"v"}',
    1,
    0,
    at.getTime(),
    null,
  ]);
  const row = mapRow(messages, raw)!;
  expect(row).toMatchObject({ ...given, refunded: false, templateId: null });
  db.close();
});

test("insertInto and updateById (the asynchronous contract) write what insertRow and updateRow write; db.sql rejects instead of throwing", async () => {
  const db = openDatabase(":memory:");
  migrate(db);
  db.$client.exec("PRAGMA foreign_keys = OFF");
  const at = new Date(Date.UTC(2026, 10, 26, 8, 0, 0));
  const row = { id: "m2", companyId: "c1", conversationId: "v1", contactId: "k1", channel: "telegram", channelAccountId: "a1" };
  const given = { ...row, direction: "outbound", type: "text", content: { text: "x" }, address: "1", status: "queued", priceType: "free" };
  await insertInto(db, messages, { ...given, unitPrice: 0, charged: false, metadata: {}, createdAt: at, updatedAt: at } as never);
  await updateById(db, messages, "m2", { status: "sent", sentAt: at, refunded: true });
  await updateById(db, messages, "m2", {}); // no column: nothing runs
  const read = mapRow(messages, await db.sql("SELECT * FROM messages WHERE id = ?").get("m2"))!;
  expect([read.status, read.sentAt, read.refunded, read.content]).toEqual(["sent", at, true, { text: "x" }]);
  expect(await db.sql("SELECT count(*) AS n FROM messages WHERE status = ?1 OR status = ?1").values("sent")).toEqual([[1]]);
  expect((await db.sql("UPDATE messages SET status = 'read' WHERE id = ?").run("m2")).changes).toBe(1);
  const failed = db.sql("SELECT * FROM no_such_table").all();
  expect(failed).toBeInstanceOf(Promise);
  await expect(failed).rejects.toThrow(/no_such_table/);
  db.close();
});
