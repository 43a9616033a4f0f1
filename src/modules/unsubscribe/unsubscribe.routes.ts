/**
 * One-click unsubscribe (DESIGN §20, RFC 8058), outside /api/public/v1 and without an API key: the token is
 * the authorisation.
 *
 *   POST /u/{token}  what a mail client sends for `List-Unsubscribe-Post: List-Unsubscribe=One-Click` (body
 *                    `List-Unsubscribe=One-Click`, form-encoded; the body is not needed and not read): opts the
 *                    contact out of e-mail at once. 200 every time, also when already opted out (no second event).
 *   GET  /u/{token}  a small page whose one button POSTs to the same URL. NB! A GET never unsubscribes: link
 *                    scanners and previews fetch every URL in a mail.
 *
 * A forged, altered, truncated or foreign token, or one whose contact is gone: 404 (both methods), an HTML
 * page. Rate-limited per client address. Hidden from the OpenAPI document: these are pages for people and
 * mail clients, not API operations (docs/api.md describes them).
 */
import { Elysia, t } from "elysia";
import { AppError } from "../../platform/errors";
import { staticPageCsp } from "../../platform/http/docs-csp";
import { clientIp, compileRanges } from "../../platform/http/ip-allow";
import { escapeHtml } from "../templates/templates.render";
import { UNSUBSCRIBE_PATH, type Unsubscribe, type UnsubscribeNeeds } from "./unsubscribe.service";

/**
 * Per client address: generous, because a mailbox provider's one-click POSTs for a whole campaign come from a
 * few of its addresses; enough to stop one client hammering the route.
 */
const RATE = { ratePerSecond: 20, burst: 200 };

const STYLE =
  "body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem;color:#222}button{font:inherit;padding:.5rem 1.25rem;cursor:pointer}";

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1"><meta name="robots" content="noindex"><title>${escapeHtml(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`;
}

function htmlResponse(html: string, status: number, headers: Record<string, string> = {}): Response {
  // The form posts to this same URL ('self'); nothing else may load, run or frame the page.
  const csp = staticPageCsp(html).replace("form-action 'none'", "form-action 'self'");
  return new Response(html, {
    status,
    headers: { "content-type": "text/html; charset=utf-8", "content-security-policy": csp, "cache-control": "no-store", "x-robots-tag": "noindex", ...headers },
  });
}

const NOT_FOUND_PAGE = page("Link not valid", "<h1>This link is not valid</h1><p>Check that the whole link was copied from the e-mail.</p>");

const confirmPage = (company: string | undefined) =>
  page(
    "Unsubscribe",
    `<h1>Unsubscribe</h1><p>Stop receiving e-mail${company ? ` from ${escapeHtml(company)}` : ""}?</p>` +
      // Same URL (empty action would also do, but some browsers drop it); the field is RFC 8058's one-click body.
      `<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>`,
  );

const donePage = (company: string | undefined) =>
  page("Unsubscribed", `<h1>You are unsubscribed</h1><p>You will no longer receive e-mail${company ? ` from ${escapeHtml(company)}` : ""}.</p>`);

/** `load`: the module's tokens and opt-out (unsubscribe.service.ts), built once by the module. */
export const unsubscribeRoutes = (deps: Pick<UnsubscribeNeeds, "limiter" | "config">, load: () => Promise<Unsubscribe>) => {
  const building = load();
  building.catch(() => {}); // a request awaits it again (and sees its error)
  const trusted = compileRanges(deps.config.server.trusted_proxies);
  const limit = async (request: Request, peer: string | undefined) => {
    const ip = clientIp({ peer, forwardedFor: request.headers.get("x-forwarded-for"), trusted }) ?? "unknown";
    const decision = await deps.limiter.take(`unsubscribe:${ip}`, RATE);
    if (!decision.allowed) throw new AppError("RATE_LIMITED", "Too many requests; retry later", [], { "retry-after": String(decision.retryAfterSeconds) });
  };
  const params = t.Object({ token: t.String() });
  const detail = { hide: true };
  return new Elysia()
    .get(
      `${UNSUBSCRIBE_PATH}/:token`,
      async ({ params, request, server }) => {
        await limit(request, server?.requestIP(request)?.address);
        const u = await load();
        const ref = u.tokens.verify(params.token);
        if (!ref || !(await u.exists(ref))) return htmlResponse(NOT_FOUND_PAGE, 404);
        return htmlResponse(confirmPage(await u.companyName(ref)), 200);
      },
      { params, detail },
    )
    .post(
      `${UNSUBSCRIBE_PATH}/:token`,
      async ({ params, request, server }) => {
        await limit(request, server?.requestIP(request)?.address);
        const u = await load();
        const ref = u.tokens.verify(params.token);
        if (!ref || !(await u.optOut(ref))) return htmlResponse(NOT_FOUND_PAGE, 404);
        return htmlResponse(donePage(await u.companyName(ref)), 200);
      },
      // The body (`List-Unsubscribe=One-Click`, or whatever a client sends) is never parsed: nothing in it matters.
      { params, detail, parse: "none" },
    );
};
