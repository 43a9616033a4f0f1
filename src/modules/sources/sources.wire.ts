/** Background wiring of source tracking: first-touch attribution from inbound messages. */
import type { SourcesNeeds } from "./sources.needs";
import { conversationsOfContacts } from "../conversations/conversations.service";
import { isFirstInbound } from "../messages/messages.service";
import { createSourcesService } from "./sources.service";

export function wireSources(deps: SourcesNeeds): void {
  const s = createSourcesService(deps);
  // A deleted contact's attribution goes with it (inside the deletion's unit of work).
  deps.events.on("contact.deleted", (event) => s.forgetContact(event.data.contact.id));
  // Runs inside the inbound message's unit of work (an asynchronous subscriber: the unit awaits it, and
  // fails with it); it writes only rows.
  // Attribution is not gated by the license: a contact who arrives while it lapsed is still attributed, and
  // the data shows once the license is renewed (the routes are what the license guards).
  deps.events.on("message.received", (event) => {
    const m = event.data.message; // (an inbound message's payload is built eagerly)
    const content = m.content ?? {};
    return s.attributeInbound({
      companyId: event.companyId,
      contactId: m.contactId,
      channel: m.channel,
      channelAccountId: m.channelAccountId,
      referral: (content.referral as Record<string, unknown> | undefined) ?? null,
      text: typeof content.text === "string" ? content.text : typeof content.caption === "string" ? content.caption : null,
      first: async () => isFirstInbound({ db: deps.db, conversationIds: await conversationsOfContacts({ db: deps.db, contactIds: [m.contactId] }) }),
    });
  });
}
