/**
 * Overview: the balance, the channel accounts' state, the company's backlog, messages per hour by status and
 * the campaigns' recipients by status — all from public operations (the appliance-wide job queue is in
 * /metrics, outside the API and behind its own token; the backlog shown is the company's share of it).
 */
import { call, get, list } from "../api";
import { stackedColumns } from "../chart";
import { clear, h } from "../dom";
import type { Ctx, PageDef } from "../page";
import type { Backlog, Campaign, Channel, Me, MessageStats } from "../types";

const STATUSES = ["pending", "sent", "delivered", "read", "failed", "canceled"] as const;

const MESSAGE_STATUSES = ["queued", "sent", "delivered", "read", "failed", "received"] as const;

/** Messages of the last 24 h by hour and current status (GET /messages/stats). */
async function messagesChart(ctx: Ctx): Promise<HTMLElement> {
  if (!ctx.can("messages:read")) return h("p", { class: "muted" }, `Messages by status per hour: ${ctx.needs("messages:read")}`);
  const { data } = await call<{ data: MessageStats }>("GET", "/messages/stats?interval=hour");
  return stackedColumns(
    "Messages per hour, last 24 h, by current status",
    data.buckets.map((b) => ({
      label: new Date(b.start).toLocaleTimeString([], { hour: "2-digit" }),
      values: Object.fromEntries(MESSAGE_STATUSES.map((st) => [st, b[st]])),
    })),
    [...MESSAGE_STATUSES],
  );
}

/** The company's backlog tile (GET /messages/backlog): queued by channel, the oldest's age, today's failures. */
async function backlogTile(ctx: Ctx): Promise<HTMLElement> {
  if (!ctx.can("messages:read")) return h("p", { class: "muted" }, ctx.needs("messages:read"));
  const { data } = await call<{ data: Backlog }>("GET", "/messages/backlog");
  const by = Object.entries(data.queued.byChannel)
    .map(([c, n]) => `${c} ${n}`)
    .join(", ");
  const age = data.queued.oldestCreatedAt ? Math.round((Date.now() - Date.parse(data.queued.oldestCreatedAt)) / 60_000) : null;
  return h(
    "div",
    null,
    h("p", { class: "big", id: "backlog-queued" }, `${data.queued.total} queued`),
    h("p", { class: "muted" }, data.queued.total ? `${by}; oldest ${age} min ago` : "nothing waiting"),
    h("p", { class: data.failedLast24h ? "error" : "muted", id: "backlog-failed" }, `${data.failedLast24h} failed in the last 24 h`),
  );
}

async function campaignsChart(ctx: Ctx): Promise<HTMLElement> {
  if (!ctx.can("campaigns:read")) return h("p", { class: "muted" }, `Campaign messages by status: ${ctx.needs("campaigns:read")}`);
  const { data } = await list<Campaign>("/campaigns?limit=12");
  if (!data.length) return h("p", { class: "muted" }, "No campaigns yet: their recipients by status appear here.");
  return stackedColumns(
    "Campaign recipients by status (the last 12 campaigns)",
    data.reverse().map((c) => ({
      label: c.name.length > 12 ? `${c.name.slice(0, 11)}…` : c.name,
      values: Object.fromEntries(STATUSES.map((st) => [st, c.stats[st] ?? 0])),
    })),
    [...STATUSES],
  );
}

export const overviewPage: PageDef = {
  id: "overview",
  title: "Overview",
  scope: null,
  async render(root, ctx) {
    const [me, channels] = await Promise.all([get<Me>("/me"), get<Channel[]>("/channels")]);
    const down = channels.filter((c) => c.status !== "active");
    const messages = h("div", null, h("p", { class: "muted" }, "Loading…"));
    const backlog = h("div", null, h("p", { class: "muted" }, "Loading…"));
    const campaigns = h("div", null, h("p", { class: "muted" }, "Loading…"));
    clear(
      root,
      h("h1", null, "Overview"),
      h(
        "div",
        { class: "tiles" },
        h(
          "section",
          { class: "tile", id: "balance" },
          h("h2", null, "Balance"),
          h("p", { class: "big" }, `${me.company.balance.amount} ${me.company.balance.unit}`),
        ),
        h(
          "section",
          { class: "tile" },
          h("h2", null, "Channel accounts"),
          h("p", { class: "big" }, `${channels.length - down.length} / ${channels.length}`),
          h("p", { class: "muted" }, down.length ? `Not active: ${down.map((c) => c.name).join(", ")}` : "all active"),
        ),
        h("section", { class: "tile", id: "backlog" }, h("h2", null, "Backlog"), backlog),
      ),
      h("div", { class: "charts" }, messages, campaigns),
    );
    const settle = async (el: HTMLElement, make: () => Promise<HTMLElement>) => {
      try {
        clear(el, await make());
      } catch (e) {
        clear(el, h("p", { class: "error" }, String(e)));
      }
    };
    await Promise.all([settle(messages, () => messagesChart(ctx)), settle(backlog, () => backlogTile(ctx)), settle(campaigns, () => campaignsChart(ctx))]);
  },
};
