/**
 * The messages table's indexes are few (each is written by every message it covers): the searches that
 * lean on something else are checked here for the index they use (SQLite's plans; PostgreSQL plans by
 * table statistics, so the plans are not compared there).
 */
import { afterAll, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openDatabase } from "../../db/client";
import { migrate } from "../../db/migrate";
import { LANE_SQL, SQL } from "./messages.repository";
import { DAILY_LIMITED_OUTBOUND } from "./messages.table";

const onPostgres = process.env.SWITCHBOARD_TEST_ENGINE === "postgres";
const dir = mkdtempSync(join(tmpdir(), "sb-msg-plans-"));
const db = openDatabase(join(dir, "sb.db"));
migrate(db);
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const plan = async (text: string) => {
  const marks = text.match(/\?\d*/g) ?? [];
  const args = (marks.some((m) => m.length > 1) ? [...new Set(marks)] : marks).map(() => "x");
  return ((await db.sql(`EXPLAIN QUERY PLAN ${text}`).all(...args)) as { detail: string }[]).map((r) => r.detail);
};

test.skipIf(onPostgres)("the X daily DM count searches its partial index; no other channel's message is in it", async () => {
  expect(DAILY_LIMITED_OUTBOUND).toBe("direction = 'outbound' AND channel IN ('x')");
  expect(await plan(SQL.sqlite.countDailyLimited)).toEqual([
    expect.stringContaining("USING COVERING INDEX messages_daily_limit_idx (channel_account_id=? AND created_at>?)"),
  ]);
});

test.skipIf(onPostgres)("watermark receipts search the contact's conversations, not the account's messages", async () => {
  expect((await plan(SQL.sqlite.outboundSentUpTo)).find((d) => d.includes("SEARCH messages"))).toContain(
    "USING INDEX messages_conversation_idx (conversation_id=?)",
  );
});

/** The searches of the company's backlog (companyBacklog): the dispatch jobs rows, then each lane's walk of its accounts and their ranges. */
const BACKLOG_PLAN = [
  expect.stringMatching(/^SEARCH j USING (COVERING )?INDEX jobs_claim_idx \(type=\?\)/),
  expect.stringMatching(/^SEARCH m USING INDEX sqlite_autoindex_messages_1 \(id=\?\)/),
  ...["messages_dispatch_idx", "messages_bulk_dispatch_idx"].flatMap((index) => [
    `SEARCH m USING INDEX ${index} (channel_account_id=?)`,
    `SCAN messages USING INDEX ${index}`,
    `SEARCH messages USING INDEX ${index} (channel_account_id>?)`,
    `SEARCH messages USING INDEX ${index} (channel_account_id=?)`,
  ]),
];

test.skipIf(onPostgres)("DELETE /media's check searches the company's share of the dispatch backlog, not its messages", async () => {
  // No index of queued messages (migration 0014 has none: it cost every message an entry written at acceptance
  // and removed at `sent`): the dispatch jobs rows, and each lane's accounts of this company.
  // Then the scheduled messages, through their due jobs' rows.
  const searches = (await plan(SQL.sqlite.queuedWithMedia)).filter((d) => / (messages|m|j) /.test(d));
  expect(searches).toEqual([...BACKLOG_PLAN, ...BACKLOG_PLAN.slice(0, 2)]);
  expect(searches.join("; ")).not.toContain("messages_company_created_idx");
});

test.skipIf(onPostgres)("a lane's dispatch claims, walks and sweeps search its own index", async () => {
  for (const [lane, index] of [
    ["direct", "messages_dispatch_idx"],
    ["bulk", "messages_bulk_dispatch_idx"],
  ] as const) {
    const q = LANE_SQL.sqlite[lane];
    expect((await plan(q.claim)).filter((d) => d.startsWith("SEARCH"))).toEqual([
      "SEARCH messages USING INTEGER PRIMARY KEY (rowid=?)",
      `SEARCH messages USING INDEX ${index} (channel_account_id=? AND lease_token=? AND lease_until>? AND lease_until<?)`,
    ]);
    expect(await plan(q.expired)).toEqual([
      expect.stringMatching(new RegExp(`^SEARCH messages USING INDEX ${index} \\(channel_account_id=\\? AND lease_token>\\?`)),
    ]);
    // The walk steps from key to key (each step a search; its first is the index's first entry).
    const walk = (await plan(q.groups)).filter((d) => / messages /.test(d));
    expect(walk).toEqual([
      `SCAN messages USING INDEX ${index}`,
      `SEARCH messages USING INDEX ${index} (channel_account_id>?)`,
      `SEARCH messages USING INDEX ${index} (channel_account_id=? AND lease_token=? AND lease_until>?)`,
    ]);
  }
});

test.skipIf(onPostgres)("a scheduled job's reports find their messages by provider id, one index probe each", async () => {
  expect((await plan(SQL.sqlite.headsByProviderIds)).find((d) => d.includes("messages"))).toMatch(
    /^SEARCH messages USING INDEX messages_provider_id_uq \(channel_account_id=\? AND provider_message_id=\?\)/,
  );
});

test.skipIf(!onPostgres)("PostgreSQL: a scheduled job's reports probe the provider id index per id, not a join over the account", async () => {
  const { createTestApp } = await import("../../../test/helpers/test-app");
  const app = await createTestApp({ balance: "1000" });
  try {
    // An account with a thousand sent messages, not analyzed yet: `IN (subquery)` was planned as a hash join
    // over all of them here.
    const body = { channel: "whatsapp", to: { phone: "+14155550100" }, type: "template", template: { name: "hello_world", params: { "body.1": "Ann" } } };
    for (let i = 0; i < 20; i++) await Promise.all(Array.from({ length: 50 }, () => app.request("POST", "/messages", { body })));
    await app.deps.queue.drain();
    const sent = await app.deps.db
      .sql("SELECT channel_account_id AS a, provider_message_id AS p FROM messages WHERE provider_message_id IS NOT NULL LIMIT 25")
      .all();
    expect(sent).toHaveLength(25);
    const ids = JSON.stringify(sent.map((r) => r.p));
    const lines = (await app.deps.db.sql(`EXPLAIN ${SQL.postgres.headsByProviderIds}`).all(sent[0]!.a as string, ids)).map((r) => String(Object.values(r)[0]));
    expect(lines[0]).toStartWith("Nested Loop");
    expect(lines.join("\n")).toContain("Index Scan using messages_provider_id_uq on messages");
    expect(lines.join("\n")).not.toContain("Hash");
  } finally {
    await app.close();
  }
});
