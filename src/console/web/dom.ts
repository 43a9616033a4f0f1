/**
 * A tiny DOM builder. Text always goes in through text nodes (never innerHTML): names and messages come
 * from customers, and the page's CSP is the second line of defence, not the first.
 */
export type Child = Node | string | number | null | undefined | false | Child[];
export type Attrs = Record<string, unknown>;

function append(el: Node, children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.appendChild(typeof c === "object" ? c : document.createTextNode(String(c)));
  }
}

function setAttrs(el: Element, attrs: Attrs | null | undefined): void {
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v as EventListener);
    else if (k === "value" && "value" in el) (el as HTMLInputElement).value = String(v);
    else if (k === "checked" && el instanceof HTMLInputElement) el.checked = Boolean(v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
}

/** h("button", { class: "primary", onclick }, "Send") */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

/** SVG elements (charts); attributes only — the CSP refuses inline style attributes. */
export function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs?: Attrs | null, ...children: Child[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  setAttrs(el, attrs);
  append(el, children);
  return el;
}

export function clear(el: Element, ...children: Child[]): void {
  el.replaceChildren();
  append(el, children);
}

export const fmtTime = (iso: string | null | undefined): string => (iso ? new Date(iso).toLocaleString() : "—");

/** A coloured chip for a status word; the CSS colours it by class `st-<status>`. */
export const badge = (status: string): HTMLElement => h("span", { class: `badge st-${status}` }, status.replace(/_/g, " "));

/** A table from rows: columns are [heading, cell(row)] pairs. */
export function table<T>(
  rows: T[],
  columns: [string, (row: T) => Child][],
  opts: { onRow?: (row: T) => void; empty?: string; selected?: (row: T) => boolean } = {},
): HTMLElement {
  if (!rows.length) return h("p", { class: "muted" }, opts.empty ?? "Nothing yet.");
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      null,
      h(
        "thead",
        null,
        h(
          "tr",
          null,
          columns.map(([title]) => h("th", { scope: "col" }, title)),
        ),
      ),
      h(
        "tbody",
        null,
        rows.map((row) => {
          const tr = h(
            "tr",
            { class: opts.selected?.(row) ? "selected" : undefined },
            columns.map(([, cell]) => h("td", null, cell(row))),
          );
          if (opts.onRow) {
            // Keyboard users reach the row with Tab and open it with Enter, like a link.
            tr.tabIndex = 0;
            tr.classList.add("clickable");
            tr.addEventListener("click", () => opts.onRow!(row));
            tr.addEventListener("keydown", (e) => {
              if (e.key === "Enter") opts.onRow!(row);
            });
          }
          return tr;
        }),
      ),
    ),
  );
}

/** Runs `fn` after `ms` of quiet (typing in a search box, editing the campaign wizard). */
export function debounce<A extends unknown[]>(fn: (...a: A) => void, ms: number): (...a: A) => void {
  let t: number | undefined;
  return (...a) => {
    clearTimeout(t);
    t = window.setTimeout(() => fn(...a), ms);
  };
}
