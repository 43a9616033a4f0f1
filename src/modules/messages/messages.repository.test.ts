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
import { SQL } from "./messages.repository";
import { DAILY_LIMITED_OUTBOUND } from "./messages.table";

const onPostgres = process.env.SWITCHBOARD_TEST_ENGINE === "postgres";
const dir = mkdtempSync(join(tmpdir(), "sb-msg-plans-"));
const db = openDatabase(join(dir, "sb.db"));
migrate(db);
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const plan = (text: string) => {
  const marks = text.match(/\?\d*/g) ?? [];
  const args = (marks.some((m) => m.length > 1) ? [...new Set(marks)] : marks).map(() => "x");
  return (db.$client.query(`EXPLAIN QUERY PLAN ${text}`).all(...args) as { detail: string }[]).map((r) => r.detail);
};

test.skipIf(onPostgres)("the X daily DM count searches its partial index; no other channel's message is in it", () => {
  expect(DAILY_LIMITED_OUTBOUND).toBe("direction = 'outbound' AND channel IN ('x')");
  expect(plan(SQL.sqlite.countDailyLimited)).toEqual([expect.stringContaining("USING COVERING INDEX messages_daily_limit_idx (channel_account_id=? AND created_at>?)")]);
});

test.skipIf(onPostgres)("watermark receipts search the contact's conversations, not the account's messages", () => {
  expect(plan(SQL.sqlite.outboundSentUpTo).find((d) => d.includes("SEARCH messages"))).toContain("USING INDEX messages_conversation_idx (conversation_id=?)");
});

test.skipIf(onPostgres)("DELETE /media's check searches the dispatch backlog, then each queued message by its key", () => {
  expect(plan(SQL.sqlite.queuedWithMedia)).toEqual([expect.stringMatching(/^SEARCH j USING (COVERING )?INDEX jobs_claim_idx \(type=\?\)/), expect.stringMatching(/^SEARCH m USING INDEX sqlite_autoindex_messages_1 \(id=\?\)/)]);
});
