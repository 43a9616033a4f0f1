/** Channels: each account of the company, its provider and state, and the inbound URL for the provider. */
import { get } from "../api";
import { badge, clear, h, table } from "../dom";
import type { PageDef } from "../page";
import type { Channel } from "../types";

/** The URL in a read-only box (select it, or copy with the button where the clipboard API is allowed). */
function urlBox(url: string): HTMLElement {
  const input = h("input", {
    type: "text",
    readonly: true,
    value: url,
    class: "url",
    "aria-label": "Inbound webhook URL",
    onfocus: (e: Event) => (e.target as HTMLInputElement).select(),
  });
  const copy = h("button", { type: "button", class: "small" }, "Copy");
  copy.addEventListener("click", async () => {
    input.select();
    try {
      await navigator.clipboard.writeText(url);
      copy.textContent = "Copied";
    } catch {
      copy.textContent = "Press Ctrl+C";
    }
  });
  return h("div", { class: "copy-row" }, input, copy);
}

/** The account's health from its last hour of sends, or why it is not shown. */
function health(c: Channel): HTMLElement {
  const x = c.health;
  if (!x) return h("span", { class: "muted" }, "needs messages:read");
  const when = (t: string | null) => (t ? new Date(t).toLocaleString() : "—");
  return h(
    "div",
    { class: "health" },
    badge(x.status),
    h("span", { class: "muted" }, ` ${x.recentSent} sent, ${x.recentFailed} failed`),
    h("div", { class: "muted small" }, `last sent ${when(x.lastSentAt)}`),
    x.lastFailedAt ? h("div", { class: "muted small" }, `last failure ${when(x.lastFailedAt)}${x.lastFailureReason ? ` (${x.lastFailureReason})` : ""}`) : null,
  );
}

export const channelsPage: PageDef = {
  id: "channels",
  title: "Channels",
  scope: null,
  async render(root) {
    const channels = await get<Channel[]>("/channels");
    clear(
      root,
      h("h1", null, "Channels"),
      h(
        "p",
        { class: "muted" },
        "Paste each account's inbound webhook URL at its provider (the sandbox accounts need none). The URL is built from [server] public_url.",
      ),
      table(channels, [
        ["Account", (c) => h("span", null, c.name, c.default ? h("span", { class: "muted" }, " (default)") : null)],
        ["Channel", (c) => c.channel],
        ["Provider", (c) => c.provider],
        ["State", (c) => badge(c.status)],
        ["Health (last hour)", (c) => health(c)],
        ["Inbound webhook URL", (c) => urlBox(c.webhookUrl)],
      ]),
    );
  },
};
