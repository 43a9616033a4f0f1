/** Background wiring of source tracking: first-touch attribution from inbound messages. */
import type { Channel } from "../../channels/channel.types";
import type { Deps } from "../../deps";
import { conversationsOfContactsSync } from "../conversations/conversations.service";
import { isFirstInboundSync } from "../messages/messages.service";
import { createSourcesService } from "./sources.service";

export function wireSources(deps: Deps): void {
  const s = createSourcesService(deps);
  // NB! Runs inside the inbound message's transaction (subscribers are synchronous and write only rows).
  // Attribution is not gated by the license: a contact who arrives while it lapsed is still attributed, and
  // the data shows once the license is renewed (the routes are what the license guards).
  deps.events.subscribe((event) => {
    if (event.type === "contact.deleted") {
      const id = (event.data as { contact?: { id?: string } }).contact?.id;
      if (id) s.forgetContact(id);
      return;
    }
    if (event.type !== "message.received") return;
    const m = (event.data as { message?: { contactId: string; channel: Channel; channelAccountId: string; content: Record<string, unknown> | null } }).message;
    if (!m) return;
    const content = m.content ?? {};
    s.attributeInbound({
      companyId: event.companyId,
      contactId: m.contactId,
      channel: m.channel,
      channelAccountId: m.channelAccountId,
      referral: (content.referral as Record<string, unknown> | undefined) ?? null,
      text: typeof content.text === "string" ? content.text : typeof content.caption === "string" ? content.caption : null,
      first: () => isFirstInboundSync({ db: deps.db, conversationIds: conversationsOfContactsSync({ db: deps.db, contactIds: [m.contactId] }) }),
    });
  });
}
