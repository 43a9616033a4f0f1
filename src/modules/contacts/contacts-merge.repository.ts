/**
 * The contact-merge store (DESIGN §21): every row that names a contact, in every module's table, re-pointed
 * from the merged-away contact to the one that stays. SQL across modules' tables lives here on purpose: a merge
 * is one unit of work, and going through each module's service would need each to grow a "re-point" function
 * used by nobody else. Each function is asynchronous (issue 35's store contract) and must run inside the caller's unit (contacts.merge.ts);
 * none starts or ends a transaction.
 *
 * NB! `MERGED_CONTACT_TABLES` names every table with a contact column, and contacts.merge.test.ts compares it
 * with the schema itself: a new table with a `contact_id` fails that test until its rule is written here.
 */
import { storeDb, type Db } from "../../db/client";
import { perConnection } from "../../db/per-connection";
import { EXCLUDED_COLUMN } from "../campaigns/campaigns.table";

/** Every table with a contact reference, and where its rule is (the test reads the keys). */
export const MERGED_CONTACT_TABLES = {
  contacts: "the merged-away row becomes a tombstone (contacts.merge.ts)",
  contact_identities: "moveIdentities",
  contact_tags: "foldTags",
  contact_consents: "foldConsents",
  consent_history: "foldConsents",
  contact_channel_state: "foldChannelState",
  conversations: "foldConversations",
  messages: "moveMessages",
  pipeline_records: "movePipeline",
  pipeline_tasks: "movePipeline",
  contact_sources: "foldSource",
  contact_source_history: "foldSource",
  campaign_recipients: "foldCampaignRecipients",
  contact_merges: "recordMerge",
} as const;

interface ConsentRaw {
  channel: string;
  status: "opted_in" | "opted_out";
  source: string;
  updated_at: number;
}

interface ConversationRaw {
  id: string;
  channel_account_id: string;
  assignee_id: string | null;
  assignee_name: string | null;
  last_message_at: number | null;
  last_message_id: string | null;
  unread_count: number;
}

interface ChannelStateRaw {
  channel_account_id: string;
  last_inbound_at: number | null;
  conversation_ref: string | null;
}

interface RecipientRaw {
  campaign_id: string;
  contact_id: string;
  status: string;
  reason: string | null;
  message_id: string | null;
  replied_at: number | null;
}

/** Counter column of each recipient status (campaigns.repository.ts keeps the same map for its moves). */
const RECIPIENT_COUNTER: Record<string, string> = {
  pending: "n_pending",
  sent: "n_sent",
  delivered: "n_delivered",
  read: "n_read",
  failed: "n_failed",
  canceled: "n_canceled",
};
/** Counter column of each exclusion reason: the campaigns table's own (the merge moves its recipients' counts). */
const EXCLUDED_COUNTER: Record<string, string> = EXCLUDED_COLUMN;

/**
 * How far a campaign recipient got. A row with a live message beats one without, and a message further in its
 * lifecycle beats one behind: the kept row is the one its message's status reports will find (advance() looks a
 * recipient up by campaign, contact and message id), so the campaign's funnel keeps counting the send that
 * matters. A failed send ranks below a queued one (that one may still arrive), above having no message at all.
 */
function progress(r: RecipientRaw): number {
  if (r.status === "excluded" || r.status === "canceled") return 0;
  if (r.status === "pending") return r.message_id ? 3 : 1;
  return { failed: 2, sent: 4, delivered: 5, read: 6 }[r.status] ?? 0;
}

