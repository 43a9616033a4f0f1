/**
 * Background wiring of messaging: the dispatch job, the inbound hand-over from every adapter, the
 * sandbox `hello_world` templates, and provider template sync (on start and every 30 minutes).
 */
import type { MessagesNeeds, MessagesWireNeeds } from "./messages.needs";
import { findCompanyBySlug } from "../companies/companies.service";
import { ensureHelloWorld, storeSyncedTemplates } from "../templates/templates.service";
import type { InboundEvent } from "../../channels/channel.types";
import { applyInboundEvents, processInbound } from "./messages.inbound";
import { messagesStore } from "./messages.repository";
import { wireScheduledSends } from "./messages.scheduled";
import { dispatchMessage } from "./messages.dispatch";
import { BULK_DISPATCH_JOB, DISPATCH_JOB, SCHEDULED_INBOUND_JOB } from "./messages.jobs";

export async function wireMessaging(deps: MessagesWireNeeds): Promise<void> {
  // Dispatch jobs are grouped by channel account: one account may use `[jobs] workers` sends at once, the
  // type twice that, so a provider that hangs holds at most half of the slots and the other accounts keep
  // sending (before: 16 hung Telegram sends held every worker and WhatsApp waited one provider timeout).
  const workers = deps.config.jobs.workers;
  // A queued message is its own dispatch job (its row carries it: no jobs row unless a retry needs one).
  for (const [type, lane] of [
    [DISPATCH_JOB, "direct"],
    [BULK_DISPATCH_JOB, "bulk"],
  ] as const)
    deps.queue.register(type, {
      handle: (job) => dispatchMessage(deps, job),
      concurrency: workers * 2,
      groupConcurrency: workers,
      anchor: messagesStore(deps.db).dispatchAnchor(lane),
    });
  deps.channels.onInbound((account, events) => processInbound(deps, account, events));
  wireScheduledInbound(deps);
  wireScheduledSends(deps);
  // Awaited (wireModules is awaited before the app is built): the seeds are in before the first request, also
  // on an engine whose statements wait (Bun.SQL). A failure is logged, not fatal, as before.
  await seedSandboxTemplates(deps).catch((e) => deps.log.error({ err: e }, "sandbox templates not seeded"));
  deps.scheduler.every("templates-sync", "0 */30 * * * *", () => syncAllTemplates(deps));
}

/** Dates of events come back from the job's JSON payload as strings. */
const revive = (e: InboundEvent): InboundEvent => {
  const out = { ...e } as Record<string, unknown>;
  for (const k of ["timestamp", "watermark"]) if (typeof out[k] === "string") out[k] = new Date(out[k] as string);
  return out as unknown as InboundEvent;
};

/**
 * Reports to apply later: the sandbox's scheduled delivered/read, and a provider's status report that arrived
 * before the send it reports on had committed (messages.reports applyProviderStatus defers it here).
 * One inline job per schedule (the delivered and read of up to 25 sends committed together, scheduleReports):
 * each run applies every report that is due — in the transaction that takes the job, so a report is applied exactly when its run commits — and
 * comes back with the rest of its schedule at the next one. Re-applying a report is harmless (statuses only
 * move forward), so a run cut short by a crash is simply run again.
 */
function wireScheduledInbound(deps: MessagesNeeds): void {
  deps.queue.register(SCHEDULED_INBOUND_JOB, {
    inline: async (job) => {
      const { accountId, schedule } = job.payload;
      const runtime = deps.channels.get(accountId);
      if (!runtime) return; // the account left the config: nobody to report for
      const now = deps.now().getTime();
      const due = schedule.filter((s) => s.at <= now).flatMap((s) => s.events.map((e) => ({ at: s.at, event: revive(e) })));
      const unknown: InboundEvent[] = [];
      await applyInboundEvents(
        deps,
        runtime.account,
        due.map((d) => d.event),
        unknown,
      );
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
  });
}

/** The sandbox accounts' hello_world (start-up: wireMessaging; `switchboard companies create`). */
export async function seedSandboxTemplates(deps: MessagesNeeds): Promise<void> {
  for (const r of deps.channels.all()) {
    if (r.account.provider !== "sandbox") continue;
    const company = await findCompanyBySlug({ db: deps.db, slug: r.account.company });
    if (company) await ensureHelloWorld({ db: deps.db, now: deps.now, companyId: company.id, account: r.account });
  }
}

/** Syncs provider templates of every account that has them; returns counts per account. Never throws. */
export async function syncAllTemplates(deps: MessagesNeeds): Promise<{ accountId: string; synced?: number; error?: string }[]> {
  const out: { accountId: string; synced?: number; error?: string }[] = [];
  for (const r of deps.channels.all()) {
    if (!r.adapter.syncTemplates) continue;
    const company = await findCompanyBySlug({ db: deps.db, slug: r.account.company });
    if (!company) continue;
    try {
      const list = await r.adapter.syncTemplates();
      out.push({
        accountId: r.account.id,
        synced: await storeSyncedTemplates({ db: deps.db, events: deps.events, now: deps.now, companyId: company.id, account: r.account, list }),
      });
    } catch (e) {
      const status = (e as { failure?: { accountStatus?: "auth_failed" | "error" } }).failure?.accountStatus;
      if (status) deps.channels.setStatus(r.account.id, status);
      deps.log.warn({ err: e, accountId: r.account.id }, "template sync failed");
      out.push({ accountId: r.account.id, error: (e as Error).message });
    }
  }
  return out;
}
