/** Social: a month calendar of posts (on their scheduled day, else the day they were made) with their status. */
import { list, qs } from "../api";
import { badge, clear, h } from "../dom";
import type { PageDef } from "../page";
import type { SocialPost } from "../types";

const dayKey = (d: Date) => `${d.getFullYear()}-${d.getMonth()}-${d.getDate()}`;

export const socialPage: PageDef = {
  id: "social",
  title: "Social",
  scope: "social:read",
  async render(root, ctx) {
    // #/social/2026-11 shows that month; the page opens on this one.
    const m = /^(\d{4})-(\d{2})$/.exec(ctx.arg);
    const first = m ? new Date(Number(m[1]), Number(m[2]) - 1, 1) : new Date(new Date().getFullYear(), new Date().getMonth(), 1);
    const next = new Date(first.getFullYear(), first.getMonth() + 1, 1);
    const prev = new Date(first.getFullYear(), first.getMonth() - 1, 1);
    const month = (d: Date) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, "0")}`;
    // from/to filter on scheduledAt, or createdAt for unscheduled posts (docs/api.md).
    const posts: SocialPost[] = [];
    let cursor: string | null = null;
    for (let i = 0; i < 10; i++) {
      const page: { data: SocialPost[]; page: { nextCursor: string | null } } = await list<SocialPost>(
        `/social/posts${qs({ from: first.toISOString(), to: next.toISOString(), limit: 200, cursor })}`,
      );
      posts.push(...page.data);
      cursor = page.page.nextCursor;
      if (!cursor) break;
    }
    const byDay = new Map<string, SocialPost[]>();
    for (const p of posts) {
      const k = dayKey(new Date(p.scheduledAt ?? p.createdAt));
      byDay.set(k, [...(byDay.get(k) ?? []), p]);
    }
    // Weeks start on Monday; blank cells before the 1st.
    const lead = (first.getDay() + 6) % 7;
    const days = Math.round((next.getTime() - first.getTime()) / 86400_000);
    const cells: HTMLElement[] = [];
    for (let i = 0; i < lead; i++) cells.push(h("div", { class: "day blank", "aria-hidden": "true" }));
    for (let d = 1; d <= days; d++) {
      const date = new Date(first.getFullYear(), first.getMonth(), d);
      const today = dayKey(date) === dayKey(new Date());
      cells.push(
        h(
          "div",
          { class: `day${today ? " today" : ""}` },
          h("div", { class: "num" }, String(d)),
          (byDay.get(dayKey(date)) ?? []).map((p) =>
            h(
              "div",
              { class: "post", title: `${p.text}\n${p.targets.map((t) => `${t.platform}: ${t.status}`).join("\n")}` },
              badge(p.status),
              " ",
              p.scheduledAt ? new Date(p.scheduledAt).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" }) : "",
              h("span", { class: "post-text" }, p.text),
            ),
          ),
        ),
      );
    }
    while (cells.length % 7) cells.push(h("div", { class: "day blank", "aria-hidden": "true" }));
    clear(
      root,
      h("h1", null, "Social"),
      h(
        "div",
        { class: "toolbar" },
        h("a", { class: "button", href: `#/social/${month(prev)}` }, "‹ Previous"),
        h("strong", null, first.toLocaleDateString([], { month: "long", year: "numeric" })),
        h("a", { class: "button", href: `#/social/${month(next)}` }, "Next ›"),
      ),
      h(
        "div",
        { class: "calendar", role: "grid", "aria-label": "Posts by day" },
        ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"].map((d) => h("div", { class: "dow" }, d)),
        cells,
      ),
      posts.length ? null : h("p", { class: "muted" }, "No posts this month."),
    );
  },
};
