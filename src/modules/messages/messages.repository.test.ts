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
