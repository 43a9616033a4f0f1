/** GET /messages and GET /messages/stats through the real app (table-driven), with the SQLite plans they use. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, sandboxChannels, type TestApp } from "../../../test/helpers/test-app";
import { expectContains } from "../../../test/helpers/scenarios";
import { inbound } from "../../../test/helpers/messaging";
import { createCompany } from "../companies/companies.service";
import { createApiKey } from "../api-keys/api-keys.service";
import { listSQL, SQL } from "./messages.repository";
import { DISPATCH_JOB } from "./messages.jobs";

const HOUR = 3_600_000;
const START = new Date("2026-06-01T12:30:00Z");
const onPostgres = process.env.SWITCHBOARD_TEST_ENGINE === "postgres";

let app: TestApp;
let otherKey: string;
let readOnly: string;
let noScope: string;
const sent: Record<string, { id: string; contactId: string; conversationId: string }> = {};

describe("GET /messages and GET /messages/stats", () => {
  beforeAll(async () => {
    app = await createTestApp({ start: START, config: { channels: sandboxChannels({ sent_after_ms: 0, delivered_after_ms: 3_600_000, read_after_ms: 0 }) } });
    await inbound(app, "whatsapp", { phone: "+14155550101" }, "hi", 10 * 60_000);
    const send = async (name: string, body: object) => {
      const r = await app.request("POST", "/messages", { body });
      if (r.status !== 202) throw new Error(JSON.stringify(r.body));
      sent[name] = r.body.data;
    };
    await send("text", { channel: "whatsapp", to: { phone: "+14155550101" }, type: "text", text: "one" });
    app.clock.advance(HOUR);
    await send("email", { channel: "email", to: { email: "ann@example.com" }, type: "email", email: { subject: "s", text: "t" } });
    await send("failing", { channel: "email", to: { email: "fail@example.com" }, type: "email", email: { subject: "s", text: "t" } });
    // Let the sandbox move them on (sent, and the failing one failed).
    await app.deps.queue.drain();
    const { company } = await createCompany({ db: app.deps.db, now: app.deps.now, slug: "other", name: "Other" });
    otherKey = (await createApiKey({ db: app.deps.db, now: app.deps.now, companyId: company.id, name: "b", scopes: ["*"] })).key;
    readOnly = (await app.newKey({ name: "reader", scopes: ["messages:read"] })).key;
    noScope = (await app.newKey({ name: "none", scopes: ["contacts:read"] })).key;
  });
  afterAll(() => app.close());

  const ids = (r: { body: any }) => r.body.data.map((m: { id: string }) => m.id);

  type Row = {
    name: string;
    method: string;
    url: string | (() => string);
    key?: "reader" | "none" | "other";
    status: number;
    contains?: unknown;
    check?: (r: { status: number; body: any }) => unknown;
    setup?: () => Promise<void>;
  };
  const keyOf = (k: Row["key"]) => (k === "reader" ? readOnly : k === "none" ? noScope : k === "other" ? otherKey : undefined);
  const rows: Row[] = [
    {
      name: "newest first, every message of the company (the inbound one too), each the shape of GET /messages/{id}",
      method: "GET",
      url: "/messages",
      status: 200,
      check: async (r) => {
        expect(r.body.data.length).toBe(4);
        expect(ids(r).slice(0, 3)).toEqual([sent.failing!.id, sent.email!.id, sent.text!.id]);
        expect(r.body.page).toEqual({ nextCursor: null, limit: 50 });
        const one = (await app.request("GET", `/messages/${sent.email!.id}`)).body.data;
        expect(r.body.data[1]).toEqual(one);
      },
    },
    { name: "status=failed", method: "GET", url: "/messages?status=failed", status: 200, check: (r) => expect(ids(r)).toEqual([sent.failing!.id]) },
    {
      name: "status=received (inbound)",
      method: "GET",
      url: "/messages?status=received",
      status: 200,
      check: (r) => expect(r.body.data.map((m: any) => m.direction)).toEqual(["inbound"]),
    },
    {
      name: "channel=email",
      method: "GET",
      url: "/messages?channel=email",
      status: 200,
      check: (r) => expect(ids(r)).toEqual([sent.failing!.id, sent.email!.id]),
    },
    {
      name: "channel and status together",
      method: "GET",
      url: "/messages?channel=email&status=failed",
      status: 200,
      check: (r) => expect(ids(r)).toEqual([sent.failing!.id]),
    },
    {
      name: "contactId",
      method: "GET",
      url: () => `/messages?contactId=${sent.text!.contactId}`,
      status: 200,
      check: (r) => expect(r.body.data.length).toBe(2),
    },
    {
      name: "conversationId",
      method: "GET",
      url: () => `/messages?conversationId=${sent.email!.conversationId}`,
      status: 200,
      check: (r) => expect(ids(r)).toEqual([sent.email!.id]),
    },
    {
      name: "campaignId of no message: empty",
      method: "GET",
      url: "/messages?campaignId=0193a4b2-0000-7000-8000-00000000ffff",
      status: 200,
      contains: { data: [], page: { nextCursor: null } },
    },
    {
      name: "from (inclusive): the last hour's",
      method: "GET",
      url: `/messages?from=${new Date(START.getTime() + HOUR).toISOString()}`,
      status: 200,
      check: (r) => expect(ids(r)).toEqual([sent.failing!.id, sent.email!.id]),
    },
    {
      name: "to (exclusive): before the last hour",
      method: "GET",
      url: `/messages?to=${new Date(START.getTime() + HOUR).toISOString()}`,
      status: 200,
      check: (r) => expect(r.body.data.length).toBe(2),
    },
    {
      name: "cursor pages through every message once, in order",
      method: "GET",
      url: "/messages?limit=1",
      status: 200,
      check: async (r) => {
        const seen = [...ids(r)];
        let cursor = r.body.page.nextCursor;
        while (cursor) {
          const next = await app.request("GET", `/messages?limit=1&cursor=${cursor}`);
          seen.push(...ids(next));
          cursor = next.body.page.nextCursor;
        }
        expect(seen).toEqual(ids(await app.request("GET", "/messages")));
      },
    },
    { name: "a messages:read key reads it", method: "GET", url: "/messages", key: "reader", status: 200 },
    { name: "a key without messages:read: 403", method: "GET", url: "/messages", key: "none", status: 403, contains: { error: { code: "API_SCOPE_MISSING" } } },
    { name: "another company sees none of it", method: "GET", url: "/messages", key: "other", status: 200, contains: { data: [] } },
    {
      name: "unknown status: 422 query:status",
      method: "GET",
      url: "/messages?status=pending",
      status: 422,
      contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "query:status" }] } },
    },
    {
      name: "unknown channel: 422 query:channel",
      method: "GET",
      url: "/messages?channel=fax",
      status: 422,
      contains: { error: { details: [{ pointer: "query:channel" }] } },
    },
    {
      name: "bad from: 422 query:from",
      method: "GET",
      url: "/messages?from=yesterday",
      status: 422,
      contains: { error: { details: [{ pointer: "query:from" }] } },
    },
    {
      name: "limit over 200: 422 query:limit",
      method: "GET",
      url: "/messages?limit=201",
      status: 422,
      contains: { error: { details: [{ pointer: "query:limit" }] } },
    },
    {
      name: "a foreign cursor: 422 query:cursor",
      method: "GET",
      url: `/messages?cursor=${Buffer.from('["x"]').toString("base64url")}`,
      status: 422,
      contains: { error: { details: [{ pointer: "query:cursor" }] } },
    },

    {
      name: "stats: the last 24 h by hour, every bucket listed, counted by current status",
      method: "GET",
      url: "/messages/stats",
      status: 200,
      check: (r) => {
        const d = r.body.data;
        expect(d.interval).toBe("hour");
        expect(d.buckets.length).toBe(24);
        expect(d.to).toBe("2026-06-01T14:00:00.000Z"); // the end of the current hour
        const total = d.buckets.reduce((s: number, b: any) => s + b.total, 0);
        expect(total).toBe(4);
        const last = d.buckets.at(-1);
        expect(last).toMatchObject({ start: "2026-06-01T13:00:00.000Z", failed: 1, total: 2 });
        expect(d.buckets.reduce((s: number, b: any) => s + b.received, 0)).toBe(1);
      },
    },
    {
      name: "stats by day with a channel",
      method: "GET",
      url: "/messages/stats?interval=day&channel=whatsapp&from=2026-05-30T00:00:00Z&to=2026-06-02T00:00:00Z",
      status: 200,
      check: (r) => {
        expect(r.body.data.buckets.map((b: any) => b.start)).toEqual(["2026-05-30T00:00:00.000Z", "2026-05-31T00:00:00.000Z", "2026-06-01T00:00:00.000Z"]);
        expect(r.body.data.buckets[2].total).toBe(2);
      },
    },
    {
      name: "stats: another company counts nothing",
      method: "GET",
      url: "/messages/stats",
      key: "other",
      status: 200,
      check: (r) => expect(r.body.data.buckets.every((b: any) => b.total === 0)).toBe(true),
    },
    {
      name: "stats: over 31 days: 422 query:from",
      method: "GET",
      url: "/messages/stats?from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z",
      status: 422,
      contains: { error: { details: [{ pointer: "query:from" }] } },
    },
    {
      name: "stats: from after to: 422",
      method: "GET",
      url: "/messages/stats?from=2026-06-02T00:00:00Z&to=2026-06-01T00:00:00Z",
      status: 422,
      contains: { error: { code: "VALIDATION_FAILED" } },
    },
    {
      name: "stats: interval=week: 422 query:interval",
      method: "GET",
      url: "/messages/stats?interval=week",
      status: 422,
      contains: { error: { details: [{ pointer: "query:interval" }] } },
    },
    { name: "stats: a key without messages:read: 403", method: "GET", url: "/messages/stats", key: "none", status: 403 },

    {
      name: "channels: each account's health from its last hour of sends",
      method: "GET",
      url: "/channels",
      status: 200,
      check: (r) => {
        const by = Object.fromEntries(r.body.data.map((a: any) => [a.channel, a.health]));
        expect(by.whatsapp).toMatchObject({ status: "ok", recentSent: 1, recentFailed: 0, lastFailedAt: null });
        expect(by.whatsapp.lastSentAt).toBeString();
        expect(by.email).toMatchObject({ status: "degraded", recentSent: 1, recentFailed: 1, lastFailureReason: "PROVIDER_REJECTED" });
        expect(by.email.lastFailedAt).toBeString();
        expect(by.telegram).toEqual({ status: "unknown", lastSentAt: null, lastFailedAt: null, lastFailureReason: null, recentSent: 0, recentFailed: 0 });
      },
    },
    {
      name: "channels: a key without messages:read sees no health",
      method: "GET",
      url: "/channels",
      key: "none",
      status: 200,
      check: (r) => expect(r.body.data.every((a: any) => a.health === null)).toBe(true),
    },
    {
      name: "channels: another company's accounts know nothing of these sends",
      method: "GET",
      url: "/channels",
      key: "other",
      status: 200,
      check: (r) => expect(r.body.data.every((a: any) => a.health === null || a.health.status === "unknown")).toBe(true),
    },
    {
      name: "backlog: nothing queued, one failure today",
      method: "GET",
      url: "/messages/backlog",
      status: 200,
      contains: { data: { queued: { total: 0, byChannel: {}, oldestCreatedAt: null }, failedLast24h: 1 } },
    },
    {
      name: "backlog: a message accepted and not yet sent is queued on its channel",
      method: "GET",
      url: "/messages/backlog",
      status: 200,
      setup: async () => {
        await app.request("POST", "/messages", {
          body: { channel: "email", to: { email: "bob@example.com" }, type: "email", email: { subject: "s", text: "t" } },
        });
      },
      contains: { data: { queued: { total: 1, byChannel: { email: 1 }, oldestCreatedAt: "2026-06-01T13:30:00.000Z" }, failedLast24h: 1 } },
    },
    {
      name: "status=queued: the accepted one, found in its dispatch lane",
      method: "GET",
      url: "/messages?status=queued",
      status: 200,
      check: (r) => expect(r.body.data.map((m: any) => [m.channel, m.status])).toEqual([["email", "queued"]]),
    },
    {
      name: "backlog: a queued message waiting for a retry (a dispatch jobs row, off its lane) is still counted and listed",
      method: "GET",
      url: "/messages/backlog",
      status: 200,
      setup: async () => {
        const id = (await app.request("GET", "/messages?status=queued")).body.data[0].id;
        await app.deps.db.unit(async () => {
          await app.deps.db.sql("UPDATE messages SET lease_until = NULL, lease_token = NULL WHERE id = ?").run(id);
          await app.deps.queue.enqueueJob({ type: DISPATCH_JOB, payload: { messageId: id }, groupKey: "x", runAt: new Date(START.getTime() + 100 * HOUR) });
        });
        const listed = await app.request("GET", "/messages?status=queued");
        expect(listed.body.data.map((m: any) => m.id)).toEqual([id]);
      },
      contains: { data: { queued: { total: 1, byChannel: { email: 1 }, oldestCreatedAt: "2026-06-01T13:30:00.000Z" }, failedLast24h: 1 } },
    },
    {
      name: "backlog: another company's is empty",
      method: "GET",
      url: "/messages/backlog",
      key: "other",
      status: 200,
      contains: { data: { queued: { total: 0 }, failedLast24h: 0 } },
    },
    { name: "backlog: a key without messages:read: 403", method: "GET", url: "/messages/backlog", key: "none", status: 403 },
  ];
  for (const row of rows)
    test(row.name, async () => {
      await row.setup?.();
      const r = await app.request(row.method, typeof row.url === "function" ? row.url() : row.url, { key: keyOf(row.key) });
      if (r.status !== row.status) throw new Error(`expected ${row.status}, got ${r.status}: ${JSON.stringify(r.body)}`);
      if (row.contains) expectContains(r.body, row.contains);
      await row.check?.(r);
    });

  test.skipIf(onPostgres)("each filter pages through an index (SQLite's plan): no scan, no sort", () => {
    // NB! SQLite's own planner, through the driver (this test is SQLite's alone): each EXPLAIN statement is
    // finalized, or the checkpoint at close finds the table locked (db.sql keeps its statements cached).
    const plan = (f: Parameters<typeof listSQL>[0]) => {
      const { text, args } = listSQL(f);
      const st = app.deps.db.$client.prepare(`EXPLAIN QUERY PLAN ${text}`);
      const rows = st.all("c", 50, ...(args as string[])) as { detail: string }[];
      st.finalize();
      return rows.map((d) => d.detail).join("; ");
    };
    const before: [number, string] = [1, "x"];
    expect(plan({})).toContain("messages_company_created_idx");
    expect(plan({ from: 1, to: 2, before })).toContain("messages_company_created_idx (company_id=? AND created_at>? AND created_at<?)");
    // Dense statuses and channels are checked on the company's rows as the walk meets them; the failed ones
    // (few among many) have a partial index of their own, the queued ones are the company's dispatch backlog.
    expect(plan({ status: "sent", before })).toContain("messages_company_created_idx");
    expect(plan({ status: "failed", before })).toContain("messages_company_failed_idx");
    expect(plan({ status: "queued" })).toContain("messages_bulk_dispatch_idx (channel_account_id=?)");
    expect(plan({ status: "queued" })).not.toContain("messages_company_created_idx");
    expect(plan({ channel: "email" })).toContain("messages_company_created_idx");
    expect(plan({ contactId: "c", contactConversationIds: ["v1", "v2"] })).toContain("messages_conversation_idx");
    expect(plan({ campaignId: "c" })).toContain("messages_company_created_idx");
    const store = (text: string) => {
      const st = app.deps.db.$client.prepare(`EXPLAIN QUERY PLAN ${text}`);
      const rows = (st.all(...((m) => (m.some((x) => x.length > 1) ? [...new Set(m)] : m))(text.match(/\?\d*/g) ?? []).map(() => "x")) as { detail: string }[])
        .map((d) => d.detail)
        .join("; ");
      st.finalize();
      return rows;
    };
    expect(store(SQL.sqlite.queuedByChannel)).toContain("SEARCH m USING INDEX messages_dispatch_idx (channel_account_id=?)");
    expect(store(SQL.sqlite.queuedByChannel)).toContain("SEARCH m USING INDEX messages_bulk_dispatch_idx (channel_account_id=?)");
    expect(store(SQL.sqlite.queuedByChannel)).not.toContain("messages_company_created_idx");
    expect(store(SQL.sqlite.countFailedSince)).toBe("SEARCH messages USING COVERING INDEX messages_company_failed_idx (company_id=? AND created_at>?)");
    expect(store(SQL.sqlite.recentOutboundByAccount)).toStartWith("SEARCH messages USING INDEX messages_company_created_idx (company_id=? AND created_at>?)");
    expect(store(SQL.sqlite.lastFailures)).toContain("SEARCH messages USING INDEX messages_company_failed_idx (company_id=?)");
    expect(store(SQL.sqlite.lastFailures)).not.toContain("SCAN messages");
    expect(store(SQL.sqlite.statsByBucket(false))).toStartWith(
      "SEARCH messages USING INDEX messages_company_created_idx (company_id=? AND created_at>? AND created_at<?)",
    );
    expect(store(SQL.sqlite.statsByBucket(true))).toStartWith(
      "SEARCH messages USING INDEX messages_company_created_idx (company_id=? AND created_at>? AND created_at<?)",
    );
    for (const f of [{}, { status: "sent" }, { status: "failed" }, { channel: "email" }, { campaignId: "c" }]) expect(plan(f)).not.toMatch(/SCAN|TEMP B-TREE/);
    // A contact's messages: its conversations' ranges, then a sort of that contact's messages alone.
    expect(plan({ contactId: "c", contactConversationIds: ["v1"] })).not.toMatch(/SCAN messages/);
  });
});
