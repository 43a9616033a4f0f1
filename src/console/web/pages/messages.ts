/**
 * Messages: the company's recent messages, newest first, with GET /messages's filters (status, channel, a
 * day range) and its cursor ("More" reads the next page).
 */
import { ApiError, list, loadTurns, qs } from "../api";
import { badge, clear, fmtTime, h, table } from "../dom";
import type { PageDef } from "../page";
import type { Message } from "../types";

const STATUSES = ["", "queued", "sent", "delivered", "read", "failed", "received"];
const CHANNELS = ["", "whatsapp", "instagram", "messenger", "x", "tiktok", "telegram", "email"];

function summary(m: Message): string {
  if (m.content.text) return m.content.text;
  if (m.content.template) return `[template ${m.content.template.name ?? ""}]`;
  if (m.content.subject) return `[e-mail] ${m.content.subject}`;
  return `[${m.type}]`;
}

export const messagesPage: PageDef = {
  id: "messages",
  title: "Messages",
  scope: "messages:read",
  async render(root) {
    const status = h(
      "select",
      { id: "messages-status", "aria-label": "Status" },
      STATUSES.map((x) => h("option", { value: x }, x || "any status")),
    );
    const channel = h(
      "select",
      { id: "messages-channel", "aria-label": "Channel" },
      CHANNELS.map((x) => h("option", { value: x }, x || "all channels")),
    );
    const from = h("input", { type: "date", id: "messages-from", "aria-label": "Created on or after" });
    const to = h("input", { type: "date", id: "messages-to", "aria-label": "Created before" });
    const out = h("div", { id: "messages-list" });
    const more = h("button", { type: "button", id: "messages-more", hidden: true }, "More");
    const error = h("p", { class: "error", role: "alert" });
    let cursor: string | null = null;
    let rows: Message[] = [];
    const day = (v: string) => (v ? new Date(`${v}T00:00:00`).toISOString() : "");
    const loads = loadTurns();
    const load = async (next = false) => {
      const turn = loads.next();
      error.textContent = "";
      try {
        const page = await list<Message>(
          `/messages${qs({ status: status.value, channel: channel.value, from: day(from.value), to: day(to.value), limit: 50, cursor: next ? cursor : null })}`,
        );
        if (loads.stale(turn)) return;
        rows = next ? [...rows, ...page.data] : page.data;
        cursor = page.page.nextCursor;
      } catch (e) {
        if (loads.stale(turn)) return;
        error.textContent = e instanceof ApiError ? e.describe() : String(e);
        return;
      }
      more.hidden = !cursor;
      clear(
        out,
        table(
          rows,
          [
            ["Created", (m) => fmtTime(m.createdAt)],
            ["", (m) => (m.direction === "inbound" ? "←" : "→")],
            ["Channel", (m) => m.channel],
            ["To / from", (m) => h("span", { class: "wrap" }, m.address)],
            [
              "Status",
              (m) =>
                h(
                  "span",
                  { "data-message-id": m.id },
                  badge(m.status),
                  m.error ? h("span", { class: "error small" }, ` ${m.error.reason ?? m.error.code}`) : null,
                ),
            ],
            ["Content", (m) => h("span", { class: "wrap" }, summary(m))],
            ["", (m) => h("a", { href: `#/inbox/${m.conversationId}` }, "conversation")],
          ],
          { empty: "No messages match." },
        ),
      );
    };
    for (const el of [status, channel, from, to]) el.addEventListener("change", () => void load());
    more.addEventListener("click", () => void load(true));
    clear(root, h("h1", null, "Messages"), h("div", { class: "toolbar" }, status, channel, from, to), error, out, more);
    await load();
  },
};
