/**
 * The console's shell: sign-in with an API key, the navigation, and a hash router (#/inbox, #/campaigns/<id>)
 * so every page is a link and the server serves one document. Each page declares the scope it needs; the
 * key's scopes come from GET /me, and a page the key may not read is shown disabled with the reason —
 * the API would refuse it anyway (403), this only says so before the click.
 */
import { ApiError, call, forgetKey, storedKey, storeKey, whenUnauthorized } from "./api";
import { clear, h } from "./dom";
import type { Me } from "./types";
import type { Ctx, PageDef } from "./page";
import { overviewPage } from "./pages/overview";
import { channelsPage } from "./pages/channels";
import { inboxPage } from "./pages/inbox";
import { messagesPage } from "./pages/messages";
import { contactsPage } from "./pages/contacts";
import { campaignsPage } from "./pages/campaigns";
import { socialPage } from "./pages/social";
import { webhooksPage } from "./pages/webhooks";
import { templatesPage } from "./pages/templates";

const PAGES: PageDef[] = [overviewPage, channelsPage, inboxPage, messagesPage, contactsPage, campaignsPage, socialPage, webhooksPage, templatesPage];

const can = (me: Me, scope: string) => me.key.scopes.includes("*") || me.key.scopes.includes(scope);
const needs = (scope: string) => `Needs the scope ${scope}, which this API key does not have.`;

let timers: number[] = [];
const stopTimers = () => {
  timers.forEach((t) => clearInterval(t));
  timers = [];
};

function signIn(message?: string): void {
  stopTimers();
  window.onhashchange = null; // signed out: no page may load (it would call the API without a key)
  const input = h("input", {
    id: "api-key",
    name: "apiKey",
    type: "password",
    autocomplete: "off",
    required: true,
    placeholder: "sb_live_…",
    spellcheck: "false",
  });
  const error = h("p", { class: "error", role: "alert" }, message ?? "");
  const form = h(
    "form",
    { class: "signin card" },
    h("h1", null, "Switchboard console"),
    h("label", { for: "api-key" }, "API key"),
    input,
    h(
      "p",
      { class: "muted" },
      "Kept in this tab's session storage only; closing the tab or signing out forgets it. Create one with ",
      h("code", null, "switchboard keys create"),
      ".",
    ),
    h("button", { type: "submit", class: "primary" }, "Sign in"),
    error,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const key = input.value.trim();
    try {
      const { data: me } = await call<{ data: Me }>("GET", "/me", undefined, key);
      storeKey(key);
      shell(me);
    } catch (err) {
      error.textContent =
        err instanceof ApiError ? (err.status === 401 ? `This key was refused (${err.code}).` : err.describe()) : "The appliance did not answer.";
    }
  });
  clear(document.body, h("main", { class: "signin-wrap" }, form));
  input.focus();
}

function signOut(): void {
  forgetKey();
  location.hash = "";
  signIn("Signed out.");
}

function shell(me: Me): void {
  const main = h("main", { id: "page", tabindex: "-1" });
  const status = h("div", { class: "flash", role: "status", "aria-live": "polite" });
  const nav = h("nav", { "aria-label": "Pages" });
  const balance = h("span", { class: "balance", id: "shell-balance" }, `${me.company.balance.amount} ${me.company.balance.unit}`);
  clear(
    document.body,
    h(
      "div",
      { class: "app" },
      h(
        "header",
        { class: "top" },
        h("strong", { class: "brand" }, "Switchboard"),
        h("span", { class: "company" }, me.company.name),
        balance,
        h("span", { class: "key muted", title: me.key.scopes.join(" ") }, `key ${me.key.prefix}… (${me.key.name})`),
        h("button", { type: "button", id: "sign-out", onclick: signOut }, "Sign out"),
      ),
      nav,
      h("div", { class: "content" }, status, main),
    ),
  );

  let shownPage = "";
  let refreshHeader = false; // the first page comes straight after sign-in's own GET /me
  let shown = 0; // the route being shown; an older one still loading must not draw or poll
  const route = async () => {
    stopTimers();
    const mine = ++shown;
    const [id = "overview", ...rest] = location.hash.replace(/^#\/?/, "").split("/");
    const page = PAGES.find((p) => p.id === id) ?? PAGES[0];
    clear(
      nav,
      PAGES.map((p) => {
        const allowed = !p.scope || can(me, p.scope);
        // A page the key may not read stays a link: it leads to the reason, shown instead of the page.
        return h(
          "a",
          {
            href: `#/${p.id}`,
            id: `nav-${p.id}`,
            class: `${p.id === page.id ? "active" : ""}${allowed ? "" : " disabled"}`,
            "aria-current": p.id === page.id ? "page" : undefined,
            title: allowed ? undefined : needs(p.scope!),
          },
          p.title,
          allowed ? null : h("small", null, `needs ${p.scope}`),
        );
      }),
    );
    status.textContent = "";
    document.title = `${page.title} · Switchboard console`;
    // The balance in the header moves with every priced send: read it again on each page change.
    if (refreshHeader)
      void call<{ data: Me }>("GET", "/me").then(
        ({ data }) => (balance.textContent = `${data.company.balance.amount} ${data.company.balance.unit}`),
        () => {},
      );
    refreshHeader = true;
    if (page.scope && !can(me, page.scope)) {
      clear(
        main,
        h("h1", null, page.title),
        h(
          "section",
          { class: "card disabled-page", id: "disabled-reason" },
          h("p", null, needs(page.scope)),
          h("p", { class: "muted" }, `The key's scopes: ${me.key.scopes.join(", ") || "none"}.`),
        ),
      );
      return;
    }
    const ctx: Ctx = {
      me,
      can: (scope) => can(me, scope),
      needs,
      every: (ms, fn) => {
        if (mine !== shown) return; // the user has moved on while this page was loading
        // One run at a time; a failed poll says so in the status line instead of an unhandled rejection.
        let busy = false;
        timers.push(
          window.setInterval(async () => {
            if (busy) return;
            busy = true;
            try {
              await fn();
            } catch (e) {
              ctx.flash(e instanceof ApiError ? e.describe() : String(e), "error");
            } finally {
              busy = false;
            }
          }, ms),
        );
      },
      flash: (text, kind = "ok") => {
        status.className = `flash ${kind}`;
        status.textContent = text;
      },
      arg: rest.join("/"),
      go: (hash) => {
        location.hash = hash;
      },
    };
    // Each route draws into its own element: a slow page that finishes after the user moved on draws
    // into a detached one.
    const root = h("div", { class: "page-root" }, h("p", { class: "muted" }, "Loading…"));
    clear(main, root);
    try {
      await page.render(root, ctx);
    } catch (e) {
      clear(root, h("h1", null, page.title), h("p", { class: "error" }, e instanceof ApiError ? e.describe() : String(e)));
    }
    if (mine !== shown) return;
    // Keyboard and screen-reader users land on the new page's content, not back at the top of the nav;
    // within a page (opening a conversation) focus stays where it was.
    if (page.id !== shownPage) main.focus({ preventScroll: true });
    shownPage = page.id;
  };
  window.onhashchange = route;
  void route();
}

whenUnauthorized((e) => {
  forgetKey();
  signIn(`The key is no longer accepted (${e.code}). Sign in again.`);
});

async function start(): Promise<void> {
  const key = storedKey();
  if (!key) return signIn();
  try {
    shell((await call<{ data: Me }>("GET", "/me")).data);
  } catch (e) {
    if (!(e instanceof ApiError && e.status === 401)) signIn("The appliance did not answer; try again.");
  }
}

void start();
