/**
 * Inbox: conversations (those with unread messages first, as the API orders them), the thread, a reply (text
 * inside the channel's window, a template outside it), assign, close/reopen and notes. Opening a conversation
 * marks it read (with conversations:write); a reply reads it too, on the server.
 */
import { ApiError, get, list, loadTurns, post, qs } from "../api";
import { badge, clear, fmtTime, h } from "../dom";
import type { Ctx, PageDef } from "../page";
import type { Conversation, ConversationDetail, Message, Template } from "../types";
import { bodyText } from "./templates";

const contactName = (c: ConversationDetail) => [c.contact.firstName, c.contact.lastName].filter(Boolean).join(" ") || "(no name)";
const awaiting = (c: ConversationDetail) => c.status === "open" && c.lastMessage?.direction === "inbound";

function messageText(m: Message): string {
  if (m.content.text) return m.content.text;
  if (m.content.template) return `[template ${m.content.template.name ?? ""}] ${Object.values(m.content.template.params ?? {}).join(", ")}`;
  if (m.content.subject) return `[e-mail] ${m.content.subject}`;
  const i = m.content.interactive;
  if (i?.replyId !== undefined) return `[tapped] ${i.replyTitle ?? i.replyId}`;
  if (i?.body?.text) return `[buttons] ${i.body.text}`;
  return `[${m.type}]`;
}

function bubble(m: Message): HTMLElement {
  return h(
    "li",
    { class: `msg ${m.direction}`, "data-message-id": m.id },
    h("div", { class: "text" }, messageText(m)),
    // An inbound message shows the provider's time (when the contact wrote), which opens the window.
    h(
      "div",
      { class: "meta" },
      fmtTime(m.statusTimes?.receivedAt ?? m.createdAt),
      " ",
      m.direction === "outbound" ? badge(m.status) : null,
      m.error ? h("span", { class: "error" }, ` ${m.error.code}: ${m.error.message}`) : null,
    ),
  );
}

/** The reply box: text when the window is open, else a template with its params. */
function composer(c: ConversationDetail, ctx: Ctx, sent: () => void): HTMLElement {
  if (!ctx.can("messages:send")) return h("p", { class: "muted" }, `Replying: ${ctx.needs("messages:send")}`);
  const error = h("p", { class: "error", role: "alert" });
  const base = { channel: c.channel, to: { contactId: c.contactId }, ...(c.channel === "email" ? { channelAccountId: c.channelAccountId } : {}) };
  const send = async (body: Record<string, unknown>, button: HTMLButtonElement) => {
    button.disabled = true;
    error.textContent = "";
    try {
      await post("/messages", { ...base, ...body });
      sent();
      return true;
    } catch (e) {
      error.textContent = e instanceof ApiError ? e.describe() : String(e);
      return false;
    } finally {
      button.disabled = false;
    }
  };
  if (c.window.open && c.channel !== "email") {
    const text = h("textarea", { id: "reply-text", rows: 3, placeholder: "Write a reply…", "aria-label": "Reply" });
    const button = h("button", { type: "submit", class: "primary", id: "reply-send" }, "Send");
    const form = h(
      "form",
      { class: "composer" },
      text,
      h(
        "div",
        { class: "row" },
        h("span", { class: "muted" }, c.window.expiresAt ? `Window open until ${fmtTime(c.window.expiresAt)}` : "Window open"),
        button,
      ),
      error,
    );
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      if (text.value.trim() && (await send({ type: "text", text: text.value }, button))) text.value = "";
    });
    return form;
  }
  // Outside the window (or e-mail, where a template is the way to write): an approved template of the account.
  const form = h(
    "form",
    { class: "composer" },
    h("p", { class: "muted" }, c.window.open ? "E-mail: reply with a template." : "The messaging window is closed: only a template can be sent."),
  );
  const messagesRead = ctx.can("messages:read");
  if (!messagesRead) {
    form.append(h("p", { class: "muted" }, `Templates: ${ctx.needs("messages:read")}`));
    return form;
  }
  void list<Template>(`/templates${qs({ channel: c.channel, limit: 200 })}`).then(({ data }) => {
    const templates = data.filter((t) => t.channelAccountId === c.channelAccountId && t.status === "approved");
    const select = h(
      "select",
      { id: "reply-template", "aria-label": "Template" },
      templates.map((t) => h("option", { value: t.id }, `${t.name} (${t.language})`)),
    );
    const params = h("div", { class: "params" });
    const preview = h("p", { class: "muted wrap" });
    const showParams = () => {
      const t = templates.find((x) => x.id === select.value);
      preview.textContent = t ? bodyText(t) : "";
      clear(
        params,
        (t?.params ?? []).map((p) => h("label", null, p, h("input", { name: p, value: p === "body.1" ? (c.contact.firstName ?? "") : "" }))),
      );
    };
    select.addEventListener("change", showParams);
    showParams();
    const button = h("button", { type: "submit", class: "primary", id: "reply-send" }, "Send template");
    form.append(select, preview, params, button, error);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      const values = Object.fromEntries([...params.querySelectorAll("input")].map((i) => [i.name, i.value]));
      await send({ type: "template", template: { templateId: select.value, params: values } }, button);
    });
  });
  return form;
}

