/**
 * The sandbox provider: the embedded default for every channel, so a new user can try every flow with no
 * provider credentials (DESIGN §5).
 *
 * Outbound: every send is accepted, then reported delivered and read after the configured delays.
 * Documented test recipients (identity value, `@` ignored; WhatsApp recipients are phone numbers, so the
 * fictional numbers below stand in for the words):
 *   blocked…  or +12025550101 → fails with USER_BLOCKED
 *   fail…     or +12025550102 → fails with PROVIDER_REJECTED
 *   slow…     or +12025550103 → stays `sent` for a minute, then delivered and read
 * Inbound: `POST /hooks/{channelAccountId}` with `{"from": {"phone"|"email"|"handle", "name"?}, "text",
 * "timestamp"?}` simulates the contact writing in; `"interactive": {"replyId", "replyTitle"?, "inReplyTo"?}`
 * instead of `text` simulates a tap on a button or list row of our message `inReplyTo` (DESIGN §16). A sandbox has no provider signature, so the route
 * authenticates it with an API key of the account's company (capabilities.webhookAuth = "api-key").
 * The delivered/read reports are returned with the send (SendResult.reports) and stored with its `sent`
 * (a job), like a real provider that keeps calling back: a restart or a crash does not lose them.
 */
import { Value } from "@sinclair/typebox/value";
import type { AdapterContext, ChannelAdapter, InboundEvent, OutboundMessage, ProviderDefinition, SendResult } from "../channel.types";
import { SandboxSettings } from "./sandbox.settings";

const SLOW_MS = 60_000;

/** Reserved test phone numbers (E.164, fictional 555-01xx): what `blocked…`, `fail…`, `slow…` are for handles. */
export const SANDBOX_TEST_NUMBERS = { blocked: "+12025550101", fail: "+12025550102", slow: "+12025550103" } as const;

function behaviour(to: string): "blocked" | "fail" | "slow" | null {
  const who = to.replace(/^@/, "").toLowerCase();
  for (const kind of ["blocked", "fail", "slow"] as const) if (who.startsWith(kind) || to === SANDBOX_TEST_NUMBERS[kind]) return kind;
  return null;
}

export function createSandboxAdapter(ctx: AdapterContext): ChannelAdapter {
  const settings = Value.Default(SandboxSettings, { ...ctx.account.settings }) as typeof SandboxSettings.static;

  return {
    capabilities: {
      webhookAuth: "api-key",
      deliveryReceipts: true,
      readReceipts: true,
      media: { "image/jpeg": 5 << 20, "image/png": 5 << 20, "video/mp4": 16 << 20, "application/pdf": 100 << 20, "text/plain": 10 << 20 },
    },

    async send(message: OutboundMessage): Promise<SendResult> {
      if (settings.sent_after_ms) await Bun.sleep(settings.sent_after_ms);
      const kind = behaviour(message.to.value);
      if (kind === "blocked")
        return { ok: false, retry: false, reason: "USER_BLOCKED", providerCode: "sandbox_blocked", message: "The recipient blocked this account (sandbox)" };
      if (kind === "fail")
        return {
          ok: false,
          retry: false,
          reason: "PROVIDER_REJECTED",
          providerCode: "sandbox_rejected",
          message: "The provider rejected the message (sandbox)",
        };
      const providerMessageId = `sandbox.${message.messageId}`;
      const deliveredAt = new Date(ctx.now().getTime() + (kind === "slow" ? SLOW_MS : settings.delivered_after_ms));
      const readAt = new Date(deliveredAt.getTime() + settings.read_after_ms);
      return {
        ok: true,
        providerMessageId,
        reports: [
          { at: deliveredAt, events: [{ kind: "status", providerMessageId, status: "delivered", timestamp: deliveredAt }] },
          { at: readAt, events: [{ kind: "status", providerMessageId, status: "read", timestamp: readAt }] },
        ],
      };
    },

    async handleWebhook(request) {
      if (request.method !== "POST") return { response: { status: 405, body: "POST a simulated inbound message" }, events: [] };
      let body: {
        from?: { phone?: string; email?: string; handle?: string; name?: string; username?: string };
        text?: string;
        interactive?: { replyId?: unknown; replyTitle?: unknown; inReplyTo?: unknown };
        timestamp?: string;
        id?: string;
        referral?: Record<string, unknown>;
      };
      try {
        body = JSON.parse(new TextDecoder().decode(request.rawBody));
      } catch {
        return {
          response: {
            status: 422,
            body: JSON.stringify({ error: { code: "VALIDATION_FAILED", message: "body is not JSON", details: [{ pointer: "/", message: "malformed JSON" }] } }),
          },
          events: [],
        };
      }
      const problems: { pointer: string; message: string }[] = [];
      const value = body.from?.phone ?? body.from?.email ?? body.from?.handle;
      if (!value) problems.push({ pointer: "/from", message: "one of from.phone, from.email, from.handle is required" });
      const tap = body.interactive;
      if (tap !== undefined) {
        if (typeof tap !== "object" || tap === null) problems.push({ pointer: "/interactive", message: "an object {replyId, replyTitle?, inReplyTo?}" });
        else {
          if (typeof tap.replyId !== "string" || !tap.replyId) problems.push({ pointer: "/interactive/replyId", message: "replyId is required" });
          if (tap.replyTitle !== undefined && typeof tap.replyTitle !== "string") problems.push({ pointer: "/interactive/replyTitle", message: "a string" });
          if (tap.inReplyTo !== undefined && typeof tap.inReplyTo !== "string")
            problems.push({ pointer: "/interactive/inReplyTo", message: "our message id, a string" });
        }
        if (body.text !== undefined) problems.push({ pointer: "/text", message: "give text or interactive, not both" });
      } else if (typeof body.text !== "string" || !body.text) problems.push({ pointer: "/text", message: "text is required" });
      const timestamp = body.timestamp ? new Date(body.timestamp) : ctx.now();
      if (Number.isNaN(timestamp.getTime())) problems.push({ pointer: "/timestamp", message: "not an ISO 8601 date-time" });
      if (problems.length)
        return {
          response: {
            status: 422,
            body: JSON.stringify({ error: { code: "VALIDATION_FAILED", message: "The simulated message is invalid", details: problems } }),
            headers: { "content-type": "application/json" },
          },
          events: [],
        };
      const handle = body.from?.handle;
      const event: InboundEvent = {
        kind: "message",
        providerMessageId: body.id ?? `sandbox.in.${crypto.randomUUID()}`,
        from: {
          value: value!,
          displayName: body.from?.name,
          // A simulated numeric/opaque id with a username lets pending @username identities resolve.
          username: body.from?.username ?? (handle?.startsWith("@") ? handle.slice(1) : undefined),
        },
        timestamp,
        content: tap
          ? { type: "interactive", interactive: { replyId: tap.replyId as string, replyTitle: (tap.replyTitle as string | undefined) ?? null } }
          : { type: "text", text: body.text! },
        // The simulated tap names our message id; the engine finds it by the provider id this adapter gave it.
        inReplyTo: tap?.inReplyTo ? `sandbox.${tap.inReplyTo}` : undefined,
        referral: body.referral,
      };
      return {
        response: {
          status: 202,
          body: JSON.stringify({ data: { accepted: true, providerMessageId: event.providerMessageId } }),
          headers: { "content-type": "application/json" },
        },
        events: [event],
      };
    },
  };
}

export const sandboxProvider: ProviderDefinition = {
  name: "sandbox",
  channels: ["whatsapp", "instagram", "messenger", "x", "tiktok", "telegram", "email"],
  settings: SandboxSettings,
  create: createSandboxAdapter,
};
