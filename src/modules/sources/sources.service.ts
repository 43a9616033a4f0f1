/**
 * Source tracking (DESIGN §13, licensed module `sources`): sources with their click-to-chat links and QR
 * codes, first-touch attribution of contacts from what inbound messages carry, manual assignment with
 * history, and statistics per period. No HTTP here: routes and the inbound subscriber call in.
 */
import QRCode from "qrcode";
import { customAlphabet } from "nanoid";
import type { Channel } from "../../channels/channel.types";
import type { SourcesServiceNeeds } from "./sources.needs";
import { AppError, notFound } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { getContact } from "../contacts/contacts.service";
import { conversationsOfContacts } from "../conversations/conversations.service";
import { accountsOf } from "../channels-api/channel-accounts";
import { countConversationMessages } from "../messages/messages.service";
import { countWonRecords } from "../pipeline/pipeline.service";
import { chatLink, codesInText, referralClue } from "./sources.links";
import type { SourceType } from "./sources.model";
import { createSourcesRepository, type SourceRow } from "./sources.repository";

export interface SourceStats {
  contacts: number;
  conversations: number;
  messages: number;
  /** Records won by these contacts; null when the pipeline module is not licensed. */
  recordsWon: number | null;
}

const randomCode = customAlphabet("abcdefghijkmnpqrstuvwxyz23456789", 10);
const iso = (d: Date | null) => (d ? d.toISOString() : null);
const adCode = (adId: string) => `ad-${adId.replace(/[^A-Za-z0-9_-]/g, "_")}`.slice(0, 64);

