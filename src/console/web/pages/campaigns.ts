/**
 * Campaigns: the list; a create wizard that shows the live estimate (who is excluded, and why, and what it
 * costs) before the button; a campaign's funnel and progress, redrawn while it runs; pause/resume/cancel.
 * The progress line is sampled by this page while it is open: the API gives the campaign's counts now,
 * not their history.
 */
import { ApiError, get, list, post } from "../api";
import { funnel, lineChart, type Series } from "../chart";
import { badge, clear, debounce, fmtTime, h, table } from "../dom";
import type { Ctx, PageDef } from "../page";
import type { Campaign, Estimate, Tag, Template } from "../types";
import { bodyText } from "./templates";

const REASONS: Record<string, string> = {
  noIdentity: "no identity on the channel",
  blocked: "blocked",
  noConsent: "no opt-in on the channel",
  noPriorConversation: "never wrote to the account",
  outsideWindow: "messaging window closed",
};

const progressBar = (pct: number, label: string) => h("progress", { max: 100, value: Math.round(pct), "aria-label": label }, `${Math.round(pct)}%`);

function listView(root: HTMLElement, ctx: Ctx) {
  const write = ctx.can("campaigns:write");
  const out = h("div");
  const load = async () => {
    const { data } = await list<Campaign>("/campaigns?limit=100");
    clear(
      out,
      table(
        data,
        [
          ["Name", (c) => h("strong", { class: "wrap" }, c.name)],
          ["Status", (c) => badge(c.status)],
          ["Channel", (c) => c.channel],
          ["Progress", (c) => h("span", { class: "row" }, progressBar(c.progress, `${c.name} progress`), ` ${Math.round(c.progress)}%`)],
          ["Sendable", (c) => `${c.stats.sendable} of ${c.stats.matched}`],
          ["Read", (c) => String(c.stats.read)],
          ["Spent", (c) => `${c.cost.spent.amount} ${c.cost.spent.unit}`],
          ["Created", (c) => fmtTime(c.createdAt)],
        ],
        { onRow: (c) => ctx.go(`#/campaigns/${c.id}`), empty: "No campaigns yet." },
      ),
    );
  };
  clear(
    root,
    h("h1", null, "Campaigns"),
    h(
      "div",
      { class: "toolbar" },
      h(
        "a",
        {
          href: write ? "#/campaigns/new" : undefined,
          class: `button primary${write ? "" : " disabled"}`,
          id: "new-campaign",
          role: "button",
          "aria-disabled": write ? undefined : "true",
          title: write ? undefined : ctx.needs("campaigns:write"),
        },
        "New campaign",
      ),
      write ? null : h("span", { class: "muted" }, ctx.needs("campaigns:write")),
    ),
    out,
  );
  ctx.every(3000, load);
  return load();
}

