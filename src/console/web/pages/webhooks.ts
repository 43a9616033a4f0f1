/** Webhooks: the endpoints, an endpoint's deliveries log with its attempts, redeliver, and a test event. */
import { ApiError, list, post, qs } from "../api";
import { badge, clear, fmtTime, h, table } from "../dom";
import type { Ctx, PageDef } from "../main";
import type { Delivery, Webhook } from "../types";

function attempts(d: Delivery): HTMLElement {
  return h(
    "details",
    null,
    h("summary", null, `${d.attemptCount} attempt${d.attemptCount === 1 ? "" : "s"}`),
    h("ul", null, d.attempts.map((a) => h("li", null, `${fmtTime(a.attemptedAt)} ${a.trigger}: ${a.statusCode ?? "no response"}${a.durationMs !== null ? ` in ${a.durationMs} ms` : ""}${a.error ? ` — ${a.error}` : ""}`))),
  );
}

async function endpointView(el: HTMLElement, w: Webhook, ctx: Ctx) {
  const write = ctx.can("webhooks:write");
  const reason = write ? undefined : ctx.needs("webhooks:write");
  const status = h("select", { "aria-label": "Delivery status" }, ["", "pending", "succeeded", "failed"].map((x) => h("option", { value: x }, x || "all deliveries")));
  const log = h("div", { id: "deliveries" });
  const act = (path: string, done: string) => async () => {
    try {
      await post(`/webhooks/${w.id}/${path}`);
      ctx.flash(done);
      await load();
    } catch (e) {
      ctx.flash(e instanceof ApiError ? e.describe() : String(e), "error");
    }
  };
  const load = async () => {
    const { data } = await list<Delivery>(`/webhooks/${w.id}/deliveries${qs({ status: status.value, limit: 50 })}`);
    clear(
      log,
      table(data, [
        ["Event", (d) => d.eventType],
        ["Status", (d) => badge(d.status)],
        ["Last code", (d) => String(d.lastStatusCode ?? "—")],
        ["Attempts", attempts],
        ["Next attempt", (d) => fmtTime(d.nextAttemptAt)],
        ["Created", (d) => fmtTime(d.createdAt)],
        ["", (d) => h("button", { type: "button", class: "small", disabled: !write, title: reason, onclick: act(`deliveries/${d.id}/redeliver`, "Redelivery queued.") }, "Redeliver")],
      ], { empty: "No deliveries yet." }),
    );
  };
  status.addEventListener("change", load);
  clear(
    el,
    h("h2", { class: "wrap" }, w.url),
    h("p", null, badge(w.enabled ? "enabled" : "disabled"), w.disabledReason ? ` (${w.disabledReason})` : "", ` · ${w.events.join(", ")}`, w.description ? ` · ${w.description}` : ""),
    h("div", { class: "toolbar" }, status, h("button", { type: "button", id: "webhook-test", disabled: !write, title: reason, onclick: act("test", "Test event queued.") }, "Send a test event")),
    log,
  );
  await load();
  ctx.every(3000, load);
}

export const webhooksPage: PageDef = {
  id: "webhooks",
  title: "Webhooks",
  scope: "webhooks:read",
  async render(root, ctx) {
    const { data } = await list<Webhook>("/webhooks?limit=200");
    const detail = h("section", { class: "card" }, h("p", { class: "muted" }, data.length ? "Pick an endpoint to see its deliveries." : "No endpoints: create one with POST /webhooks (docs/api.md, Webhooks)."));
    clear(
      root,
      h("h1", null, "Webhooks"),
      table(data, [
        ["URL", (w) => h("span", { class: "wrap" }, w.url)],
        ["Events", (w) => h("span", { class: "wrap" }, w.events.join(", "))],
        ["State", (w) => badge(w.enabled ? "enabled" : (w.disabledReason ?? "disabled"))],
      ], { onRow: (w) => ctx.go(`#/webhooks/${w.id}`), selected: (w) => w.id === ctx.arg, empty: "No endpoints yet." }),
      detail,
    );
    const chosen = data.find((w) => w.id === ctx.arg);
    if (chosen) await endpointView(detail, chosen, ctx);
  },
};
