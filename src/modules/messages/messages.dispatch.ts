/**
 * The dispatch policy: the job that hands a queued message to its adapter once — what the send is built from,
 * the account's send rate, retries with backoff on transient failures, failure (and refund) on permanent ones,
 * and on success the `sent` status and the provider's later reports (messages.reports.ts). Transport is the
 * adapter's; registration is messages.wire.ts's.
 */
import { CHANNEL_RULES } from "../../channels/channel.rules";
import type { Channel, FailureReason, OutboundContent, OutboundMessage, SendResult, StoredMedia } from "../../channels/channel.types";
import type { MessagesNeeds, MessagesWireNeeds } from "./messages.needs";
import type { Job, JobOutcome } from "../../platform/queue/queue";
import { defaultBackoffMs } from "../../platform/queue/queue.backoff";
import { channelState } from "../conversations/conversations.service";
import { findStoredMedia, rememberProviderMediaId } from "../media/media.service";
import { renderTemplate } from "../templates/templates.render";
import { getTemplateById } from "../templates/templates.service";
import type { UnsubscribeLinks } from "../unsubscribe/unsubscribe.service";
import { BULK_DISPATCH_JOB } from "./messages.jobs";
import { applyStatus } from "./messages.lifecycle";
import { scheduleReports } from "./messages.reports";
import { messagesStore, type DispatchRow } from "./messages.repository";

/** What the send is built from (template, media, thread): reads outside any unit, before the provider call. */
async function buildOutbound(deps: MessagesNeeds, m: DispatchRow, unsubscribe: UnsubscribeLinks): Promise<OutboundMessage> {
  const c = m.content as Record<string, any>;
  // E-mail from a template or a campaign carries the recipient's one-click unsubscribe link (DESIGN §20).
  const unsubscribeUrl =
    m.channel === "email" && (m.type === "template" || m.campaignId)
      ? unsubscribe.url({ companyId: m.companyId, contactId: m.contactId, channel: "email", campaignId: m.campaignId ?? undefined })
      : undefined;
  const stored = async (ref: { id: string } | undefined): Promise<StoredMedia | undefined> => {
    if (!ref) return undefined;
    const s = await findStoredMedia({ db: deps.db, companyId: m.companyId, mediaId: ref.id, channelAccountId: m.channelAccountId });
    if (!s) throw new PermanentFailure("MEDIA_INVALID", "the media was deleted before sending");
    return s;
  };
  let content: OutboundContent;
  switch (m.type) {
    case "text":
      content = { type: "text", text: c.text };
      break;
    case "media":
      content = { type: "media", media: { url: c.media.url, file: await stored(c.media.file), caption: c.media.caption } };
      break;
    case "email":
      content = { type: "email", email: c.email };
      break;
    case "interactive":
      content = { type: "interactive", interactive: c.interactive };
      break;
    default: {
      const t = await getTemplateById({ db: deps.db, id: c.template.id });
      if (t?.status !== "approved") throw new PermanentFailure("TEMPLATE_INVALID", `template ${c.template.name} is ${t?.status ?? "deleted"}`);
      const hm = c.template.headerMedia;
      content = {
        type: "template",
        template: {
          name: t.name,
          language: t.language,
          components: t.components,
          params: c.template.params,
          headerMedia: hm ? { url: hm.url, file: await stored(hm.file) } : undefined,
          rendered: renderTemplate(t, c.template.params, { unsubscribeUrl }),
        },
      };
    }
  }
  const state = CHANNEL_RULES[m.channel as Channel].conversationRef
    ? await channelState({ db: deps.db, contactId: m.contactId, channelAccountId: m.channelAccountId })
    : undefined;
  const byId = async (id: string | null) => (id ? await messagesStore(deps.db).messageById(id) : undefined);
  const replyTo = await byId(m.replyToMessageId);
  // The thread's provider ids, oldest first (e-mail References: the parent's ancestors, then the parent).
  const references: string[] = [];
  for (let p = replyTo, hops = 0; p && hops < 50; p = await byId(p.replyToMessageId), hops++) if (p.providerMessageId) references.unshift(p.providerMessageId);
  return {
    messageId: m.id,
    to: { value: m.address, conversationRef: state?.conversationRef ?? undefined },
    content,
    replyTo: replyTo?.providerMessageId ? { providerMessageId: replyTo.providerMessageId, references } : undefined,
    unsubscribeUrl,
  };
}