export function createSourcesService(deps: SourcesServiceNeeds) {
  const { db, now } = deps;
  const repo = createSourcesRepository(db);

  async function account(companyId: string, channel: string, channelAccountId: string | undefined) {
    const runtimes = await accountsOf(deps, companyId, channel);
    const found = channelAccountId ? runtimes.find((r) => r.account.id === channelAccountId) : (runtimes.find((r) => r.account.isDefault) ?? runtimes[0]);
    if (!found)
      throw new AppError("VALIDATION_FAILED", "No such channel account", [
        channelAccountId
          ? { pointer: "/channelAccountId", message: `no ${channel} account with this id` }
          : { pointer: "/channel", message: `the company has no ${channel} account` },
      ]);
    return found.account;
  }

  async function assertCodeFree(companyId: string, code: string, except?: string): Promise<void> {
    const other = await repo.byCode(companyId, code);
    if (other && other.id !== except)
      throw new AppError("CONFLICT", `The code "${code}" is already used by source ${other.id}`, [{ pointer: "/code", message: "already used" }]);
  }

  function linkOf(s: SourceRow): string | null {
    const acc = deps.channels.get(s.channelAccountId)?.account;
    return chatLink(s.channel, acc?.chatHandle ?? null, s.code);
  }

  async function create(
    companyId: string,
    input: { name: string; type: string; channel: string; channelAccountId?: string; code?: string },
  ): Promise<SourceRow> {
    const acc = await account(companyId, input.channel, input.channelAccountId);
    const code = input.code ?? randomCode();
    return await db.unit(async () => {
      await assertCodeFree(companyId, code);
      const t = now();
      const row: SourceRow = {
        id: newId(),
        companyId,
        name: input.name,
        type: input.type,
        channel: acc.channel,
        channelAccountId: acc.id,
        code,
        externalId: null,
        createdAt: t,
        updatedAt: t,
      };
      await repo.insertSource(row);
      return row;
    });
  }

  async function get(companyId: string, id: string): Promise<SourceRow> {
    const s = await repo.get(companyId, id);
    if (!s) throw notFound("Source");
    return s;
  }

  async function update(companyId: string, id: string, patch: { name?: string; type?: string; code?: string }): Promise<SourceRow> {
    if (Object.values(patch).every((v) => v === undefined))
      throw new AppError("VALIDATION_FAILED", "Nothing to change", [{ pointer: "", message: "give at least one of name, type, code" }]);
    return await db.unit(async () => {
      const s = await get(companyId, id);
      if (patch.code !== undefined) await assertCodeFree(companyId, patch.code, id);
      const changes = { ...patch, updatedAt: now() };
      await repo.updateSource(id, changes);
      return { ...s, ...changes };
    });
  }

  /** Statistics of the contacts first attributed to a source in [from, to): the cohort and what it did. */
  async function stats(s: SourceRow, from: Date | null, to: Date | null, pipelineLicensed: boolean): Promise<SourceStats> {
    const contactIds = await repo.contactsOf(s.id, from, to);
    const conversationIds = await conversationsOfContacts({ db, contactIds });
    return {
      contacts: contactIds.length,
      conversations: conversationIds.length,
      messages: await countConversationMessages({ db, conversationIds }),
      recordsWon: pipelineLicensed ? await countWonRecords({ db, companyId: s.companyId, contactIds }) : null,
    };
  }

  function view(s: SourceRow, st: SourceStats | null) {
    return {
      id: s.id,
      name: s.name,
      type: s.type as SourceType,
      channel: s.channel,
      channelAccountId: s.channelAccountId,
      code: s.code,
      link: linkOf(s),
      externalId: s.externalId,
      stats: st,
      createdAt: s.createdAt.toISOString(),
      updatedAt: s.updatedAt.toISOString(),
    };
  }

  async function qr(companyId: string, id: string, format: "svg" | "png"): Promise<string | Buffer> {
    const s = await get(companyId, id);
    const link = linkOf(s);
    if (!link)
      throw new AppError(
        "CONFLICT",
        `Source ${s.id} has no link: the ${s.channel} account has no chat_handle in the config, or the channel has no click-to-chat links`,
      );
    const opts = { errorCorrectionLevel: "M" as const, margin: 2 };
    return format === "svg" ? QRCode.toString(link, { ...opts, type: "svg" }) : QRCode.toBuffer(link, { ...opts, type: "png", scale: 8 });
  }

  // ---------------------------------------------------------------- attribution

  /**
   * An inbound message arrived (inside its transaction): attributes the contact to the source it carries —
   * a referral's code or ad, or (only on the contact's first message) a known code in the text. First touch
   * wins: a contact with a source row (automatic, manual, or removed by hand) is never attributed again.
   */
  async function attributeInbound(m: {
    companyId: string;
    contactId: string;
    channel: Channel;
    channelAccountId: string;
    referral: Record<string, unknown> | null;
    text: string | null;
    first: () => Promise<boolean>;
  }): Promise<void> {
    if (await repo.ofContact(m.contactId)) return;
    const clue = referralClue(m.referral);
    let source: SourceRow | undefined;
    if (clue?.code) source = await repo.byCode(m.companyId, clue.code);
    if (!source && clue?.ad) source = (await repo.byExternalId(m.companyId, clue.ad.id)) ?? (await createAdSource(m, clue.ad));
    if (!source && m.text && (await m.first())) source = await repo.firstKnownCode(m.companyId, codesInText(m.text));
    if (!source) return;
    const t = now();
    if (
      !(await repo.insertFirst({
        contactId: m.contactId,
        companyId: m.companyId,
        sourceId: source.id,
        via: "auto",
        referral: m.referral,
        attributedAt: t,
        updatedAt: t,
      }))
    )
      return;
    await repo.addHistory({ id: newId(), contactId: m.contactId, fromSourceId: null, toSourceId: source.id, via: "auto", by: null, at: t });
    // The view is read now (the lazy `data` cannot await): once per contact, on its first attribution. (The row
    // was just written, in this unit: the view is there.)
    const attributed = (await contactSourceView(m.companyId, m.contactId))!;
    deps.events.emit({ companyId: m.companyId, type: "contact.source_attributed", data: { contactId: m.contactId, ...attributed } });
  }

  /** An `ad` source for an ad seen for the first time (Click-to-WhatsApp, Messenger/Instagram ads). */
  async function createAdSource(m: { companyId: string; channel: Channel; channelAccountId: string }, ad: { id: string; name: string }): Promise<SourceRow> {
    const t = now();
    let code = adCode(ad.id);
    if (await repo.byCode(m.companyId, code)) code = `${code.slice(0, 53)}-${randomCode()}`;
    const row: SourceRow = {
      id: newId(),
      companyId: m.companyId,
      name: ad.name.slice(0, 200),
      type: "ad",
      channel: m.channel,
      channelAccountId: m.channelAccountId,
      code,
      externalId: ad.id,
      createdAt: t,
      updatedAt: t,
    };
    await repo.insertSource(row);
    return row;
  }

  async function contactSourceView(companyId: string, contactId: string) {
    const row = await repo.ofContact(contactId);
    if (!row) return null;
    const s = row.sourceId ? await repo.get(companyId, row.sourceId) : undefined;
    return {
      source: s ? view(s, null) : null,
      attributedAt: s ? iso(row.attributedAt) : null,
      via: row.via as "auto" | "manual",
      referral: s ? (row.referral ?? null) : null,
      history: (await repo.history(contactId)).map((h) => ({
        fromSourceId: h.fromSourceId,
        toSourceId: h.toSourceId,
        via: h.via,
        by: h.by,
        at: h.at.toISOString(),
      })),
    };
  }

  async function contactSource(companyId: string, contactId: string) {
    await getContact({ db, companyId, id: contactId }); // 404 for an unknown, deleted or foreign contact
    return await contactSourceView(companyId, contactId);
  }

  /** PUT /contacts/{id}/source: assigns (`sourceId`) or removes (`null`) by hand, with a history row. */
  async function setContactSource(companyId: string, contactId: string, sourceId: string | null, by: string | null) {
    return await db.unit(async () => {
      await getContact({ db, companyId, id: contactId });
      if (sourceId && !(await repo.get(companyId, sourceId)))
        throw new AppError("VALIDATION_FAILED", "No such source", [{ pointer: "/sourceId", message: "unknown source" }]);
      const before = await repo.ofContact(contactId);
      const from = before?.sourceId ?? null;
      if (from !== sourceId || !before) {
        const t = now();
        await repo.upsertManual({ contactId, companyId, sourceId, via: "manual", referral: null, attributedAt: t, updatedAt: t });
        await repo.addHistory({ id: newId(), contactId, fromSourceId: from, toSourceId: sourceId, via: "manual", by, at: t });
      }
      return await contactSourceView(companyId, contactId);
    });
  }

  return { create, get, update, list: repo.list, stats, view, qr, attributeInbound, contactSource, setContactSource, forgetContact: repo.forgetContact };
}

export type SourcesService = ReturnType<typeof createSourcesService>;
