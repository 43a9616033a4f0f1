/**
 * Overview: the balance, the channel accounts' state, priced messages per hour (from the ledger) and the
 * campaigns' recipients by status. NB! The public API has no message counts by status over time and no
 * job backlog (the jobs are in /metrics, outside the API and behind its own token); this page shows what
 * the API offers and says what it lacks, rather than reading private endpoints.
 */
import { get, list, qs } from "../api";
import { stackedColumns } from "../chart";
import { clear, h } from "../dom";
import type { Ctx, PageDef } from "../main";
import type { Campaign, Channel, LedgerEntry, Me } from "../types";

const STATUSES = ["pending", "sent", "delivered", "read", "failed", "canceled"] as const;

async function ledgerChart(ctx: Ctx): Promise<HTMLElement> {
  if (!ctx.can("billing:read")) return h("p", { class: "muted" }, `Priced messages per hour: ${ctx.needs("billing:read")}`);
  const since = Date.now() - 24 * 3600_000;
  const entries: LedgerEntry[] = [];
  let cursor: string | null = null;
  // Newest first: read pages until the day is covered (at most 10 pages, 2,000 entries).
  for (let i = 0; i < 10; i++) {
    const page: { data: LedgerEntry[]; page: { nextCursor: string | null } } = await list<LedgerEntry>(`/billing/ledger${qs({ limit: 200, cursor })}`);
    entries.push(...page.data);
    cursor = page.page.nextCursor;
    if (!cursor || !page.data.length || Date.parse(page.data[page.data.length - 1].createdAt) < since) break;
  }
  const hourStart = Math.floor(Date.now() / 3600_000) * 3600_000;
  const buckets = Array.from({ length: 24 }, (_, i) => ({ start: hourStart - (23 - i) * 3600_000, values: { charged: 0, refunded: 0 } as Record<string, number> }));
  for (const e of entries) {
    const t = Date.parse(e.createdAt);
    const b = buckets.find((x) => t >= x.start && t < x.start + 3600_000);
    if (b && e.kind === "debit") b.values.charged++;
    if (b && e.kind === "refund") b.values.refunded++;
  }
  return stackedColumns(
    "Priced messages per hour, last 24 h (charged; refunded = failed before sent)",
    buckets.map((b) => ({ label: new Date(b.start).toLocaleTimeString([], { hour: "2-digit" }), values: b.values })),
    ["charged", "refunded"],
  );
}

async function campaignsChart(ctx: Ctx): Promise<HTMLElement> {
  if (!ctx.can("campaigns:read")) return h("p", { class: "muted" }, `Campaign messages by status: ${ctx.needs("campaigns:read")}`);
  const { data } = await list<Campaign>("/campaigns?limit=12");
  if (!data.length) return h("p", { class: "muted" }, "No campaigns yet: their recipients by status appear here.");
  return stackedColumns(
    "Campaign recipients by status (the last 12 campaigns)",
    data.reverse().map((c) => ({ label: c.name.length > 12 ? `${c.name.slice(0, 11)}…` : c.name, values: Object.fromEntries(STATUSES.map((st) => [st, c.stats[st] ?? 0])) })),
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
    const ledger = h("div", null, h("p", { class: "muted" }, "Loading…"));
    const campaigns = h("div", null, h("p", { class: "muted" }, "Loading…"));
    clear(
      root,
      h("h1", null, "Overview"),
      h(
        "div",
        { class: "tiles" },
        h("section", { class: "tile", id: "balance" }, h("h2", null, "Balance"), h("p", { class: "big" }, `${me.company.balance.amount} ${me.company.balance.unit}`)),
        h("section", { class: "tile" }, h("h2", null, "Channel accounts"), h("p", { class: "big" }, `${channels.length - down.length} / ${channels.length}`), h("p", { class: "muted" }, down.length ? `Not active: ${down.map((c) => c.name).join(", ")}` : "all active")),
      ),
      h("div", { class: "charts" }, ledger, campaigns),
      h(
        "p",
        { class: "muted note" },
        "Not shown yet: messages by status per hour, the job backlog and dead jobs — the public API has no read operation for them (the job counts are in /metrics).",
      ),
    );
    const settle = async (el: HTMLElement, make: () => Promise<HTMLElement>) => {
      try {
        clear(el, await make());
      } catch (e) {
        clear(el, h("p", { class: "error" }, String(e)));
      }
    };
    await Promise.all([settle(ledger, () => ledgerChart(ctx)), settle(campaigns, () => campaignsChart(ctx))]);
  },
};