async function wizard(root: HTMLElement, ctx: Ctx) {
  if (!ctx.can("campaigns:write")) {
    clear(root, h("h1", null, "New campaign"), h("p", { class: "card disabled-page" }, ctx.needs("campaigns:write")));
    return;
  }
  const [templates, tags] = await Promise.all([
    ctx.can("messages:read")
      ? list<Template>("/templates?limit=200").then((r) => r.data.filter((t) => t.status === "approved"))
      : Promise.resolve([] as Template[]),
    ctx.can("contacts:read") ? list<Tag>("/tags?limit=200").then((r) => r.data) : Promise.resolve([] as Tag[]),
  ]);
  const name = h("input", { id: "campaign-name", required: true, maxlength: 200, placeholder: "November newsletter" });
  const template = h(
    "select",
    { id: "campaign-template", required: true },
    templates.map((t) => h("option", { value: t.id }, `${t.channel} · ${t.name} (${t.language})`)),
  );
  const preview = h("p", { class: "muted wrap" });
  const params = h("div", { class: "params" });
  const match = h("select", { id: "campaign-match" }, h("option", { value: "any" }, "any of the tags"), h("option", { value: "all" }, "all of the tags"));
  const tagBoxes = h(
    "fieldset",
    { class: "tags", id: "campaign-tags" },
    h("legend", null, "Audience: contacts with ", match),
    tags.length
      ? tags.map((t) => h("label", { class: "check" }, h("input", { type: "checkbox", value: t.name }), ` ${t.name} (${t.contactCount})`))
      : h("p", { class: "muted" }, ctx.can("contacts:read") ? "No tags yet: tag contacts first." : `Tags: ${ctx.needs("contacts:read")}`),
  );
  const scheduled = h("input", { id: "campaign-scheduled", type: "datetime-local" });
  const estimateEl = h(
    "section",
    { class: "card estimate", id: "estimate", "aria-live": "polite" },
    h("p", { class: "muted" }, "Pick a template and at least one tag to see the estimate."),
  );
  const create = h("button", { type: "submit", class: "primary", id: "campaign-create", disabled: true }, "Create campaign");
  const error = h("p", { class: "error", role: "alert" });

  const showParams = () => {
    const t = templates.find((x) => x.id === template.value);
    preview.textContent = t ? bodyText(t) : "";
    clear(
      params,
      (t?.params ?? []).map((p) => h("label", null, `${p} `, h("input", { name: p, value: p === "body.1" ? '{{contact.firstName | "friend"}}' : "" }))),
    );
  };
  const body = () => {
    const chosen = [...tagBoxes.querySelectorAll<HTMLInputElement>("input:checked")].map((i) => i.value);
    return {
      templateId: template.value,
      audience: { type: "tags", tags: chosen, match: match.value },
      askValues: Object.fromEntries([...params.querySelectorAll("input")].map((i) => [i.name, i.value])),
    };
  };
  let asked = 0;
  const estimate = async () => {
    const b = body();
    create.disabled = true;
    if (!b.templateId || !b.audience.tags.length) {
      clear(estimateEl, h("p", { class: "muted" }, "Pick a template and at least one tag to see the estimate."));
      return;
    }
    const mine = ++asked; // a slower older answer must not overwrite a newer one
    try {
      const e = await post<Estimate>("/campaigns/estimate", b);
      if (mine !== asked) return;
      const excluded = Object.entries(e.excluded).filter(([, n]) => n > 0);
      clear(
        estimateEl,
        h("h3", null, "Estimate"),
        h("p", { class: "big", id: "estimate-sendable" }, `${e.sendable} of ${e.matched} contacts can be sent to`),
        excluded.length
          ? h(
              "ul",
              { id: "estimate-excluded" },
              excluded.map(([k, n]) => h("li", null, `${n} excluded: ${REASONS[k] ?? k}`)),
            )
          : h("p", { class: "muted" }, "Nobody is excluded."),
        h("p", null, `Cost: ${e.estimatedCost.amount} ${e.estimatedCost.unit} (${e.unitPrice} each); balance ${e.balance.amount} ${e.balance.unit}`),
        e.sufficientBalance ? null : h("p", { class: "error" }, "The balance cannot pay for it: credit it first."),
        e.dailyDmLimit ? h("p", { class: "muted" }, `Daily DM limit of the account: ${e.dailyDmLimit}`) : null,
      );
      create.disabled = !e.sufficientBalance || !e.sendable;
    } catch (err) {
      if (mine === asked) clear(estimateEl, h("p", { class: "error" }, err instanceof ApiError ? err.describe() : String(err)));
    }
  };
  const later = debounce(estimate, 300);

  const form = h(
    "form",
    { class: "wizard" },
    h("label", { for: "campaign-name" }, "1. Name"),
    name,
    h("label", { for: "campaign-template" }, "2. Template"),
    templates.length ? template : h("p", { class: "muted" }, ctx.can("messages:read") ? "No approved template." : `Templates: ${ctx.needs("messages:read")}`),
    preview,
    h("div", null, h("p", null, '3. Values of the template\'s parameters (text, or {{contact.firstName | "fallback"}})'), params),
    tagBoxes,
    h("label", { for: "campaign-scheduled" }, "4. Start at (empty: now)"),
    scheduled,
    estimateEl,
    h("div", { class: "row" }, create, h("a", { href: "#/campaigns", class: "button" }, "Back")),
    error,
  );
  form.addEventListener("input", later);
  form.addEventListener("change", (e) => {
    if (e.target === template) showParams();
    later();
  });
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    create.disabled = true;
    error.textContent = "";
    try {
      const c = await post<Campaign>("/campaigns", {
        ...body(),
        name: name.value.trim(),
        scheduledAt: scheduled.value ? new Date(scheduled.value).toISOString() : null,
      });
      ctx.go(`#/campaigns/${c.id}`);
    } catch (err) {
      error.textContent = err instanceof ApiError ? err.describe() : String(err);
      create.disabled = false;
    }
  });
  showParams();
  clear(root, h("h1", null, "New campaign"), form);
  name.focus();
}

