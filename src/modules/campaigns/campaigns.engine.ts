/**
 * The campaign engine (Listmonk's manager, minus its users' worst bugs):
 *
 * - Recipient rows are the checkpoint. The audience is resolved into them when the campaign starts (a
 *   snapshot, written page by page with a resume cursor), then a recipient is claimed and its message
 *   created in ONE transaction: sent at most once across pause, resume, cancel, kill -9 and restart.
 * - One run job per campaign (group key = campaign id, one at a time) drives it in short transactions that
 *   share the API's group commit, yielding between them; it hands itself back to the queue every few seconds
 *   (a lease never outlives it) and after a crash the queue reclaims it and it continues from the rows.
 * - "completed" means no recipient is pending: never because a batch came back empty while messages were
 *   still queued. An all-excluded batch just moves on.
 * - Backpressure: at most `window` of a campaign's messages are queued at once, so a million-recipient
 *   campaign neither books its whole cost upfront nor buries one-to-one dispatch (campaign messages also have
 *   their own dispatch job type). The account's send rate is the dispatch throttle's, shared with POST /messages.
 * - Balance: a debit refused mid-way pauses the campaign (INSUFFICIENT_BALANCE); resume continues where it
 *   stopped. More than half of the last 100 sends failing pauses it (ERROR_RATE). X's daily DM limit holds
 *   the rest until the next UTC day.
 * - Recipient statuses follow their messages through the message.* events (same transaction as the status
 *   change); `replied` counts contacts who wrote in on the account after their campaign message went out.
 */
import type { Job, JobOutcome } from "../../platform/queue/queue";
import { AppError } from "../../platform/errors";
import type { DomainEvent, EventMap } from "../../events";
import { parseMicros } from "../../platform/money";
import type { CampaignsServiceNeeds } from "./campaigns.needs";
import { audienceMembers, audiencePage, resolveAudience } from "../contacts/contacts.audience";
import { filterContextOf } from "../segments/segments.service";
import { mediaRef } from "../media/media.service";
import { dailyDmQuota } from "../messages/messages.quota";
import { createOutboundMessage } from "../messages/messages.service";
import { getTemplateById } from "../templates/templates.service";
import { renderAskValues } from "./campaigns.ask-values";
import { OUTCOMES, type CampaignProgress, type CampaignRow } from "./campaigns.repository";
import { audienceToResolve, memberVerdict, PAGE, type Campaigns } from "./campaigns.service";

/**
 * Recipients claimed per transaction (the most), and audience members written per resolve step: steps are
 * sized to the group commit's background slice (db.backgroundSlice: 1 ms while requests are writing, 8 ms
 * when none is) at ~40 µs a recipient and ~4 µs a resolved member, so one-to-one requests never wait long
 * behind one.
 */
export const BATCH = 200;
const RECIPIENTS_PER_MS = 25;
const RESOLVED_PER_MS = 250; // (at most a PAGE)
const sized = (most: number, perMs: number, sliceMs: number) => Math.max(1, Math.min(most, Math.round(perMs * sliceMs)));
/** Queued messages per campaign at once when the account has no rate limit. */
export const UNLIMITED_WINDOW = 4000;
/** A run job hands itself back to the queue after this long (well inside the job lease). */
const RUN_SLICE_MS = 10_000;
/** ERROR_RATE: more than half of the last OUTCOMES sends failed (judged from MIN_OUTCOMES on). */
const MIN_OUTCOMES = 20;

const STEP: Record<string, number> = { pending: 0, sent: 1, delivered: 2, read: 3 };
/** The message events that move a recipient (its counters are COUNTER's). */
export const STATUS_STEP_EVENTS = ["message.sent", "message.delivered", "message.read", "message.failed"] as const;
type StatusStepEvent = (typeof STATUS_STEP_EVENTS)[number];
const COUNTER: Record<string, string> = { pending: "n_pending", sent: "n_sent", delivered: "n_delivered", read: "n_read", failed: "n_failed" };

