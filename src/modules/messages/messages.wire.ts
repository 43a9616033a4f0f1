/**
 * Background wiring of messaging: the dispatch job, the inbound hand-over from every adapter, the
 * sandbox `hello_world` templates, and provider template sync (on start and every 30 minutes).
 */
import type { MessagesNeeds, MessagesWireNeeds } from "./messages.needs";
import { findCompanyBySlug } from "../companies/companies.service";
import { ensureHelloWorld, storeSyncedTemplates } from "../templates/templates.service";
import { processInbound } from "./messages.inbound";
import { wireReports } from "./messages.reports";
import { messagesStore } from "./messages.repository";
import { wireScheduledSends } from "./messages.scheduled";
import { dispatchMessage } from "./messages.dispatch";
import { BULK_DISPATCH_JOB, DISPATCH_JOB } from "./messages.jobs";

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
      // An outcome writes its own message (a refund's balance is held back: db.atEnd); a campaign's also adds to
      // the campaign's counters and decides a pause from what they are after its own addition.
      shareable: true,
    });
  deps.channels.onInbound((account, events) => processInbound(deps, account, events));
  wireReports(deps);
  wireScheduledSends(deps);
  // Awaited (wireModules is awaited before the app is built): the seeds are in before the first request, also
  // on an engine whose statements wait (Bun.SQL). A failure is logged, not fatal, as before.
  await seedSandboxTemplates(deps).catch((e) => deps.log.error({ err: e }, "sandbox templates not seeded"));
  deps.scheduler.every("templates-sync", "0 */30 * * * *", () => syncAllTemplates(deps));
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
