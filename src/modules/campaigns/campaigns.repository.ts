/**
 * The campaign engine's store (Listmonk's `Store`): every read and write of the campaigns and
 * campaign_recipients tables. Counters move in the same transaction as the rows they count; callers run
 * these inside one transaction.
 *
 * NB! Counter moves are kept back until the transaction commits (write-behind.ts) and merged: a campaign's
 * row is written once per group commit, not two or three times per recipient. Every read or write of a
 * campaign row below flushes them first, so nothing in the transaction sees the row without them.
 */
import { perConnection } from "../../db/per-connection";
import { storeDb, type Db } from "../../db/client";
import { perEngine, unplanned } from "../../db/dialect";
import { insertInto, mapRow, updateById } from "../../db/rows";
import { writeBehind } from "../../db/write-behind";
import { campaignRecipients, campaigns } from "./campaigns.table";

export type CampaignRow = typeof campaigns.$inferSelect;
export type RecipientRow = typeof campaignRecipients.$inferSelect;
export type CampaignProgress = Pick<CampaignRow, "id" | "status" | "recentOutcomes" | "nPending" | "resolvedAt">;

/** Counter column of each recipient status (excluded reasons have their own columns: campaigns.table.ts EXCLUDED_COLUMN). */
const COUNTER: Record<string, string> = {
  pending: "n_pending",
  sent: "n_sent",
  delivered: "n_delivered",
  read: "n_read",
  failed: "n_failed",
  canceled: "n_canceled",
};

/**
 * NB! SQLite, without table statistics, prefers the status index (two equality columns) and walks every
 * pending recipient whose message is still queued (up to a window of 4,000) before the first without one:
 * ~0.9 ms a batch. The partial index holds exactly the recipients without a message.
 */
const TODO = perEngine(
  (e) =>
    `SELECT contact_id FROM campaign_recipients ${e === "sqlite" ? "INDEXED BY campaign_recipients_todo_idx " : ""}WHERE campaign_id = ${unplanned("?1", "TEXT")}
     AND status = 'pending' AND message_id IS NULL ORDER BY contact_id LIMIT ${unplanned("?2", "INTEGER")}`,
);

type Bump = { deltas: Record<string, number>; at: number; outcome?: "s" | "f" };
/** The last OUTCOMES send outcomes kept in `recent_outcomes` (the ERROR_RATE pause reads them). */
export const OUTCOMES = 100;
const APPEND_OUTCOMES = perEngine((e) => (e === "sqlite" ? `substr(recent_outcomes || ?, -${OUTCOMES})` : `right(recent_outcomes || ?, ${OUTCOMES})`));