class PermanentFailure extends Error {
  constructor(
    readonly reason: FailureReason,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The dispatch job: hands a queued message to its adapter once. Idempotent by message id: a message that
 * is no longer queued (already sent by an earlier attempt, or failed) is not sent again. Transient
 * provider failures are retried with backoff (at least the provider's Retry-After); permanent ones, and
 * transient ones that outlive max attempts, fail the message (refunded when it never reached `sent`).
 */
export async function dispatchMessage(deps: MessagesWireNeeds, job: Job<{ messageId: string }>): Promise<JobOutcome> {
  // Outside the snapshot: the first call claims the signing secret (a write).
  const unsubscribe = await deps.unsubscribeLinks();
  // The message and what its send is built from (template, media, thread): plain reads, no transaction (the
  // status is checked again when the outcome is written: applyStatus).
  const m = await messagesStore(deps.db).dispatchRow(job.payload.messageId);
  if (m?.status !== "queued") return;
  let outbound: OutboundMessage | PermanentFailure;
  try {
    outbound = await buildOutbound(deps, m, unsubscribe);
  } catch (e) {
    if (!(e instanceof PermanentFailure)) throw e;
    outbound = e;
  }
  const runtime = deps.channels.get(m.channelAccountId);
  // Final states are written with the job's own finalisation: one group-committed transaction.
  const counted = (outcome: "sent" | "retry" | "failed") => deps.metrics.count("switchboard_dispatch_total", { channel: m.channel, outcome });
  const fail = (reason: FailureReason | string, message: string, code?: string): JobOutcome => (
    counted("failed"),
    {
      writes: async () => {
        await applyStatus(deps, { message: m, status: "failed", at: deps.now(), error: { reason, code, message } });
      },
    }
  );
  if (!runtime) return fail("PROVIDER_UNAVAILABLE", "the channel account is no longer configured");
  if (outbound instanceof PermanentFailure) return fail(outbound.reason, outbound.message);

  // The account's send rate, one schedule for every sender. Campaign messages may book at most 0.5 s ahead,
  // one-to-one sends 5 s, so a draining campaign delays a one-to-one send by half a second at most.
  const rate = runtime.account.maxPerSecond;
  if (rate) {
    const wait = await deps.throttle.reserveSlot(runtime.account.id, rate, job.type === BULK_DISPATCH_JOB ? 500 : 5000);
    if (wait < 0) return { retryAt: new Date(deps.now().getTime() + 250), countAttempt: false };
    if (wait > 0) await Bun.sleep(wait);
  }

  let result: SendResult;
  try {
    const started = performance.now();
    try {
      result = await runtime.adapter.send(outbound);
    } finally {
      deps.metrics.observe("switchboard_dispatch_duration_seconds", { channel: m.channel }, (performance.now() - started) / 1000);
    }
  } catch (e) {
    if (e instanceof PermanentFailure) return fail(e.reason, e.message);
    deps.log.error({ err: e, messageId: m.id }, "adapter send threw");
    result = { ok: false, retry: true, reason: "PROVIDER_UNAVAILABLE", message: (e as Error).message };
  }
  if (result.ok) {
    counted("sent");
    const sent = result;
    if (runtime.status !== "active") deps.channels.setStatus(runtime.account.id, "active");
    return {
      writes: async () => {
        if (sent.providerMediaId) {
          const file = ((m.content as any).media?.file ?? (m.content as any).template?.headerMedia?.file) as { id: string } | undefined;
          if (file)
            await rememberProviderMediaId({
              db: deps.db,
              now: deps.now,
              mediaId: file.id,
              channelAccountId: m.channelAccountId,
              providerMediaId: sent.providerMediaId,
            });
        }
        await applyStatus(deps, { message: m, status: "sent", at: deps.now(), providerMessageId: sent.providerMessageId });
        if (sent.reports?.length) await scheduleReports(deps, m.channelAccountId, sent.reports);
      },
    };
  }
  if (result.accountStatus) deps.channels.setStatus(runtime.account.id, result.accountStatus);
  if (result.retry && job.attempts < job.maxAttempts) {
    const delay = Math.max(result.retryAfterMs ?? 0, defaultBackoffMs(job.attempts));
    deps.log.warn({ messageId: m.id, reason: result.reason, attempt: job.attempts, retryInMs: delay }, "send failed; will retry");
    counted("retry");
    return { retryAt: new Date(deps.now().getTime() + delay), error: `${result.reason}: ${result.message}` };
  }
  return fail(result.reason, result.message, result.providerCode);
}