function side(c: ConversationDetail, ctx: Ctx, reload: () => void): HTMLElement {
  const write = ctx.can("conversations:write");
  const reason = write ? undefined : ctx.needs("conversations:write");
  const act =
    (path: string, body: unknown = {}) =>
    async () => {
      try {
        await post(`/conversations/${c.id}/${path}`, body);
        reload();
      } catch (e) {
        ctx.flash(e instanceof ApiError ? e.describe() : String(e), "error");
      }
    };
  const assignee = h("input", {
    id: "assignee",
    value: c.assignee?.name ?? c.assignee?.id ?? "",
    placeholder: "name",
    "aria-label": "Assignee",
    disabled: !write,
  });
  const assignForm = h("form", { class: "row" }, assignee, h("button", { type: "submit", disabled: !write, title: reason }, "Assign"));
  assignForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const name = assignee.value.trim();
    void act("assign", name ? { assigneeId: name, assigneeName: name } : { assigneeId: null })();
  });
  const note = h("textarea", { id: "note-text", rows: 2, placeholder: "Internal note (never sent)", "aria-label": "Note", disabled: !write });
  const noteForm = h("form", null, note, h("button", { type: "submit", disabled: !write, title: reason }, "Add note"));
  noteForm.addEventListener("submit", (e) => {
    e.preventDefault();
    if (note.value.trim()) void act("notes", { text: note.value })();
  });
  return h(
    "aside",
    { class: "conv-side" },
    h("h3", null, "Conversation"),
    h("p", null, badge(c.status), " ", c.channel, c.contact.blocked ? h("span", { class: "error" }, " blocked") : null),
    h("p", { class: "muted" }, c.window.open ? `Window open${c.window.expiresAt ? ` until ${fmtTime(c.window.expiresAt)}` : ""}` : "Window closed"),
    c.status === "open"
      ? h("button", { type: "button", id: "close-conversation", disabled: !write, title: reason, onclick: act("close") }, "Close")
      : h("button", { type: "button", disabled: !write, title: reason, onclick: act("reopen") }, "Reopen"),
    h("h3", null, "Assignee"),
    assignForm,
    h("h3", null, "Notes"),
    h(
      "ul",
      { class: "notes" },
      c.notes.map((n) => h("li", null, h("div", { class: "wrap" }, n.text), h("div", { class: "muted" }, `${n.author ?? ""} ${fmtTime(n.createdAt)}`))),
    ),
    noteForm,
    write ? null : h("p", { class: "muted" }, reason),
  );
}