export function createCampaignStore(dbIn: Db) {
  const db = storeDb(dbIn);
  /** One UPDATE of a campaign's row for the counter moves kept back: their deltas summed, their outcomes appended. */
  const counters = writeBehind<Bump>(dbIn, async (id, bumps) => {
    const sums: Record<string, number> = {};
    let at = 0;
    let outcomes = "";
    for (const b of bumps) {
      for (const k in b.deltas) sums[k] = (sums[k] ?? 0) + b.deltas[k]!;
      at = Math.max(at, b.at);
      if (b.outcome) outcomes += b.outcome;
    }
    const cols = Object.keys(sums).filter((k) => sums[k] !== 0);
    if (!cols.length && !outcomes) return;
    const set = cols.map((c) => `${c} = ${c} + ?`);
    const values: (number | string)[] = cols.map((c) => sums[c]!);
    if (outcomes) set.push(`recent_outcomes = ${APPEND_OUTCOMES[db.engine]}`), values.push(outcomes.slice(-OUTCOMES));
    await db.sql(`UPDATE campaigns SET ${set.join(", ")}, updated_at = ? WHERE id = ?`).run(...values, at, id);
  });
  const byId = async (id: string): Promise<CampaignRow | undefined> => {
    await counters.flush();
    return mapRow(campaigns, await db.sql(`SELECT * FROM campaigns WHERE id = ?`).get(id));
  };
  const insertRecipient = db.sql(
    `INSERT INTO campaign_recipients (campaign_id, contact_id, status, reason, message_id, replied_at, updated_at) VALUES (?, ?, ?, ?, NULL, NULL, ?)
     ON CONFLICT DO NOTHING`,
  );

  return {
    async insertCampaign(row: CampaignRow): Promise<void> {
      await insertInto(db, campaigns, row);
    },
    get: byId,
    async ofCompany(companyId: string, id: string): Promise<CampaignRow | undefined> {
      const c = await byId(id);
      return c && c.companyId === companyId ? c : undefined;
    },
    /** `fromStatus`: only while the campaign still has it; whether it changed. */
    async updateCampaign(id: string, changes: Partial<CampaignRow>, fromStatus?: string): Promise<boolean> {
      await counters.flush();
      return (await updateById(db, campaigns, id, changes, fromStatus === undefined ? undefined : { column: "status", value: fromStatus })) > 0;
    },
    /**
     * Adds to counter columns (`n_sent`, `x_blocked`, `spent` …) by delta; `outcome` ("s" sent, "f" failed):
     * appends it to the recent outcomes. Written when the unit commits, or before the next read of a
     * campaign (see the file's head); PostgreSQL: at once (write-behind.ts).
     */
    async bump(id: string, deltas: Record<string, number>, at: number, outcome?: "s" | "f"): Promise<void> {
      await counters.add(id, { deltas, at, outcome });
    },
    async list({
      companyId,
      status,
      channel,
      limit,
      before,
    }: {
      companyId: string;
      status?: string;
      channel?: string;
      limit: number;
      before?: string;
    }): Promise<CampaignRow[]> {
      await counters.flush();
      return (
        await db
          .sql(
            `SELECT * FROM campaigns WHERE company_id = ?1 AND (CAST(?2 AS TEXT) IS NULL OR status = ?2) AND (CAST(?3 AS TEXT) IS NULL OR channel = ?3) AND (CAST(?4 AS TEXT) IS NULL OR id < ?4)
             ORDER BY id DESC LIMIT ?5`,
          )
          .all(companyId, status ?? null, channel ?? null, before ?? null, limit)
      ).map((r) => mapRow(campaigns, r)!);
    },
    /** Scheduled campaigns whose start is due (start-up catch-up; the queue holds the normal path). */
    async dueScheduled(now: number): Promise<CampaignRow[]> {
      await counters.flush();
      return (await db.sql(`SELECT * FROM campaigns WHERE status = 'scheduled' AND scheduled_at <= ?`).all(now)).map((r) => mapRow(campaigns, r)!);
    },

    // ---------------------------------------------------------------- recipients
    /** Writes recipient rows of a resolved audience page; returns how many were new. */
    async addRecipients(campaignId: string, rows: { contactId: string; status: "pending" | "excluded"; reason: string | null }[], at: number): Promise<number> {
      let n = 0;
      for (const r of rows) n += (await insertRecipient.run(campaignId, r.contactId, r.status, r.reason, at)).changes;
      return n;
    },
    /** The next pending recipients that have no message yet, in contact order. */
    async todo(campaignId: string, limit: number): Promise<string[]> {
      return ((await db.sql(TODO[db.engine]).all(campaignId, limit)) as { contact_id: string }[]).map((r) => r.contact_id);
    },
    /** Moves a recipient `from` → `to` with its message's status; false (nothing written) when it is not at `from` with that message. */
    async advance({
      campaignId,
      contactId,
      messageId,
      from,
      to,
      reason,
      at,
    }: {
      campaignId: string;
      contactId: string;
      messageId: string;
      from: string;
      to: string;
      reason: string | null;
      at: number;
    }): Promise<boolean> {
      return (
        (
          await db
            .sql(
              `UPDATE campaign_recipients SET status = ?, reason = ?, updated_at = ? WHERE campaign_id = ? AND contact_id = ? AND message_id = ? AND status = ?`,
            )
            .run(to, reason, at, campaignId, contactId, messageId, from)
        ).changes === 1
      );
    },
    /** What a send's outcome decides from (pause on errors, complete): not the audience, template or texts. */
    async progress(id: string): Promise<CampaignProgress | undefined> {
      await counters.flush();
      return mapRow(campaigns, await db.sql(`SELECT id, status, recent_outcomes, n_pending, resolved_at FROM campaigns WHERE id = ?`).get(id));
    },
    /**
     * Claims a recipient for its message: only while it is still pending without a message. Returns false when
     * something else got there first (so the caller rolls its message back).
     */
    async claim(campaignId: string, contactId: string, messageId: string, at: number): Promise<boolean> {
      return (
        (
          await db
            .sql(
              `UPDATE campaign_recipients SET message_id = ?, updated_at = ? WHERE campaign_id = ? AND contact_id = ? AND status = 'pending' AND message_id IS NULL`,
            )
            .run(messageId, at, campaignId, contactId)
        ).changes === 1
      );
    },
    async setStatus(campaignId: string, contactId: string, status: string, reason: string | null, at: number): Promise<void> {
      await db
        .sql(`UPDATE campaign_recipients SET status = ?, reason = ?, updated_at = ? WHERE campaign_id = ? AND contact_id = ?`)
        .run(status, reason, at, campaignId, contactId);
    },
    /** Cancels every recipient not yet given a message; returns how many. */
    async cancelPending(campaignId: string, at: number): Promise<number> {
      return (
        await db
          .sql(`UPDATE campaign_recipients SET status = 'canceled', updated_at = ? WHERE campaign_id = ? AND status = 'pending' AND message_id IS NULL`)
          .run(at, campaignId)
      ).changes;
    },
    async listRecipients({
      campaignId,
      status,
      reason,
      limit,
      after,
    }: {
      campaignId: string;
      status?: string;
      reason?: string;
      limit: number;
      after?: string;
    }): Promise<RecipientRow[]> {
      // A failed recipient's reason is its message's normalized error_reason. NB! Read from the message, not
      // the row: rows failed before 0.2.0 hold the provider's code there (sandbox_blocked, 403). A rare reason
      // scans the campaign's rows (keyset on the primary key) up to a page.
      const rows = await db
        .sql(
          `SELECT * FROM (
             SELECT r.campaign_id, r.contact_id, r.status, r.message_id, r.replied_at, r.updated_at,
                    CASE WHEN r.status = 'failed' THEN COALESCE((SELECT m.error_reason FROM messages m WHERE m.id = r.message_id), r.reason) ELSE r.reason END AS reason
             FROM campaign_recipients r WHERE r.campaign_id = ?1 AND r.contact_id > ?2 AND (CAST(?3 AS TEXT) IS NULL OR r.status = ?3)
           ) x WHERE (CAST(?4 AS TEXT) IS NULL OR x.reason = ?4) ORDER BY x.contact_id LIMIT ?5`,
        )
        .all(campaignId, after ?? "", status ?? null, reason ?? null, limit);
      return rows.map((r) => mapRow(campaignRecipients, r)!);
    },
    /**
     * A contact wrote in on an account: their recipient rows of campaigns on that account whose message went
     * out and who had not replied are marked replied; returns the campaigns to count it for.
     */
    async markReplied(contactId: string, channelAccountId: string, at: number): Promise<string[]> {
      return (
        (await db
          .sql(
            `UPDATE campaign_recipients SET replied_at = ?1 WHERE contact_id = ?2 AND message_id IS NOT NULL AND replied_at IS NULL
             AND status IN ('sent', 'delivered', 'read')
             AND campaign_id IN (SELECT id FROM campaigns WHERE channel_account_id = ?3)
             RETURNING campaign_id`,
          )
          .all(at, contactId, channelAccountId)) as { campaign_id: string }[]
      ).map((r) => r.campaign_id);
    },
    /** Recipients by status of the campaigns not finished (metrics). */
    async activeProgress(): Promise<{ id: string; companyId: string; status: string; counts: Record<string, number> }[]> {
      await counters.flush();
      return (
        (await db
          .sql(
            `SELECT id, company_id, status, matched, n_pending, n_sent, n_delivered, n_read, n_failed, n_canceled FROM campaigns WHERE status IN ('scheduled', 'running', 'paused')`,
          )
          .all()) as Record<string, string | number>[]
      ).map((r) => ({
        id: r.id as string,
        companyId: r.company_id as string,
        status: r.status as string,
        counts: {
          matched: r.matched as number,
          pending: r.n_pending as number,
          sent: r.n_sent as number,
          delivered: r.n_delivered as number,
          read: r.n_read as number,
          failed: r.n_failed as number,
          canceled: r.n_canceled as number,
        },
      }));
    },
    counterOf(status: string): string | undefined {
      return COUNTER[status];
    },
  };
}

export type CampaignStore = ReturnType<typeof createCampaignStore>;

/**
 * Which campaigns use a template, for the templates module (DELETE /templates/{id}): a store of its own, so a
 * question from outside the engine builds none of the engine store's statements and write-behind counters.
 */
export const campaignTemplateUse = perConnection((db: Db) => ({
  /** Ids of the running or scheduled campaigns that send `templateId`. */
  async runningOrScheduled(templateId: string): Promise<string[]> {
    return (
      (await storeDb(db).sql(`SELECT id FROM campaigns WHERE template_id = ? AND status IN ('running', 'scheduled') ORDER BY id`).all(templateId)) as {
        id: string;
      }[]
    ).map((r) => r.id);
  },
}));
