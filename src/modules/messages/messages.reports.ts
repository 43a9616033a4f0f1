/**
 * Provider status reports, one straight path: applied at once (a webhook's or poll's report by provider message
 * id, a Messenger watermark: messages.inbound.ts hands them to applyReport), or stored to apply later (a send's
 * SendResult.reports, a report that overtook our commit of the send) as SCHEDULED_INBOUND_JOB jobs, which
 * wireReports runs here, through the same applyReport. Each report is one messages.lifecycle.ts applyStatus.
 */
import type { ChannelAccount, ReportEvent } from "../../channels/channel.types";
import type { ScheduledReports } from "../../jobs";
import type { MessagesNeeds } from "./messages.needs";
import { writeBehind } from "../../db/write-behind";
import { findCompanyBySlug } from "../companies/companies.service";
import { findOrCreateContactByIdentity } from "../contacts/contacts.service";
import { conversationsOfContactOn } from "../conversations/conversations.service";
import { SCHEDULED_INBOUND_JOB } from "./messages.jobs";
import { applyStatus } from "./messages.lifecycle";
import { messagesStore, type MessageHead } from "./messages.repository";

/**
 * Applies one report of `account`'s (of company `companyId`), inside the caller's unit: a status by provider
 * message id (applyProviderStatus), or a watermark on the sender's contact, if we know it (applyWatermark).
 * `unknown`: see applyProviderStatus.
 */
export async function applyReport(
  deps: MessagesNeeds,
  {
    companyId,
    account,
    event,
    unknown,
    heads,
  }: { companyId: string; account: ChannelAccount; event: ReportEvent; unknown?: ReportEvent[]; heads?: Map<string, MessageHead> },
): Promise<void> {
  if (event.kind === "status") return await applyProviderStatus(deps, account.id, event, unknown, heads);
  const contactId = await knownContactOf(deps, companyId, account, event.from.value);
  if (contactId) await applyWatermark(deps, { accountId: account.id, contactId, status: event.status, watermark: event.watermark });
}

/** The contact of a sender on `account`'s channel, if we know it (never created; held for the caller's unit). */
export async function knownContactOf(deps: MessagesNeeds, companyId: string, account: ChannelAccount, value: string): Promise<string | undefined> {
  const found = await findOrCreateContactByIdentity({
    db: deps.db,
    events: deps.events,
    now: deps.now,
    companyId,
    channel: account.channel,
    value,
    create: false,
  });
  return found?.contact.id;
}

/**
 * Applies a provider status report (by provider message id) — from webhooks, polling or sandbox timers.
 * A report on a message not stored (yet) is deferred to a job of its own, or, given `unknown`, left there
 * for the caller to retry (a scheduled report's job comes back itself).
 */
export async function applyProviderStatus(
  deps: MessagesNeeds,
  accountId: string,
  event: Extract<ReportEvent, { kind: "status" }>,
  unknown?: ReportEvent[],
  /** The heads of the messages reported on, read in this unit (a scheduled job's, all at once): kept current here. */
  heads?: Map<string, MessageHead>,
): Promise<void> {
  await deps.db.join(async () => {
    const m = heads ? heads.get(event.providerMessageId) : await messagesStore(deps.db).messageHeadByProviderId(accountId, event.providerMessageId);
    if (!m) {
      // Either not ours (sent from the provider's own console), or a report that overtook our own commit of
      // the send (fast providers answer the send and call back within milliseconds): try again shortly.
      if (unknown) unknown.push(event);
      else
        await deps.queue.enqueueJob({
          type: SCHEDULED_INBOUND_JOB,
          payload: { accountId, schedule: [{ at: deps.now().getTime(), events: [event] }] },
          runAt: new Date(deps.now().getTime() + 500),
        });
      return;
    }
    const error = event.error ? { reason: event.error.reason, code: event.error.providerCode, message: event.error.message } : undefined;
    // (Already inside a unit: applyStatus joins it, no savepoint per report.)
    const updated = await applyStatus(deps, { message: m, status: event.status, at: event.timestamp, error, fresh: true });
    heads?.set(event.providerMessageId, updated);
  });
}

/** Sends whose later reports share one job (a job's run is one unit of the queue's slice: ~35 µs a report). */
const REPORTS_PER_JOB = 25;
/** Reports due later within the same step are applied in one run (each a little late, never early). */
const REPORT_STEP_MS = 25;
const keptReports = new WeakMap<MessagesNeeds["db"], ReturnType<typeof writeBehind<ScheduledReports>>>();

/**
 * Stores reports a provider will make later (SendResult.reports) as inline jobs that apply each at its time
 * (wireReports). Call inside the transaction that records the send. Kept back until it commits: the
 * sends of one group commit share jobs, REPORTS_PER_JOB sends each, their reports due in steps of
 * REPORT_STEP_MS (a job per send cost its insert, reschedule and delete: ~15 % of the main thread while a
 * campaign fanned out on the sandbox).
 */
export async function scheduleReports(
  deps: Pick<MessagesNeeds, "queue" | "db" | "now">,
  accountId: string,
  reports: { at: Date; events: ReportEvent[] }[],
): Promise<void> {
  let kept = keptReports.get(deps.db);
  if (!kept) keptReports.set(deps.db, (kept = writeBehind<ScheduledReports>(deps.db, (account, schedules) => storeReports(deps, account, schedules))));
  const now = deps.now().getTime();
  const step = (at: number) => (at <= now ? at : Math.ceil(at / REPORT_STEP_MS) * REPORT_STEP_MS);
  await kept.add(
    accountId,
    reports.map((r) => ({ at: step(r.at.getTime()), events: r.events })),
  );
}