export function createCampaignEngine({ deps, campaigns }: { deps: CampaignsServiceNeeds; campaigns: Campaigns }) {
  const { db, now } = deps;
  const store = campaigns.store;
  const at = () => now().getTime();
  const turn = () => new Promise<void>((r) => setImmediate(r));
  /**
   * Runs fn as a background item of a group commit (db.batch) and goes on at its COMMIT rather than after
   * its sync: nobody is answered from it, its messages are handed to the dispatch after the sync anyway,
   * and every later commit (the next batch, the run job's outcome) is synced after it.
   */
  const step = <T>(fn: () => T | Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      let out: T;
      db.unit(
        async () => {
          out = await fn();
        },
        { background: true, onCommit: () => resolve(out) },
      ).catch(reject);
    });

  async function fail(c: CampaignRow, reason: string): Promise<void> {
    await db.unit(async () => {
      const n = await store.cancelPending(c.id, at());
      await store.bump(c.id, { n_pending: -n, n_canceled: n }, at());
      await campaigns.transition((await store.get(c.id))!, { status: "failed", failureReason: reason, pauseReason: null }, "campaign.failed");
    });
  }

  /**
   * Completes a running campaign with no recipient pending (`c` read after the last counter change). It also
   * runs just before a status change's unit commits (completeAtCommit).
   */
  async function complete(c: CampaignProgress | undefined): Promise<void> {
    if (c && c.status === "running" && c.resolvedAt && c.nPending === 0)
      await campaigns.transition((await store.get(c.id))!, { status: "completed", completedAt: now() }, "campaign.completed");
  }

  /** Writes the next page of the audience as recipient rows (each with its verdict at start). */
  async function resolvePage(c: CampaignRow): Promise<void> {
    const first = c.resolveCursor === null;
    const audience = await resolveAudience({
      db,
      companyId: c.companyId,
      audience: audienceToResolve(c.audience),
      ignoreUnknown: true,
      // Relative times of a filter count back from the start: every page sees the same cut-offs.
      filterContext: await filterContextOf(deps, c.companyId, (c.startedAt ?? now()).getTime()),
    });
    const { members, last } = await audiencePage({
      db,
      companyId: c.companyId,
      audience,
      channel: c.channel,
      channelAccountId: c.channelAccountId,
      after: c.resolveCursor ?? "",
      limit: sized(PAGE, RESOLVED_PER_MS, db.backgroundSlice()),
    });
    const deltas: Record<string, number> = {};
    const add = (k: string, n = 1) => (deltas[k] = (deltas[k] ?? 0) + n);
    if (first) {
      // The estimate's counts are replaced by the snapshot's own.
      await store.updateCampaign(c.id, { matched: 0, nPending: 0, xNoIdentity: 0, xNoConsent: 0, xBlocked: 0, xOutsideWindow: 0, xNoPriorConversation: 0 });
    }
    if (last === null) {
      await store.updateCampaign(c.id, { resolvedAt: now(), resolveCursor: c.resolveCursor ?? "", updatedAt: now() });
      await complete(await store.get(c.id)); // an audience of nobody (or of excluded contacts only) is done at once
      return;
    }
    const t = at();
    for (const m of members) {
      const v = memberVerdict(m, c.channel as never, t);
      const inserted = await store.addRecipients(c.id, [{ contactId: m.contactId, status: v.ok ? "pending" : "excluded", reason: v.ok ? null : v.reason }], t);
      if (!inserted) continue;
      add("matched");
      add(v.ok ? "n_pending" : campaigns.excludedColumn(v.reason));
    }
    await store.bump(c.id, deltas, t);
    await store.updateCampaign(c.id, { resolveCursor: last });
  }

  /**
   * Claims up to `limit` pending recipients and creates their messages (one transaction). Re-checks each
   * recipient's eligibility now: facts change between the start and the send. Returns how many were claimed.
   */
  async function sendBatch(id: string, limit: number): Promise<number> {
    const c = await store.get(id);
    if (c?.status !== "running") return 0;
    const contactIds = await store.todo(c.id, limit);
    if (!contactIds.length) return 0;
    const template = (await getTemplateById({ db, id: c.templateId }))!;
    const runtime = deps.channels.get(c.channelAccountId)!;
    const header = c.headerMediaId ? { file: await mediaRef(deps, c.companyId, c.headerMediaId, "/headerMediaId", runtime) } : undefined;
    const members = new Map(
      (await audienceMembers({ db, companyId: c.companyId, contactIds, channel: c.channel, channelAccountId: c.channelAccountId })).map((m) => [
        m.contactId,
        m,
      ]),
    );
    const t = at();
    const deltas: Record<string, number> = {};
    const add = (k: string, n = 1) => (deltas[k] = (deltas[k] ?? 0) + n);
    for (const contactId of contactIds) {
      const m = members.get(contactId);
      const v = m ? memberVerdict(m, c.channel as never, t) : ({ ok: false, reason: "noIdentity" } as const); // deleted since the start
      if (!v.ok) {
        await store.setStatus(c.id, contactId, "excluded", v.reason, t);
        add("n_pending", -1);
        add(campaigns.excludedColumn(v.reason));
        continue;
      }
      const { params, missing } = renderAskValues(c.askValues, m!);
      if (missing) {
        await store.setStatus(c.id, contactId, "failed", "PARAM_MISSING", t);
        add("n_pending", -1);
        add("n_failed");
        continue;
      }
      let messageId: string;
      try {
        // Undone alone (a nested unit: a savepoint): a refused debit is caught here and the batch goes on.
        messageId = await db.unit(
          async () =>
            (
              await createOutboundMessage(deps, {
                companyId: c.companyId,
                contactId,
                address: m!.identityValue!,
                channel: c.channel as never,
                channelAccountId: c.channelAccountId,
                type: "template",
                content: { template: { id: template.id, name: template.name, language: template.language, params, headerMedia: header } },
                price: { priceType: c.priceType, unitPrice: c.unitPrice },
                metadata: {},
                templateId: template.id,
                apiKeyId: c.apiKeyId,
                campaignId: c.id,
              })
            ).id,
        );
      } catch (e) {
        if (!(e instanceof AppError && e.code === "INSUFFICIENT_BALANCE")) throw e;
        await store.bump(c.id, deltas, t);
        await campaigns.transition((await store.get(c.id))!, { status: "paused", pauseReason: "INSUFFICIENT_BALANCE" }, "campaign.paused");
        return 0;
      }
      if (!(await store.claim(c.id, contactId, messageId, t))) throw new Error(`campaign ${c.id}: recipient ${contactId} was claimed twice`);
      add("n_queued");
      add("spent", c.unitPrice);
    }
    await store.bump(c.id, deltas, t);
    return contactIds.length;
  }

  /** Why a running campaign cannot go on, if it cannot. */
  async function brokenBy(c: CampaignRow): Promise<string | null> {
    if (!deps.channels.get(c.channelAccountId)) return "CHANNEL_ACCOUNT_MISSING";
    const template = await getTemplateById({ db, id: c.templateId });
    if (template?.status !== "approved") return "TEMPLATE_UNAVAILABLE";
    return null;
  }

  /** The run job: start a due scheduled campaign, resolve its audience, fan its recipients out. */
  async function run(job: Job<{ campaignId: string }>): Promise<JobOutcome> {
    const id = job.payload.campaignId;
    const until = Date.now() + RUN_SLICE_MS;
    for (;;) {
      let c = await store.get(id);
      if (!c) return;
      if (c.status === "scheduled") {
        const scheduled = c;
        c = await db.unit(() => campaigns.transition(scheduled, { status: "running", startedAt: now() }, "campaign.started"));
      }
      if (c.status !== "running") return;
      const broken = await brokenBy(c);
      if (broken) {
        await fail(c, broken);
        return;
      }

      if (!c.resolvedAt) {
        // NB! Read again inside the step's unit: a pause or cancel (a foreground item, first in the group) may
        // have committed since `c` was read, and a page resolved after a cancel would leave pending recipients
        // nobody sends (the run stops at the next read).
        await step(async () => {
          const current = await store.get(id);
          if (current?.status === "running" && !current.resolvedAt) await resolvePage(current);
        });
      } else {
        const runtime = deps.channels.get(c.channelAccountId)!;
        let limit = sized(BATCH, RECIPIENTS_PER_MS, db.backgroundSlice());
        const quota = await dailyDmQuota(deps, runtime);
        if (quota) {
          if (quota.used >= quota.limit) return { retryAt: quota.resetsAt, countAttempt: false };
          limit = Math.min(limit, quota.limit - quota.used);
        }
        const rate = runtime.account.maxPerSecond;
        const window = rate ? Math.max(Math.ceil(rate * 2), 20) : UNLIMITED_WINDOW;
        const room = window - c.nQueued;
        if (room <= 0) {
          if (Date.now() > until) return { retryAt: new Date(at() + 200), countAttempt: false };
          await Bun.sleep(rate ? Math.min(200, Math.ceil(1000 / rate)) : 5);
          continue;
        }
        const claimed = await step(() => sendBatch(id, Math.min(limit, room)));
        if (claimed === 0) {
          await step(async () => complete(await store.get(id)));
          return;
        }
      }
      if (Date.now() > until) return { retryAt: now(), countAttempt: false };
      await turn();
    }
  }

  /** Whether the campaign's window of recent outcomes (its last failure in it) makes its error rate say pause. */
  function errorRateSaysPause(c: CampaignProgress): boolean {
    const window = c.recentOutcomes.slice(-OUTCOMES);
    if (window.length < MIN_OUTCOMES) return false;
    let failed = 0;
    for (const ch of window) if (ch === "f") failed++;
    return failed * 2 > window.length;
  }

  /**
   * Whether a campaign a send's outcome was recorded for is complete is decided once per transaction, just before
   * it commits (each outcome read the campaign's row: ~10 % of the main thread in a fan-out): one function per
   * campaign, which a transaction runs once however often it was registered there (db.beforeCommit). Each
   * transaction runs its own: on PostgreSQL units commit side by side, and one must not take another's campaign
   * to look at before that one's writes are in.
   */
  const completers = new Map<string, () => Promise<void>>();
  const completeAtCommit = (id: string) => {
    let completer = completers.get(id);
    if (!completer) {
      if (completers.size >= 1000) completers.clear();
      completers.set(id, (completer = async () => complete(await store.progress(id))));
    }
    db.beforeCommit(completer);
  };

  /*
   * message.* subscribers (inside the status change's unit, which does not commit before it has settled:
   * db.track): recipient status, counters, replies.
   */
  type Message = EventMap["message.received"]["message"];

  /** A contact wrote in: the campaigns whose message they had on that account count a reply. */
  function onReceived(event: DomainEvent<"message.received">): Promise<void> {
    return markReplied(event.data.message); // (an inbound message's payload is built eagerly)
  }

  /**
   * NB! Not an async function: it decides from the event alone whether there is campaign work, and only then
   * answers a promise (tracked by the emitting unit). A one-to-one message's status step gets no promise to
   * track, also inside a synchronous transaction.
   */
  function onStatusStep(event: DomainEvent<StatusStepEvent>): void | Promise<void> {
    // A status step: whose message it is, and the status it left, come from the event's refs (its payload is
    // built only if read: a failure's refund and error below). The recipient mirrors its message's status
    // (queued = pending), so it moves only from that status and only if it is this message's recipient.
    const refs = event.refs;
    const campaignId = refs?.campaignId;
    if (!campaignId || !refs.from) return;
    const step = event.type.slice("message.".length);
    const from = refs.from === "queued" ? "pending" : refs.from;
    if (!(from in STEP)) return;
    return recordStep(campaignId, refs, step, from, async () => (await event.payload()).message);
  }

  async function markReplied(msg: Message): Promise<void> {
    for (const campaignId of await store.markReplied(msg.contactId, msg.channelAccountId, at())) await store.bump(campaignId, { n_replied: 1 }, at());
  }

  /** A recipient's message moved `from` → `step`: the recipient, the counters, and a pause or completion it decides. */
  async function recordStep(
    campaignId: string,
    refs: Record<string, string | null>,
    step: string,
    from: string,
    payload: () => Promise<Message>,
  ): Promise<void> {
    const t = at();
    const failure = step === "failed" ? await payload() : undefined;
    // The recipient's reason is the message's normalized one (USER_BLOCKED), not the provider's code
    // (sandbox_blocked, 403): the same words as message.failed and GET /messages/{id} `error.reason`.
    if (
      !(await store.advance({
        campaignId,
        contactId: refs.contactId!,
        messageId: refs.messageId!,
        from,
        to: step,
        reason: failure ? (failure.error?.reason ?? "PROVIDER_REJECTED") : null,
        at: t,
      }))
    )
      return;
    const deltas: Record<string, number> = { [COUNTER[from]!]: -1, [COUNTER[step]!]: 1 };
    if (from === "pending") deltas.n_queued = -1;
    if (failure?.refunded) deltas.spent = -(parseMicros(failure.unitPrice) ?? 0);
    // Delivered and read after sent only move counters (two of a message's three reports): no campaign read.
    if (step !== "failed" && from !== "pending") return await store.bump(campaignId, deltas, t);
    // A send's outcome: the counters and the window of recent outcomes in one write. A success neither
    // pauses the campaign nor reads it; whether it completed is looked at once per transaction.
    if (step !== "failed") {
      await store.bump(campaignId, deltas, t, "s");
      return completeAtCommit(campaignId);
    }
    // Counted first, then read: the window then holds this failure and every one written before it in this
    // transaction too (units side by side in one transaction on PostgreSQL: db.unit's `shared`), and the pause
    // is made only from `running` (two failures that both see the rate over cannot both pause it).
    await store.bump(campaignId, deltas, t, "f");
    const after = (await store.progress(campaignId))!;
    if (after.status === "running" && errorRateSaysPause(after))
      await campaigns.transition((await store.get(campaignId))!, { status: "paused", pauseReason: "ERROR_RATE" }, "campaign.paused", "running");
    else if (from === "pending") completeAtCommit(campaignId);
  }

  return { run, onReceived, onStatusStep, sendBatch, resolvePage };
}

export type CampaignEngine = ReturnType<typeof createCampaignEngine>;
