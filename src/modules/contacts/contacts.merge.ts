/**
 * Contact merge (DESIGN §21): `POST /contacts/{id}/merge {fromContactId}` folds the second contact into the
 * first, in one unit of work — either every row moves or none does.
 *
 * The rules, per kind of row (contacts-merge.repository.ts has each one and why):
 *   contact fields  the target's value wins where both have one (names, city, country, each custom field);
 *                   blocked if either was; known since the earlier of the two.
 *   identities, messages, pipeline records and tasks, consent history, source history   move as they are.
 *   tags            the union.       consent   an opt-out on either side wins.
 *   conversations   an open one on an account where the target has one open too is folded into the target's.
 *   source          the earlier first touch wins.
 *   campaign recipients   one row per campaign: the one that got further (a tie: the target's).
 * The merged-away contact becomes a tombstone like a deleted one (404 from then on), and contact_merges notes
 * where it went: links made before that name its id (unsubscribe tokens in delivered mail) find the person
 * through `survivingContactId`. Webhook deliveries already written (the outbox) are left as they are: they report
 * what was true when they happened.
 *
 * Concurrency: a send, an inbound message, an upsert or a consent change holds the contact it writes for
 * (contacts store `holdContact`) until its unit ends, and the merge locks both contacts (`lockForMerge`) before it
 * reads or moves anything, so each of those lands wholly before the merge (its rows then move) or wholly after it
 * (it waits, finds the merged-away contact gone and looks its identity up again: it belongs to the target now).
 * On SQLite writes take turns on one connection, which gives the same order by itself; on PostgreSQL units run
 * side by side (read committed) and only the row locks do — without them a send that read the identity before
 * the merge committed wrote its message on the merged-away contact after the merge had moved that contact's rows.
 */
import type { Db } from "../../db/client";
import { notFound, validationFailed } from "../../platform/errors";
import type { EventBus } from "../../events";
import { contactMergeStore } from "./contacts-merge.repository";
import type { Contact } from "./contacts.model";
import type { ContactRow } from "./contacts-rows.repository";
import { contactsStore } from "./contacts.repository";
import { getContact } from "./contacts.service";

export interface MergeDeps {
  db: Db;
  events: Pick<EventBus, "emit">;
  now: () => Date;
}

/** What a merge did, for the caller and the tests. */
export interface MergeResult {
  contact: Contact;
  /** Conversations of the merged-away contact folded into an open one of the target (then deleted). */
  foldedConversationIds: string[];
}

/** Fields: the target's value where it has one, else the source's; custom fields key by key. */
function mergedFields(target: ContactRow, source: ContactRow) {
  return {
    firstName: target.firstName ?? source.firstName,
    lastName: target.lastName ?? source.lastName,
    city: target.city ?? source.city,
    country: target.country ?? source.country,
    customFields: { ...source.customFields, ...target.customFields },
    // A block is a decision about the person, whichever record it was made on.
    blocked: target.blocked || source.blocked,
  };
}

export async function mergeContacts({
  db,
  events,
  now,
  companyId,
  id,
  fromContactId,
}: MergeDeps & { companyId: string; id: string; fromContactId: string }): Promise<MergeResult> {
  if (fromContactId === id) throw validationFailed([{ pointer: "/fromContactId", message: "must be another contact than the one merged into" }]);
  const contacts = contactsStore(db);
  const merge = contactMergeStore(db);
  return await db.unit(async () => {
    const { target, source } = await contacts.lockForMerge(companyId, id, fromContactId);
    if (!target || !source) throw notFound("Contact");
    const at = now().getTime();

    await merge.moveIdentities(companyId, source.id, target.id);
    await merge.foldTags(source.id, target.id);
    const optedOut = await merge.foldConsents(source.id, target.id);
    await merge.foldChannelState(source.id, target.id, at);
    const foldedConversationIds = await merge.foldConversations(source.id, target.id, at);
    await merge.moveMessages(source.id, target.id);
    await merge.movePipeline(source.id, target.id);
    await merge.foldSource(source.id, target.id);
    await merge.foldCampaignRecipients(source.id, target.id, at);
    await merge.recordMerge(companyId, source.id, target.id, at);
    await contacts.updateContactFields(target.id, { ...mergedFields(target, source), at });
    await merge.keepEarlierCreatedAt(target.id, source.createdAt.getTime());
    // Nothing refers to it any more: erase it as DELETE does (its satellite rows are already gone).
    await contacts.eraseContact(source.id, at);

    const contact = await getContact({ db, companyId, id: target.id });
    // Consent changed on the target: reported as any opt-out is, so subscribers that keep consent in step
    // (a CRM, a mailing tool) do not have to interpret contact.merged to learn it.
    for (const o of optedOut) events.emit({ companyId, type: "contact.opted_out", data: { contact, channel: o.channel, source: o.source } });
    events.emit({ companyId, type: "contact.merged", data: { contactId: target.id, mergedContactId: source.id } });
    return { contact, foldedConversationIds };
  });
}

/**
 * The contact an id now stands for: the one it was merged into, else itself (it may still be deleted or unknown —
 * the caller reads it as usual). For references that outlive a merge and cannot be rewritten, such as the
 * contact id signed into an unsubscribe link.
 */
export async function survivingContactId({ db, companyId, contactId }: { db: Db; companyId: string; contactId: string }): Promise<string> {
  return await contactMergeStore(db).survivorOf(companyId, contactId);
}
