import { Elysia, t } from "elysia";
import { windowState } from "../../channels/channel.eligibility";
import { CHANNEL_RULES } from "../../channels/channel.rules";
import type { Channel } from "../../channels/channel.types";
import type { ConversationsNeeds } from "./conversations.needs";
import { data, errors, list } from "../../platform/http/envelope";
import { decodeCursor, PageQuery, pageLimit, toPage } from "../../platform/http/pagination";
import { getContact } from "../contacts/contacts.service";
import { MessageRecord } from "../messages/messages.model";
import { findMessage, listConversationMessages } from "../messages/messages.service";
import { messageView } from "../messages/messages.views";
import { conversationView } from "./conversations.views";
import {
  addNote,
  assignConversation,
  channelState,
  closeConversation,
  getConversationRow,
  listConversations,
  listConversationsUnreadFirst,
  markConversationRead,
  listNotes,
  reopenConversation,
  type ConversationRow,
} from "./conversations.service";
import { named } from "../../platform/http/schemas";
import { AppError } from "../../platform/errors";

const Conversation = named(
  "Conversation",
  t.Object({
    id: t.String(),
    status: t.Union([t.Literal("open"), t.Literal("closed")]),
    contactId: t.String(),
    channel: t.String({ description: "whatsapp | instagram | messenger | x | tiktok | telegram | email" }),
    channelAccountId: t.String(),
    assignee: t.Union([t.Object({ id: t.String(), name: t.Union([t.String(), t.Null()]) }), t.Null()]),
    lastMessageAt: t.Union([t.String(), t.Null()]),
    closedAt: t.Union([t.String(), t.Null()]),
    unreadCount: t.Integer({ minimum: 0, description: "inbound messages since an agent replied or marked it read" }),
    createdAt: t.String(),
    updatedAt: t.String(),
  }),
);
const Note = named("ConversationNote", t.Object({ id: t.String(), text: t.String(), author: t.Union([t.String(), t.Null()]), createdAt: t.String() }));
const ConversationDetail = t.Composite([
  Conversation,
  t.Object({
    contact: t.Object({ id: t.String(), firstName: t.Union([t.String(), t.Null()]), lastName: t.Union([t.String(), t.Null()]), blocked: t.Boolean() }),
    lastMessage: t.Union([MessageRecord, t.Null()]),
    window: t.Object({
      kind: t.String({ description: "since_last_inbound | contact_wrote_first | none" }),
      open: t.Boolean(),
      expiresAt: t.Union([t.String(), t.Null()]),
      lastInboundAt: t.Union([t.String(), t.Null()]),
    }),
    notes: t.Array(Note),
  }),
]);
const IdParams = t.Object({ id: t.String() });

/** An unread-first cursor: ["u" | "r", id], or 422 naming query:cursor. */
function unreadFirstCursor(key: unknown[]): ["u" | "r", string] {
  if (key.length === 2 && (key[0] === "u" || key[0] === "r") && typeof key[1] === "string") return [key[0], key[1]];
  throw new AppError("VALIDATION_FAILED", "The cursor is not valid", [{ pointer: "query:cursor", message: "not a cursor of this order" }]);
}

async function detail(deps: ConversationsNeeds, companyId: string, c: ConversationRow) {
  const contact = await getContact({ db: deps.db, companyId, id: c.contactId });
  const last = c.lastMessageId ? await findMessage({ db: deps.db, companyId, id: c.lastMessageId }) : undefined;
  const rule = CHANNEL_RULES[c.channel as Channel];
  const lastInbound = (await channelState({ db: deps.db, contactId: c.contactId, channelAccountId: c.channelAccountId }))?.lastInboundAt ?? null;
  const { open, expiresAt: expires } = windowState({ rule, lastInboundAt: lastInbound, now: deps.now() });
  return {
    ...conversationView(c),
    contact: { id: contact.id, firstName: contact.firstName, lastName: contact.lastName, blocked: contact.blocked },
    lastMessage: last ? messageView(last) : null,
    window: { kind: rule.window.kind, open, expiresAt: expires?.toISOString() ?? null, lastInboundAt: lastInbound?.toISOString() ?? null },
    notes: (await listNotes({ db: deps.db, conversationId: c.id })).map((n) => ({
      id: n.id,
      text: n.text,
      author: n.author,
      createdAt: n.createdAt.toISOString(),
    })),
  };
}

