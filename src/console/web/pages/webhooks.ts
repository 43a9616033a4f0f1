/** Webhooks: the endpoints (and a new one), an endpoint's deliveries log with its attempts, redeliver, and a test event. */
import { ApiError, list, loadTurns, post, qs } from "../api";
import { badge, clear, fmtTime, h, table } from "../dom";
import type { Ctx, PageDef } from "../page";
import type { Delivery, Webhook } from "../types";

function attempts(d: Delivery): HTMLElement {
  return h(
    "details",
    null,
    h("summary", null, `${d.attemptCount} attempt${d.attemptCount === 1 ? "" : "s"}`),
    h(
      "ul",
      null,
      d.attempts.map((a) =>
        h(
          "li",
          null,
          `${fmtTime(a.attemptedAt)} ${a.trigger}: ${a.statusCode ?? "no response"}${a.durationMs !== null ? ` in ${a.durationMs} ms` : ""}${a.error ? ` — ${a.error}` : ""}`,
        ),
      ),
    ),
  );
}

async function endpointView(el: HTMLElement, w: Webhook, ctx: Ctx) {
  const write = ctx.can("webhooks:write");
  const reason = write ? undefined : ctx.needs("webhooks:write");
  const status = h(
    "select",
    { "aria-label": "Delivery status" },
    ["", "pending", "succeeded", "failed"].map((x) => h("option", { value: x }, x || "all deliveries")),
  );
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
  const loads = loadTurns();
  const load = async () => {
    const turn = loads.next();
    const { data } = await list<Delivery>(`/webhooks/${w.id}/deliveries${qs({ status: status.value, limit: 50 })}`);
    if (loads.stale(turn)) return;
    clear(
      log,
      table(
        data,
        [
          ["Event", (d) => d.eventType],
          ["Status", (d) => badge(d.status)],
          ["Last code", (d) => String(d.lastStatusCode ?? "—")],
          ["Attempts", attempts],
          ["Next attempt", (d) => fmtTime(d.nextAttemptAt)],
          ["Created", (d) => fmtTime(d.createdAt)],
          [
            "",
            (d) =>
              h(
                "button",
                { type: "button", class: "small", disabled: !write, title: reason, onclick: act(`deliveries/${d.id}/redeliver`, "Redelivery queued.") },
                "Redeliver",
              ),
          ],
        ],
        { empty: "No deliveries yet." },
      ),
    );
  };
  status.addEventListener("change", load);
  clear(
    el,
    h("h2", { class: "wrap" }, w.url),
    h(
      "p",
      null,
      badge(w.enabled ? "enabled" : "disabled"),
      w.disabledReason ? ` (${w.disabledReason})` : "",
      ` · ${w.events.join(", ")}`,
      w.description ? ` · ${w.description}` : "",
    ),
    h(
      "div",
      { class: "toolbar" },
      status,
      h("button", { type: "button", id: "webhook-test", disabled: !write, title: reason, onclick: act("test", "Test event queued.") }, "Send a test event"),
    ),
    log,
  );
  await load();
  ctx.every(3000, load);
}

/** A new endpoint; its signing secret is shown once, here, as the API returns it only on create. */
function createForm(ctx: Ctx): HTMLElement {
  const write = ctx.can("webhooks:write");
  const url = h("input", { id: "webhook-url", type: "url", required: true, placeholder: "https://erp.example.internal/hooks/switchboard", disabled: !write });
  const events = h("input", { id: "webhook-events", required: true, value: "message.*", disabled: !write });
  const description = h("input", { id: "webhook-description", placeholder: "ERP", disabled: !write });
  const out = h("div", { "aria-live": "polite" });
  const form = h(
    "form",
    { class: "card wizard" },
    h("h2", null, "New endpoint"),
    h("label", { for: "webhook-url" }, "URL"),
    url,
    h("label", { for: "webhook-events" }, "Events (comma-separated: message.sent, message.*, contact.created, *)"),
    events,
    h("label", { for: "webhook-description" }, "Description"),
    description,
    h(
      "p",
      null,
      h(
        "button",
        { type: "submit", class: "primary", id: "webhook-create", disabled: !write, title: write ? undefined : ctx.needs("webhooks:write") },
        "Create endpoint",
      ),
    ),
    out,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const w = await post<Webhook & { secret: string }>("/webhooks", {
        url: url.value.trim(),
        events: events.value
          .split(",")
          .map((x) => x.trim())
          .filter(Boolean),
        description: description.value.trim() || undefined,
      });
      clear(
        out,
        h("p", null, "Created. Its signing secret, shown only now — store it with the receiver:"),
        h("input", { type: "text", readonly: true, value: w.secret, class: "url", id: "webhook-secret", "aria-label": "Signing secret" }),
        h("p", null, h("a", { href: `#/webhooks/${w.id}` }, "Open the endpoint")),
      );
    } catch (err) {
      clear(out, h("p", { class: "error" }, err instanceof ApiError ? err.describe() : String(err)));
    }
  });
  return form;
}

export const webhooksPage: PageDef = {
  id: "webhooks",
  title: "Webhooks",
  scope: "webhooks:read",
  async render(root, ctx) {
    const { data } = await list<Webhook>("/webhooks?limit=200");
    const detail = h(
      "section",
      { class: "card" },
      h("p", { class: "muted" }, data.length ? "Pick an endpoint to see its deliveries." : "No endpoints yet: create one below."),
    );
    clear(
      root,
      h("h1", null, "Webhooks"),
      table(
        data,
        [
          ["URL", (w) => h("span", { class: "wrap" }, w.url)],
          ["Events", (w) => h("span", { class: "wrap" }, w.events.join(", "))],
          ["State", (w) => badge(w.enabled ? "enabled" : (w.disabledReason ?? "disabled"))],
        ],
        { onRow: (w) => ctx.go(`#/webhooks/${w.id}`), selected: (w) => w.id === ctx.arg, empty: "No endpoints yet." },
      ),
      detail,
    );
    const chosen = data.find((w) => w.id === ctx.arg);
    if (chosen) await endpointView(detail, chosen, ctx);
    else root.append(createForm(ctx));
  },
};
