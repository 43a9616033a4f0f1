/**
 * `/hooks/{channelAccountId}`: providers' inbound webhooks, in the provider's own format. The adapter
 * verifies the provider's handshake and signature over the exact raw bytes (so the body is not parsed
 * here) and answers what the provider expects; verified events go through the one inbound path.
 * The sandbox has no signature: its simulation needs an API key of the account's company (messages:send).
 *
 * NB! Anyone on the network can post here, unauthenticated until the adapter checked the signature, which
 * needs the whole body: bodies over MAX_HOOK_BODY are refused (413) by Content-Length before a byte is read
 * and while streaming (capped-body.ts) — no provider sends webhooks anywhere near that size.
 */
import { Elysia, t } from "elysia";
import type { InboundNeeds } from "./inbound.needs";
import { AppError } from "../../platform/errors";
import { checkDeclaredLength, readCappedBody } from "../../platform/http/capped-body";
import { hasScope } from "../../platform/http/scopes";
import { findCompanyBySlug } from "../companies/companies.service";
import { processInbound } from "../messages/messages.inbound";

/** DESIGN §23: the cap of a provider hook's body. */
export const MAX_HOOK_BODY = 5 * 1024 * 1024;
/**
 * What all hook bodies being read at once may hold together (by their declared length, or the cap for a
 * chunked body), so that many unsigned uploads at once cannot do what one may not: past it, 429 with
 * Retry-After (providers retry). Bodies of at most SMALL_HOOK_BODY — every real provider delivery — are
 * never refused by it.
 */
export const HOOK_BYTES_IN_FLIGHT = 32 * 1024 * 1024;
const SMALL_HOOK_BODY = 64 * 1024;
let hookBytesInFlight = 0;

export const hooksRoutes = (deps: InboundNeeds) =>
  new Elysia({ tags: ["Inbound webhooks"] }).all(
    "/hooks/:accountId",
    async ({ params, request, server, set }) => {
      const runtime = deps.channels.get(params.accountId);
      if (!runtime) throw new AppError("NOT_FOUND", "No such channel account");
      checkDeclaredLength(request, MAX_HOOK_BODY);
      const simulated = runtime.adapter.capabilities.webhookAuth === "api-key";
      if (simulated) {
        const principal = await deps.authenticate(request, () => server?.requestIP(request)?.address, set.headers);
        const company = await findCompanyBySlug({ db: deps.db, slug: runtime.account.company });
        if (!company || company.id !== principal.companyId) throw new AppError("NOT_FOUND", "No such channel account");
        if (!hasScope(principal.scopes, "messages:send")) throw new AppError("API_SCOPE_MISSING", "Simulating inbound messages needs the scope messages:send");
      }
      const declared = Number(request.headers.get("content-length") ?? Number.NaN);
      const reserved = declared <= SMALL_HOOK_BODY ? 0 : Number.isFinite(declared) ? declared : MAX_HOOK_BODY;
      if (reserved > 0 && hookBytesInFlight + reserved > HOOK_BYTES_IN_FLIGHT)
        throw new AppError("RATE_LIMITED", "Too many large webhook deliveries at once; retry later", [], { "retry-after": "1" });
      hookBytesInFlight += reserved;
      let rawBody: Uint8Array;
      try {
        rawBody = await readCappedBody(request, MAX_HOOK_BODY);
      } finally {
        hookBytesInFlight -= reserved;
      }
      const result = await runtime.adapter.handleWebhook({ method: request.method, url: new URL(request.url), headers: request.headers, rawBody });
      // NB! Acknowledge only after the events are committed: a provider retries what we did not ack.
      if (result.events.length) await processInbound(deps, runtime.account, result.events, { strict: simulated });
      return new Response(result.response.body ?? "", {
        status: result.response.status,
        headers: { ...(set.headers as Record<string, string>), ...result.response.headers },
      });
    },
    { parse: "none", params: t.Object({ accountId: t.String() }), detail: { hide: true } },
  );