export const inboxPage: PageDef = {
  id: "inbox",
  title: "Inbox",
  scope: "conversations:read",
  async render(root, ctx) {
    const filter = h(
      "select",
      { "aria-label": "Conversations" },
      h("option", { value: "open" }, "Open"),
      h("option", { value: "closed" }, "Closed"),
      h("option", { value: "" }, "All"),
    );
    const listEl = h("ul", { class: "conv-list", id: "conversations" });
    const thread = h("section", { class: "thread", id: "thread" }, h("p", { class: "muted" }, "Pick a conversation."));
    clear(root, h("h1", null, "Inbox"), h("div", { class: "inbox" }, h("div", { class: "conv-col" }, h("div", { class: "toolbar" }, filter), listEl), thread));

    // The list has no last message: the details tell who spoke last. They are read again only for the
    // conversations that changed since the last poll, so polling costs one request when nothing happens.
    const known = new Map<string, ConversationDetail>();
    const loads = loadTurns();
    const loadList = async () => {
      const turn = loads.next();
      const { data } = await list<Conversation>(`/conversations${qs({ status: filter.value, order: "unread_first", limit: 30 })}`);
      if (loads.stale(turn)) return;
      // The open conversation, read while it is on screen: what arrives meanwhile is seen, so it is read.
      const open = data.find((c) => c.id === ctx.arg);
      if (open && open.unreadCount > 0 && ctx.can("conversations:write")) {
        await post(`/conversations/${open.id}/read`, {});
        open.unreadCount = 0;
      }
      const details = await Promise.all(
        data.map((c) => {
          const k = known.get(c.id);
          if (k && k.lastMessageAt === c.lastMessageAt && k.status === c.status && k.assignee?.id === c.assignee?.id && k.unreadCount === c.unreadCount)
            return k;
          return get<ConversationDetail>(`/conversations/${c.id}`).then((d) => (known.set(c.id, d), d));
        }),
      );
      // The details' unread count is the list's (the detail may be older than a mark read).
      for (const [i, d] of details.entries()) d.unreadCount = data[i]!.unreadCount;
      if (loads.stale(turn)) return;
      clear(
        listEl,
        details.length
          ? details.map((c) =>
              h(
                "li",
                null,
                h(
                  "a",
                  { href: `#/inbox/${c.id}`, class: `${c.id === ctx.arg ? "active" : ""}${awaiting(c) ? " awaiting" : ""}` },
                  h(
                    "span",
                    { class: "name" },
                    contactName(c),
                    c.unreadCount > 0
                      ? h("span", { class: "unread", title: `${c.unreadCount} unread`, "data-unread": String(c.unreadCount) }, String(c.unreadCount))
                      : awaiting(c)
                        ? h("span", { class: "dot", title: "awaiting a reply" }, " ●")
                        : null,
                  ),
                  h("span", { class: "muted" }, `${c.channel} · ${fmtTime(c.lastMessageAt)}`),
                  h("span", { class: "preview" }, c.lastMessage ? messageText(c.lastMessage) : ""),
                ),
              ),
            )
          : h("li", { class: "muted" }, "No conversations."),
      );
    };
    filter.addEventListener("change", loadList);

    const messagesEl = h("ol", { class: "messages", id: "messages" });
    const loadMessages = async () => {
      const { data } = await list<Message>(`/conversations/${ctx.arg}/messages?limit=50`);
      const atBottom = messagesEl.scrollHeight - messagesEl.scrollTop - messagesEl.clientHeight < 40;
      clear(messagesEl, data.reverse().map(bubble));
      if (atBottom) messagesEl.scrollTop = messagesEl.scrollHeight;
    };
    const loadThread = async () => {
      const c = await get<ConversationDetail>(`/conversations/${ctx.arg}`);
      clear(
        thread,
        h(
          "div",
          { class: "thread-main" },
          h("h2", null, contactName(c)),
          messagesEl,
          composer(c, ctx, () => void Promise.all([loadMessages(), loadList()])),
        ),
        side(c, ctx, () => void loadThread().then(loadList)),
      );
      await loadMessages();
      messagesEl.scrollTop = messagesEl.scrollHeight;
    };

    await loadList();
    if (ctx.arg) await loadThread();
    // Statuses move (sent → delivered → read) and contacts write in: poll while the page is open.
    ctx.every(2000, async () => {
      await loadList();
      if (ctx.arg) await loadMessages();
    });
  },
};
