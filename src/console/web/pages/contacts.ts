/**
 * Contacts: search, a contact's detail (identities, tags, consent per channel) and a file import with a
 * progress bar — the upload's bytes first, then the rows the job has processed out of the rows in the file
 * (counted here: the import reports processed rows, not a total).
 */
import { ApiError, del, get, list, post, qs, upload } from "../api";
import { badge, clear, debounce, fmtTime, h, table } from "../dom";
import type { Ctx, PageDef } from "../page";
import type { Contact, ContactImport } from "../types";

const fullName = (c: Contact) => [c.firstName, c.lastName].filter(Boolean).join(" ") || "(no name)";

function detailView(c: Contact, ctx: Ctx, changed: (c: Contact) => void): HTMLElement {
  const write = ctx.can("contacts:write");
  const reason = write ? undefined : ctx.needs("contacts:write");
  const run = async (fn: () => Promise<Contact>) => {
    try {
      changed(await fn());
    } catch (e) {
      ctx.flash(e instanceof ApiError ? e.describe() : String(e), "error");
    }
  };
  const tagInput = h("input", { id: "tag-name", placeholder: "tag", "aria-label": "New tag", disabled: !write });
  const tagForm = h("form", { class: "row" }, tagInput, h("button", { type: "submit", disabled: !write, title: reason }, "Add tag"));
  tagForm.addEventListener("submit", (e) => {
    e.preventDefault();
    const tag = tagInput.value.trim();
    if (tag) void run(() => post<Contact>(`/contacts/${c.id}/tags`, { tags: [tag] }));
  });
  const channels = [...new Set(c.identities.map((i) => i.channel))];
  return h(
    "section",
    { class: "card contact-detail", id: "contact-detail" },
    h("h2", { class: "wrap" }, fullName(c), c.blocked ? h("span", { class: "error" }, " (blocked)") : null),
    h("p", { class: "muted" }, [c.city, c.country, `created ${fmtTime(c.createdAt)}`].filter(Boolean).join(" · ")),
    h("h3", null, "Identities"),
    h(
      "ul",
      null,
      c.identities.map((i) => h("li", { class: "wrap" }, `${i.channel}: ${i.value} `, i.status === "verified" ? null : badge(i.status))),
    ),
    h("h3", null, "Tags"),
    h(
      "p",
      { class: "chips" },
      c.tags.length
        ? c.tags.map((t) =>
            h(
              "span",
              { class: "chip" },
              t,
              h(
                "button",
                {
                  type: "button",
                  class: "x",
                  disabled: !write,
                  title: reason ?? `Remove ${t}`,
                  "aria-label": `Remove tag ${t}`,
                  onclick: () => run(() => del<Contact>(`/contacts/${c.id}/tags/${encodeURIComponent(t)}`)),
                },
                "×",
              ),
            ),
          )
        : h("span", { class: "muted" }, "none"),
    ),
    tagForm,
    h("h3", null, "Consent"),
    table(
      channels,
      [
        ["Channel", (ch) => ch],
        ["Status", (ch) => badge(c.consent[ch]?.status ?? "unknown")],
        ["Since", (ch) => fmtTime(c.consent[ch]?.updatedAt)],
        [
          "",
          (ch) =>
            h(
              "span",
              { class: "row" },
              h(
                "button",
                {
                  type: "button",
                  class: "small",
                  disabled: !write,
                  title: reason,
                  onclick: () => run(() => post<Contact>(`/contacts/${c.id}/opt-in`, { channels: [ch] })),
                },
                "Opt in",
              ),
              h(
                "button",
                {
                  type: "button",
                  class: "small",
                  disabled: !write,
                  title: reason,
                  onclick: () => run(() => post<Contact>(`/contacts/${c.id}/opt-out`, { channels: [ch] })),
                },
                "Opt out",
              ),
            ),
        ],
      ],
      { empty: "No identities, so no consent." },
    ),
  );
}

/** Rows in an import file: non-blank lines, less the CSV header (a quoted newline inside a cell overcounts; the bar is a guide). */
async function countRows(file: File, csv: boolean): Promise<number> {
  const lines = (await file.text()).split(/\r?\n/).filter((l) => l.trim()).length;
  return Math.max(1, csv ? lines - 1 : lines);
}