async function detail(root: HTMLElement, ctx: Ctx) {
  const write = ctx.can("campaigns:write");
  const samples: Record<string, [number, number][]> = { sent: [], delivered: [], read: [], failed: [] };
  const head = h("div");
  const charts = h("div", { class: "charts" });
  let last: Campaign | null = null;
  const action = (verb: string) => async () => {
    try {
      await post(`/campaigns/${ctx.arg}/${verb}`);
      await load();
    } catch (e) {
      ctx.flash(e instanceof ApiError ? e.describe() : String(e), "error");
    }
  };
  const load = async () => {
    const c = await get<Campaign>(`/campaigns/${ctx.arg}`);
    const now = Date.now();
    // Cumulative counts: a recipient that reached "read" passed "delivered" and "sent" too.
    const st = c.stats;
    const reached = { sent: st.sent + st.delivered + st.read, delivered: st.delivered + st.read, read: st.read, failed: st.failed };
    for (const k of Object.keys(samples)) samples[k].push([now, reached[k as keyof typeof reached]]);
    const changed = !last || last.status !== c.status || last.pauseReason !== c.pauseReason;
    last = c;
    if (changed) {
      const button = (verb: string, label: string, when: string[]) =>
        when.includes(c.status)
          ? h(
              "button",
              { type: "button", id: `campaign-${verb}`, disabled: !write, title: write ? undefined : ctx.needs("campaigns:write"), onclick: action(verb) },
              label,
            )
          : null;
      clear(
        head,
        h("h1", { class: "wrap" }, c.name),
        h(
          "p",
          null,
          badge(c.status),
          ` ${c.channel} · created ${fmtTime(c.createdAt)}`,
          c.pauseReason ? ` · paused: ${c.pauseReason}` : "",
          c.failureReason ? ` · failed: ${c.failureReason}` : "",
        ),
        h(
          "div",
          { class: "row" },
          button("pause", "Pause", ["running"]),
          button("resume", "Resume", ["paused"]),
          button("cancel", "Cancel", ["scheduled", "running", "paused"]),
          h("a", { href: "#/campaigns", class: "button" }, "All campaigns"),
        ),
      );
    }
    const excluded = Object.values(st.excluded).reduce((a, b) => a + b, 0);
    clear(
      charts,
      h(
        "section",
        { class: "card" },
        h("h2", null, "Progress"),
        h("p", { class: "row" }, progressBar(c.progress, "progress"), ` ${Math.round(c.progress)}% · ${st.pending} pending`),
        h(
          "p",
          null,
          `${st.sendable} sendable of ${st.matched} matched`,
          excluded
            ? ` · excluded: ${Object.entries(st.excluded)
                .filter(([, n]) => n > 0)
                .map(([k, n]) => `${n} ${REASONS[k] ?? k}`)
                .join(", ")}`
            : "",
        ),
        h("p", null, `Cost: ${c.cost.spent.amount} spent of ${c.cost.estimated.amount} ${c.cost.estimated.unit} estimated`),
      ),
      funnel(
        "Funnel (recipients by the furthest status reached)",
        [
          { name: "matched", value: st.matched },
          { name: "excluded", value: excluded },
          { name: "sent", value: reached.sent },
          { name: "delivered", value: reached.delivered },
          { name: "read", value: reached.read },
          { name: "replied", value: st.replied },
          { name: "failed", value: st.failed },
        ],
        st.matched,
      ),
      funnel(`Cost (${c.cost.estimated.unit})`, [
        { name: "estimated", value: Number(c.cost.estimated.amount), label: c.cost.estimated.amount },
        { name: "spent", value: Number(c.cost.spent.amount), label: c.cost.spent.amount },
      ]),
      lineChart(
        "While this page is open: recipients over time",
        Object.entries(samples).map(([name, points]): Series => ({ name, points })),
        { empty: "Collecting samples…" },
      ),
    );
  };
  clear(root, head, charts);
  await load();
  // Deliveries and reads keep arriving after a campaign completes: keep polling while the page is open.
  ctx.every(1500, load);
}

export const campaignsPage: PageDef = {
  id: "campaigns",
  title: "Campaigns",
  scope: "campaigns:read",
  render(root, ctx) {
    if (ctx.arg === "new") return wizard(root, ctx);
    if (ctx.arg) return detail(root, ctx);
    return listView(root, ctx);
  },
};