async function storeReports(deps: Pick<MessagesNeeds, "queue">, accountId: string, schedules: ScheduledReports[]): Promise<void> {
  for (let i = 0; i < schedules.length; i += REPORTS_PER_JOB) {
    const byTime = new Map<number, ReportEvent[]>();
    for (const schedule of schedules.slice(i, i + REPORTS_PER_JOB))
      for (const { at, events } of schedule) {
        const same = byTime.get(at);
        if (same) same.push(...events);
        else byTime.set(at, [...events]);
      }
    const schedule = [...byTime].sort((a, b) => a[0] - b[0]).map(([at, events]) => ({ at, events }));
    await deps.queue.enqueueJob({ type: SCHEDULED_INBOUND_JOB, payload: { accountId, schedule }, runAt: new Date(schedule[0]!.at) });
  }
}

/** Messenger-style watermark: every outbound message to the contact up to `watermark` is delivered/read. */
async function applyWatermark(
  deps: MessagesNeeds,
  { accountId, contactId, status, watermark }: { accountId: string; contactId: string; status: "delivered" | "read"; watermark: Date },
): Promise<void> {
  const conversationIds = await conversationsOfContactOn({ db: deps.db, contactId, channelAccountId: accountId });
  const rows = await messagesStore(deps.db).outboundSentUpTo({
    conversationIds,
    statuses: status === "read" ? ["sent", "delivered"] : ["sent"],
    sentBefore: watermark,
  });
  // One after the other: each status change is a step of the caller's unit.
  for (const m of rows) await applyStatus(deps, { message: m, status, at: watermark });
}

/** Dates of events come back from the job's JSON payload as strings. */
const revive = (e: ReportEvent): ReportEvent => {
  const out = { ...e } as Record<string, unknown>;
  for (const k of ["timestamp", "watermark"]) if (typeof out[k] === "string") out[k] = new Date(out[k] as string);
  return out as unknown as ReportEvent;
};

/**
 * Reports to apply later: the sandbox's scheduled delivered/read, and a provider's status report that arrived
 * before the send it reports on had committed (applyProviderStatus defers it here).
 * One inline job per schedule (the delivered and read of up to 25 sends committed together, scheduleReports):
 * each run applies every report that is due — in the transaction that takes the job, so a report is applied exactly when its run commits — and
 * comes back with the rest of its schedule at the next one. Re-applying a report is harmless (statuses only
 * move forward), so a run cut short by a crash is simply run again.
 */
export function wireReports(deps: MessagesNeeds): void {
  deps.queue.register(SCHEDULED_INBOUND_JOB, {
    inline: async (job) => {
      const { accountId, schedule } = job.payload;
      const runtime = deps.channels.get(accountId);
      if (!runtime) return; // the account left the config: nobody to report for
      const { account } = runtime;
      const now = deps.now().getTime();
      const due = schedule.filter((s) => s.at <= now).flatMap((s) => s.events.map((e) => ({ at: s.at, event: revive(e) })));
      const unknown: ReportEvent[] = [];
      const company = await findCompanyBySlug({ db: deps.db, slug: account.company });
      if (!company) deps.log.warn({ accountId: account.id, company: account.company }, "inbound for an account whose company does not exist; dropped");
      else {
        // The messages reported on, read in one statement (each report's lookup by provider id was one of a
        // report's two statements); each report's change is kept in the map for the next report on it.
        const ids = [...new Set(due.flatMap(({ event }) => (event.kind === "status" ? [event.providerMessageId] : [])))];
        const heads = new Map<string, MessageHead>();
        for (const { providerMessageId, ...head } of await messagesStore(deps.db).messageHeadsByProviderIds(account.id, ids))
          heads.set(providerMessageId, head);
        // One after the other, no savepoint each: the job's transaction is the unit.
        for (const { event } of due) await applyReport(deps, { companyId: company.id, account, event, unknown, heads });
      }
      const later = schedule.filter((s) => s.at > now);
      // A report can fall due before the send it reports on has committed (the dispatch job stores the
      // provider's message id when it finishes): not known yet → come back shortly with it, never drop it.
      if (unknown.length) {
        const waiting = due.filter((d) => unknown.includes(d.event));
        const waited = now - Math.min(...waiting.map((d) => d.at));
        if (waited <= 600_000) {
          const retryAt = new Date(now + Math.max(500, Math.min(60_000, waited / 2)));
          const rest = [...waiting.map((d) => ({ at: d.at, events: [d.event] })), ...later];
          return { retryAt, countAttempt: false, error: "reported message not stored yet", payload: { accountId, schedule: rest } };
        }
        // Not ours after all (sent from the provider's own console), or its send never committed.
        deps.log.info({ accountId, jobId: job.id }, "status report for an unknown message dropped after 10 minutes");
      }
      return later.length
        ? { retryAt: new Date(Math.min(...later.map((s) => s.at))), countAttempt: false, payload: { accountId, schedule: later } }
        : undefined;
    },
    // A report moves its message only from the status it read (applyStatus), and a campaign's counters by addition.
    shareable: true,
  });
}
