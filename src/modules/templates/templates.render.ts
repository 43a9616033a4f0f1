/**
 * A template's components, read and rendered: the params they take (paramsOf), whether the header is media
 * (hasMediaHeader), and the text, subject and (e-mail) HTML with the params filled in (renderTemplate). Pure.
 */
import type { TemplateComponent } from "../../channels/channel.types";

/** Params a set of components takes: `{{n}}` in body/header text → body.n; in a URL button → button.<i>.n. */
export function paramsOf(components: TemplateComponent[]): string[] {
  const out = new Set<string>();
  for (const c of components) {
    if (c.type === "buttons")
      c.buttons?.forEach((b, i) => {
        for (const m of (b.url ?? "").matchAll(/\{\{(\d+)\}\}/g)) out.add(`button.${i}.${m[1]}`);
      });
    else for (const m of (c.text ?? "").matchAll(/\{\{(\d+)\}\}/g)) out.add(`body.${m[1]}`);
  }
  return [...out].sort();
}

const HTML_ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export const escapeHtml = (s: string) => s.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);

/**
 * The template with its params filled in: subject, plain text and (e-mail) HTML.
 * NB! Params are data, not markup — a campaign fills them from contact fields anyone can set (a sign-up form,
 * an inbound profile name): in the HTML part each is HTML-escaped (DESIGN §23); text and subject take it as is.
 * `{{unsubscribe_url}}` is the recipient's unsubscribe link (DESIGN §20; e-mail from a template or campaign),
 * escaped like a param; empty where there is none (other channels).
 */
export function renderTemplate(t: { components: TemplateComponent[] }, params: Record<string, string>, extras: { unsubscribeUrl?: string } = {}) {
  const fill = (s: string | undefined, escapeValue = (v: string) => v) =>
    (s ?? "").replace(/\{\{(?:(\d+)|unsubscribe_url)\}\}/g, (_, n: string | undefined) =>
      escapeValue(n === undefined ? (extras.unsubscribeUrl ?? "") : (params[`body.${n}`] ?? "")),
    );
  const header = t.components.find((c) => c.type === "header" && (c.format ?? "text") === "text");
  const body = t.components.find((c) => c.type === "body");
  const footer = t.components.find((c) => c.type === "footer");
  const html = (t.components as (TemplateComponent & { html?: string })[]).find((c) => c.type === "body")?.html;
  const text = [fill(body?.text), footer?.text].filter(Boolean).join("\n\n");
  return { subject: header ? fill(header.text) : undefined, text, html: html ? fill(html, escapeHtml) : undefined };
}

export function hasMediaHeader(t: { components: TemplateComponent[] }): boolean {
  return t.components.some((c) => c.type === "header" && c.format !== undefined && c.format !== "text");
}