export function createContactMergeStore(dbIn: Db) {
  const db = storeDb(dbIn);
  return {
    /** Identities: the key is (company, channel, value), so none can collide — they all move. */
    async moveIdentities(companyId: string, from: string, to: string): Promise<number> {
      return (await db.sql(`UPDATE contact_identities SET contact_id = ? WHERE contact_id = ? AND company_id = ?`).run(to, from, companyId)).changes;
    },

    /** Tags: the union (a tag both carry stays once, with the target's link time). */
    async foldTags(from: string, to: string): Promise<void> {
      await db
        .sql(
          `INSERT INTO contact_tags (contact_id, tag_id, created_at) SELECT ?, tag_id, created_at FROM contact_tags WHERE contact_id = ? ON CONFLICT DO NOTHING`,
        )
        .run(to, from);
      await db.sql(`DELETE FROM contact_tags WHERE contact_id = ?`).run(from);
    },

    /**
     * Consent per channel: an opt-out on either side wins (the person said no from one of their identities; a
     * merge must never turn that into a yes). Where the source's opt-out replaces the target's opt-in, the
     * target's row takes the opt-out as it was recorded (source, time). The history (the ledger) moves whole.
     * Returns the channels on which the target went from opted in (or unknown) to opted out.
     */
    async foldConsents(from: string, to: string): Promise<{ channel: string; source: string }[]> {
      const read = async (id: string) =>
        (await db.sql(`SELECT channel, status, source, updated_at FROM contact_consents WHERE contact_id = ?`).all(id)) as unknown as ConsentRaw[];
      const target = new Map((await read(to)).map((c) => [c.channel, c]));
      const optedOut: { channel: string; source: string }[] = [];
      for (const c of await read(from)) {
        const kept = target.get(c.channel);
        if (!kept) {
          await db.sql(`UPDATE contact_consents SET contact_id = ? WHERE contact_id = ? AND channel = ?`).run(to, from, c.channel);
          if (c.status === "opted_out") optedOut.push({ channel: c.channel, source: c.source });
          continue;
        }
        if (kept.status === "opted_in" && c.status === "opted_out") {
          await db
            .sql(`UPDATE contact_consents SET status = ?, source = ?, updated_at = ? WHERE contact_id = ? AND channel = ?`)
            .run(c.status, c.source, c.updated_at, to, c.channel);
          optedOut.push({ channel: c.channel, source: c.source });
        }
        await db.sql(`DELETE FROM contact_consents WHERE contact_id = ? AND channel = ?`).run(from, c.channel);
      }
      await db.sql(`UPDATE consent_history SET contact_id = ? WHERE contact_id = ?`).run(to, from);
      return optedOut;
    },

    /**
     * What each channel account knows of the person: where both have a row on one account, the one with the
     * later inbound message wins whole — the window opens at the person's last message whichever identity
     * wrote it, and that row's conversation reference is the provider's current one.
     */
    async foldChannelState(from: string, to: string, at: number): Promise<void> {
      const read = async (id: string) =>
        (await db
          .sql(`SELECT channel_account_id, last_inbound_at, conversation_ref FROM contact_channel_state WHERE contact_id = ?`)
          .all(id)) as unknown as ChannelStateRaw[];
      const target = new Map((await read(to)).map((s) => [s.channel_account_id, s]));
      for (const s of await read(from)) {
        const kept = target.get(s.channel_account_id);
        if (!kept) {
          await db.sql(`UPDATE contact_channel_state SET contact_id = ? WHERE contact_id = ? AND channel_account_id = ?`).run(to, from, s.channel_account_id);
          continue;
        }
        if ((s.last_inbound_at ?? -1) > (kept.last_inbound_at ?? -1))
          await db
            .sql(`UPDATE contact_channel_state SET last_inbound_at = ?, conversation_ref = ?, updated_at = ? WHERE contact_id = ? AND channel_account_id = ?`)
            .run(s.last_inbound_at, s.conversation_ref ?? kept.conversation_ref, at, to, s.channel_account_id);
        await db.sql(`DELETE FROM contact_channel_state WHERE contact_id = ? AND channel_account_id = ?`).run(from, s.channel_account_id);
      }
    },

    /**
     * Conversations. At most one may be open per (contact, channel account) (conversations_one_open_uq). When
     * both contacts have an open one on the same account, the target's is kept and the source's is folded into
     * it: its messages, notes and pipeline links move over, the unread counts add up, the last message is the
     * later of the two, an unassigned one takes the other's assignee — and the emptied conversation is deleted.
     * Why fold rather than close the source's: it is the same person writing on the same account, so it is one
     * thread; an agent answering the kept one must see what was said in the other, and a closed shell would
     * split the history in the inbox. Every other conversation (closed, or open on an account the target has
     * none open on) moves as it is. Returns the ids of the conversations folded away.
     */
    async foldConversations(from: string, to: string, at: number): Promise<string[]> {
      const open = async (id: string) =>
        (await db
          .sql(
            `SELECT id, channel_account_id, assignee_id, assignee_name, last_message_at, last_message_id, unread_count
             FROM conversations WHERE contact_id = ? AND status = 'open'`,
          )
          .all(id)) as unknown as ConversationRaw[];
      const kept = new Map((await open(to)).map((c) => [c.channel_account_id, c]));
      const folded: string[] = [];
      for (const c of await open(from)) {
        const keep = kept.get(c.channel_account_id);
        if (!keep) continue;
        await db.sql(`UPDATE messages SET conversation_id = ? WHERE conversation_id = ?`).run(keep.id, c.id);
        await db.sql(`UPDATE conversation_notes SET conversation_id = ? WHERE conversation_id = ?`).run(keep.id, c.id);
        await db.sql(`UPDATE pipeline_records SET conversation_id = ? WHERE conversation_id = ?`).run(keep.id, c.id);
        const later = (c.last_message_at ?? -1) > (keep.last_message_at ?? -1);
        const assignee = keep.assignee_id !== null ? keep : c;
        await db
          .sql(
            `UPDATE conversations SET unread_count = ?, last_message_at = ?, last_message_id = ?, assignee_id = ?, assignee_name = ?, updated_at = ?
             WHERE id = ?`,
          )
          .run(
            keep.unread_count + c.unread_count,
            later ? c.last_message_at : keep.last_message_at,
            later ? c.last_message_id : keep.last_message_id,
            assignee.assignee_id,
            assignee.assignee_name,
            at,
            keep.id,
          );
        await db.sql(`DELETE FROM conversations WHERE id = ?`).run(c.id);
        folded.push(c.id);
      }
      await db.sql(`UPDATE conversations SET contact_id = ?, updated_at = ? WHERE contact_id = ?`).run(to, at, from);
      return folded;
    },

    /** Messages, inbound and outbound (queued ones too: their dispatch reads the row, not the contact). */
    async moveMessages(from: string, to: string): Promise<number> {
      return (await db.sql(`UPDATE messages SET contact_id = ? WHERE contact_id = ?`).run(to, from)).changes;
    },

    /** Pipeline records (deals) and tasks: no key involves the contact, they all move. */
    async movePipeline(from: string, to: string): Promise<void> {
      await db.sql(`UPDATE pipeline_records SET contact_id = ? WHERE contact_id = ?`).run(to, from);
      await db.sql(`UPDATE pipeline_tasks SET contact_id = ? WHERE contact_id = ?`).run(to, from);
    },

    /**
     * Source attribution: one row per contact; the earlier first touch wins (attribution is "who brought this
     * person first"). Both contacts' history rows move, so the losing attribution stays visible there.
     */
    async foldSource(from: string, to: string): Promise<void> {
      const of = async (id: string) =>
        ((await db.sql(`SELECT attributed_at FROM contact_sources WHERE contact_id = ?`).get(id)) as { attributed_at: number } | null) ?? undefined;
      const source = await of(from);
      const target = await of(to);
      if (source) {
        if (target && target.attributed_at <= source.attributed_at) await db.sql(`DELETE FROM contact_sources WHERE contact_id = ?`).run(from);
        else {
          if (target) await db.sql(`DELETE FROM contact_sources WHERE contact_id = ?`).run(to);
          await db.sql(`UPDATE contact_sources SET contact_id = ? WHERE contact_id = ?`).run(to, from);
        }
      }
      await db.sql(`UPDATE contact_source_history SET contact_id = ? WHERE contact_id = ?`).run(to, from);
    },

    /**
     * Campaign recipients: one row per (campaign, contact) (the fan-out's checkpoint). A campaign that had
     * only the source moves its row; one that had both keeps the row that got further (`progress`; a tie keeps
     * the target's) and drops the other, taking it out of the campaign's counters (matched, its status or
     * exclusion reason) so that they still add up to the rows. A reply recorded on the dropped row moves to the
     * kept one. The dropped row's message, if any, stays (it was sent, and charged) and moves with the others.
     * Returns how many rows were dropped.
     */
    async foldCampaignRecipients(from: string, to: string, at: number): Promise<number> {
      const both = (await db
        .sql(
          `SELECT s.campaign_id, s.contact_id, s.status, s.reason, s.message_id, s.replied_at,
                  t.contact_id AS t_contact_id, t.status AS t_status, t.reason AS t_reason, t.message_id AS t_message_id, t.replied_at AS t_replied_at
           FROM campaign_recipients s JOIN campaign_recipients t ON t.campaign_id = s.campaign_id AND t.contact_id = ?
           WHERE s.contact_id = ?`,
        )
        .all(to, from)) as unknown as (RecipientRaw & {
        t_contact_id: string;
        t_status: string;
        t_reason: string | null;
        t_message_id: string | null;
        t_replied_at: number | null;
      })[];
      for (const row of both) {
        const source: RecipientRaw = row;
        const target: RecipientRaw = {
          campaign_id: row.campaign_id,
          contact_id: row.t_contact_id,
          status: row.t_status,
          reason: row.t_reason,
          message_id: row.t_message_id,
          replied_at: row.t_replied_at,
        };
        const [kept, dropped] = progress(source) > progress(target) ? [source, target] : [target, source];
        await db.sql(`DELETE FROM campaign_recipients WHERE campaign_id = ? AND contact_id = ?`).run(dropped.campaign_id, dropped.contact_id);
        const repliedAt = kept.replied_at ?? dropped.replied_at;
        await db
          .sql(`UPDATE campaign_recipients SET contact_id = ?, replied_at = ?, updated_at = ? WHERE campaign_id = ? AND contact_id = ?`)
          .run(to, repliedAt, at, kept.campaign_id, kept.contact_id);
        const deltas: Record<string, number> = { matched: -1 };
        const counter = dropped.status === "excluded" ? EXCLUDED_COUNTER[dropped.reason ?? ""] : RECIPIENT_COUNTER[dropped.status];
        if (counter) deltas[counter] = -1;
        if (dropped.status === "pending" && dropped.message_id) deltas.n_queued = -1;
        if (dropped.replied_at !== null && kept.replied_at !== null) deltas.n_replied = -1;
        // Additive, like the campaign store's write-behind counters: the two compose in either order.
        const cols = Object.keys(deltas);
        await db
          .sql(`UPDATE campaigns SET ${cols.map((c) => `${c} = ${c} + ?`).join(", ")}, updated_at = ? WHERE id = ?`)
          .run(...cols.map((c) => deltas[c]!), at, row.campaign_id);
      }
      await db.sql(`UPDATE campaign_recipients SET contact_id = ?, updated_at = ? WHERE contact_id = ?`).run(to, at, from);
      return both.length;
    },

    /**
     * Notes where the merged-away contact went, and re-points the contacts merged into it before, so that a
     * chain (C into B, then B into A) still answers in one lookup.
     */
    async recordMerge(companyId: string, from: string, to: string, at: number): Promise<void> {
      await db.sql(`UPDATE contact_merges SET contact_id = ? WHERE contact_id = ?`).run(to, from);
      await db.sql(`INSERT INTO contact_merges (merged_contact_id, company_id, contact_id, merged_at) VALUES (?, ?, ?, ?)`).run(from, companyId, to, at);
    },

    /** The contact a merged-away one was folded into (the id itself when it never was). */
    async survivorOf(companyId: string, contactId: string): Promise<string> {
      const r = (await db.sql(`SELECT contact_id FROM contact_merges WHERE merged_contact_id = ? AND company_id = ?`).get(contactId, companyId)) as {
        contact_id: string;
      } | null;
      return r?.contact_id ?? contactId;
    },

    /** The contact stays known since the earlier of the two first sightings. */
    async keepEarlierCreatedAt(contactId: string, createdAt: number): Promise<void> {
      await db.sql(`UPDATE contacts SET created_at = ? WHERE id = ? AND created_at > ?`).run(createdAt, contactId, createdAt);
    },
  };
}

export type ContactMergeStore = ReturnType<typeof createContactMergeStore>;
/** The merge store of a connection (built on first use). */
export const contactMergeStore = perConnection(createContactMergeStore);