export const conversationsRoutes = (deps: ConversationsNeeds) =>
  new Elysia({ tags: ["Conversations"] })
    .use(deps.guard)
    .get(
      "/conversations",
      async ({ query, auth }) => {
        const limit = pageLimit(query.limit);
        const filter = { ...query, unread: query.unread === undefined ? undefined : query.unread === "true" };
        const key = decodeCursor(query.cursor);
        if (query.order === "unread_first") {
          const after = key ? unreadFirstCursor(key) : undefined;
          const rows = await listConversationsUnreadFirst({ db: deps.db, companyId: auth.companyId, filter, limit: limit + 1, after });
          return toPage(rows, limit, (r) => [r.unreadCount > 0 ? "u" : "r", r.id], conversationView);
        }
        const rows = await listConversations({ db: deps.db, companyId: auth.companyId, filter, limit: limit + 1, before: key?.[0] as string | undefined });
        return toPage(rows, limit, (r) => [r.id], conversationView);
      },
      {
        scope: "conversations:read",
        query: t.Object({
          ...PageQuery,
          status: t.Optional(t.Union([t.Literal("open"), t.Literal("closed")])),
          channel: t.Optional(t.String()),
          assigneeId: t.Optional(t.String()),
          contactId: t.Optional(t.String()),
          unread: t.Optional(
            t.Union([t.Literal("true"), t.Literal("false")], { description: "true: only conversations with unread messages; false: only the read ones" }),
          ),
          order: t.Optional(
            t.Union([t.Literal("newest"), t.Literal("unread_first")], {
              description: "newest (default) or unread_first: the unread conversations newest first, then the others",
            }),
          ),
        }),
        response: { 200: list(Conversation), ...errors(403, 422) },
        detail: { summary: "List conversations, newest first (or unread first)", operationId: "listConversations" },
      },
    )
    .get(
      "/conversations/:id",
      async ({ params, auth }) => ({
        data: await detail(deps, auth.companyId, await getConversationRow({ db: deps.db, companyId: auth.companyId, id: params.id })),
      }),
      {
        scope: "conversations:read",
        params: IdParams,
        response: { 200: data(ConversationDetail), ...errors(403, 404) },
        detail: { summary: "Conversation with contact summary, last message, window state and notes", operationId: "getConversation" },
      },
    )
    .get(
      "/conversations/:id/messages",
      async ({ params, query, auth }) => {
        const c = await getConversationRow({ db: deps.db, companyId: auth.companyId, id: params.id });
        const limit = pageLimit(query.limit);
        const before = decodeCursor(query.cursor)?.[0] as string | undefined;
        const rows = await listConversationMessages({ db: deps.db, conversationId: c.id, limit: limit + 1, before });
        return toPage(rows, limit, (r) => [r.id], messageView);
      },
      {
        scope: "conversations:read",
        params: IdParams,
        query: t.Object(PageQuery),
        response: { 200: list(MessageRecord), ...errors(403, 404, 422) },
        detail: { summary: "Messages of a conversation, both directions, newest first", operationId: "listConversationMessages" },
      },
    )
    .post(
      "/conversations/:id/assign",
      ({ params, body, auth, idem }) =>
        idem.batch(200, async () =>
          conversationView(
            await assignConversation({
              db: deps.db,
              events: deps.events,
              now: deps.now,
              companyId: auth.companyId,
              id: params.id,
              assignee: body.assigneeId === null ? null : { id: body.assigneeId, name: body.assigneeName },
            }),
          ),
        ),
      {
        scope: "conversations:write",
        params: IdParams,
        body: t.Object({
          assigneeId: t.Union([t.String({ minLength: 1, maxLength: 200 }), t.Null()], { description: "your user id; null unassigns" }),
          assigneeName: t.Optional(t.Union([t.String({ maxLength: 200 }), t.Null()])),
        }),
        response: { 200: data(Conversation), ...errors(403, 404, 409, 422) },
        detail: { summary: "Assign (or with null unassign) a conversation", operationId: "assignConversation" },
      },
    )
    .post(
      "/conversations/:id/read",
      ({ params, auth, idem }) =>
        idem.batch(200, async () => conversationView(await markConversationRead({ db: deps.db, now: deps.now, companyId: auth.companyId, id: params.id }))),
      {
        scope: "conversations:write",
        params: IdParams,
        response: { 200: data(Conversation), ...errors(403, 404) },
        detail: { summary: "Mark a conversation read (unreadCount 0); an agent's reply does it too. Idempotent.", operationId: "markConversationRead" },
      },
    )
    .post(
      "/conversations/:id/close",
      ({ params, auth, idem }) =>
        idem.batch(200, async () =>
          conversationView(await closeConversation({ db: deps.db, events: deps.events, now: deps.now, companyId: auth.companyId, id: params.id })),
        ),
      {
        scope: "conversations:write",
        params: IdParams,
        response: { 200: data(Conversation), ...errors(403, 404, 409) },
        detail: { summary: "Close a conversation", operationId: "closeConversation" },
      },
    )
    .post(
      "/conversations/:id/reopen",
      ({ params, auth, idem }) =>
        idem.batch(200, async () =>
          conversationView(await reopenConversation({ db: deps.db, events: deps.events, now: deps.now, companyId: auth.companyId, id: params.id })),
        ),
      {
        scope: "conversations:write",
        params: IdParams,
        response: { 200: data(Conversation), ...errors(403, 404, 409) },
        detail: { summary: "Reopen a closed conversation (409 if the contact has another open one on the account)", operationId: "reopenConversation" },
      },
    )
    .post(
      "/conversations/:id/notes",
      ({ params, body, auth, idem }) =>
        idem.batch(201, async () => {
          const n = await addNote({ db: deps.db, now: deps.now, companyId: auth.companyId, id: params.id, text: body.text, author: body.author });
          return { id: n.id, text: n.text, author: n.author, createdAt: n.createdAt.toISOString() };
        }),
      {
        scope: "conversations:write",
        params: IdParams,
        body: t.Object({ text: t.String({ minLength: 1, maxLength: 10_000 }), author: t.Optional(t.String({ maxLength: 200 })) }),
        response: { 201: data(Note), ...errors(403, 404, 409, 422) },
        detail: { summary: "Add an internal note (never sent to the contact)", operationId: "addConversationNote" },
      },
    );
