/** Templates: every approved (and synced) template of the company's accounts, with its text and params. */
import { list, loadTurns, qs } from "../api";
import { badge, clear, h, table } from "../dom";
import type { PageDef } from "../page";
import type { Template } from "../types";

export const bodyText = (t: Template): string => t.components.find((c) => c.type === "body")?.text ?? "";

export const templatesPage: PageDef = {
  id: "templates",
  title: "Templates",
  scope: "messages:read",
  async render(root) {
    const channel = h(
      "select",
      { "aria-label": "Channel" },
      ["", "whatsapp", "instagram", "messenger", "x", "tiktok", "telegram", "email"].map((c) => h("option", { value: c }, c || "all channels")),
    );
    const out = h("div");
    const loads = loadTurns();
    const load = async () => {
      const turn = loads.next();
      const { data } = await list<Template>(`/templates${qs({ channel: channel.value, limit: 200 })}`);
      if (loads.stale(turn)) return;
      clear(
        out,
        table(data, [
          ["Name", (t) => h("strong", null, t.name)],
          ["Channel", (t) => t.channel],
          ["Language", (t) => t.language],
          ["Category", (t) => t.category],
          ["Status", (t) => badge(t.status)],
          ["Body", (t) => h("span", { class: "wrap" }, bodyText(t))],
          ["Params", (t) => t.params.join(", ") || "—"],
        ]),
      );
    };
    channel.addEventListener("change", load);
    clear(root, h("h1", null, "Templates"), h("div", { class: "toolbar" }, channel), out);
    await load();
  },
};