function importer(ctx: Ctx, done: () => void): HTMLElement {
  const write = ctx.can("contacts:write");
  const file = h("input", { type: "file", id: "import-file", accept: ".csv,.ndjson,.jsonl,text/csv,application/x-ndjson", disabled: !write });
  const bar = h("progress", { id: "import-progress", max: 1, value: 0, "aria-label": "Import progress" });
  const line = h("p", { class: "muted", id: "import-status", "aria-live": "polite" });
  const errors = h("ul", { class: "error" });
  const button = h("button", { type: "submit", id: "import-start", disabled: !write, title: write ? undefined : ctx.needs("contacts:write") }, "Import");
  const form = h(
    "form",
    { class: "card importer" },
    h("h2", null, "Import contacts"),
    h("p", { class: "muted" }, "CSV with a header row (firstName, lastName, email, whatsapp, tags, optIn, …) or NDJSON, one contact per line."),
    h("div", { class: "row" }, file, button),
    bar,
    line,
    errors,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const f = file.files?.[0];
    if (!f) return;
    const csv = !/\.(nd)?jsonl?$/i.test(f.name);
    button.disabled = true;
    clear(errors);
    try {
      const rows = await countRows(f, csv);
      line.textContent = "Uploading…";
      let job = await upload<ContactImport>("/contacts/import", f, csv ? "text/csv" : "application/x-ndjson", (x) => {
        bar.value = x * 0.1; // the upload is the first tenth of the bar
      });
      while (job.status === "queued" || job.status === "running") {
        bar.value = 0.1 + 0.9 * Math.min(1, job.processed / rows);
        line.textContent = `${job.status}: ${job.processed} of ~${rows} rows`;
        await new Promise((r) => setTimeout(r, 500));
        job = await get<ContactImport>(`/contacts/imports/${job.id}`);
      }
      bar.value = 1;
      line.textContent = `${job.status}: ${job.created} created, ${job.updated} updated, ${job.failed} failed${job.error ? ` — ${job.error}` : ""}`;
      clear(
        errors,
        (job.errors ?? []).slice(0, 20).map((x) => h("li", null, `row ${x.row} ${x.pointer}: ${x.message}`)),
      );
      done();
    } catch (err) {
      line.textContent = err instanceof ApiError ? err.describe() : String(err);
    } finally {
      button.disabled = !write;
    }
  });
  return form;
}

export const contactsPage: PageDef = {
  id: "contacts",
  title: "Contacts",
  scope: "contacts:read",
  async render(root, ctx) {
    const q = h("input", { type: "search", id: "contact-search", placeholder: "Search names, phones, e-mails, handles", "aria-label": "Search contacts" });
    const results = h("div");
    const side = h("div", { class: "contact-side" });
    let cursor: string | null = null;
    const show = (c: Contact) => {
      clear(side, detailView(c, ctx, show));
      if (ctx.arg !== c.id) history.replaceState(null, "", `#/contacts/${c.id}`);
    };
    const search = async (more = false) => {
      const page = await list<Contact>(`/contacts${qs({ q: q.value.trim(), limit: 50, cursor: more ? cursor : null })}`);
      cursor = page.page.nextCursor;
      const t = table(
        page.data,
        [
          ["Name", (c) => h("span", { class: "wrap" }, fullName(c))],
          ["Identities", (c) => h("span", { class: "wrap" }, c.identities.map((i) => i.value).join(", "))],
          ["Tags", (c) => h("span", { class: "wrap" }, c.tags.join(", "))],
        ],
        { onRow: show, empty: "No contacts match." },
      );
      if (more) results.append(t);
      else clear(results, t);
      if (cursor) results.append(h("button", { type: "button", onclick: () => void search(true) }, "More"));
    };
    q.addEventListener(
      "input",
      debounce(() => void search(), 250),
    );
    clear(
      root,
      h("h1", null, "Contacts"),
      h("div", { class: "toolbar" }, q),
      h("div", { class: "split" }, results, side),
      importer(ctx, () => void search()),
    );
    await search();
    if (ctx.arg) show(await get<Contact>(`/contacts/${ctx.arg}`));
  },
};
