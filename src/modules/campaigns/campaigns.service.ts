/**
 * Campaigns (DESIGN §10): checking a campaign request, the estimate, creation and the state transitions
 * (pause, resume, cancel), views. No HTTP. The sending itself is the engine's (campaigns.engine.ts); both
 * share one store. Contacts, messages and templates are reached through their services only.
 *
 * Statuses: scheduled → running → completed; running ⇄ paused; scheduled | running | paused → canceled;
 * failed when the campaign cannot go on (template gone or unapproved, account removed).
 *
 * The asynchronous store contract (issue 35): writes are units of work (db.unit, or the route's idem.batch
 * through db.join), store calls awaited.
 */
import { eligibility, EXCLUSION_REASONS, windowCutoff, type ExclusionReason } from "../../channels/channel.eligibility";
import { CHANNEL_RULES } from "../../channels/channel.rules";
import type { AccountRuntime } from "../../channels/channel.accounts";
import type { Channel } from "../../channels/channel.types";
import type { CampaignsServiceNeeds } from "./campaigns.needs";
import type { EventNameOf } from "../../events";
import { AppError, DetailCollector, notFound } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { formatMicros } from "../../platform/money";
import {
  assertAudienceSize,
  audienceFactCounts,
  audiencePage,
  resolveAudience,
  type Audience,
  type AudienceMember,
  type ResolvedAudience,
} from "../contacts/contacts.audience";
import { accountsOf } from "../channels-api/channel-accounts";
import { priceOf } from "../billing/billing.prices";
import { mediaRef } from "../media/media.service";
import { dailyDmQuota } from "../messages/messages.quota";
import { hasMediaHeader } from "../templates/templates.render";
import { getTemplateById, type TemplateRow } from "../templates/templates.service";
import { filterContextOf, segmentFilterFor } from "../segments/segments.service";
import { checkAskValues } from "./campaigns.ask-values";
import { MAX_AUDIENCE_IDS, type EstimateInput } from "./campaigns.model";
import { campaignTemplateUse, createCampaignStore, type CampaignRow, type CampaignStore } from "./campaigns.repository";
import { EXCLUDED_COLUMN, excludedField, type ExcludedField } from "./campaigns.table";

export const RUN_JOB = "campaign.run";
/** Contacts per audience page (estimate and resolution). */
export const PAGE = 2000;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

/** A checked campaign request: everything the estimate and the engine need. */
export interface Plan {
  runtime: AccountRuntime;
  template: TemplateRow;
  audience: ResolvedAudience;
  askValues: Record<string, string>;
  headerMedia: { id: string; filename: string; mimeType: string; size: number } | null;
  price: { priceType: string; unitPrice: number };
  scheduledAt: Date | null;
  /** A segment audience's filter, read at creation: what the campaign stores beside the segment's id and resolves at start. */
  segmentFilter?: unknown;
}

/** The audience the contacts module resolves: a segment is its filter (read at creation, stored with the campaign). */
export function audienceToResolve(a: Record<string, unknown>): Audience {
  return a.type === "segment" ? { type: "filter", filter: a.filter } : (a as Audience);
}

export type Counts = { matched: number; sendable: number; excluded: Record<ExclusionReason, number> };

/** The running or scheduled campaigns that send a template (DESIGN §17: its deletion waits for them). */
export async function campaignsUsingTemplate({ db, templateId }: { db: CampaignsServiceNeeds["db"]; templateId: string }): Promise<string[]> {
  return campaignTemplateUse(db).runningOrScheduled(templateId);
}

/** The verdict on one audience member for a campaign (templates; campaign consent rules). */
export function memberVerdict(m: Pick<AudienceMember, "identityStatus" | "blocked" | "consent" | "lastInboundAt">, channel: Channel, now: number) {
  return eligibility({
    rule: CHANNEL_RULES[channel],
    identity: m.identityStatus ? { status: m.identityStatus } : null,
    blocked: m.blocked,
    consent: m.consent,
    lastInboundAt: m.lastInboundAt,
    messageType: "template",
    purpose: "campaign",
    now,
  });
}

export function createCampaigns(deps: CampaignsServiceNeeds) {
  const { db, now } = deps;
  const store = createCampaignStore(db);
  const currency = deps.config.billing.currency;
  const money = (micros: number) => ({ amount: formatMicros(micros), unit: currency });

  /** Every check of a campaign request (422 with pointers); reads only. */
  async function plan(companyId: string, input: EstimateInput, segmentFilter?: unknown): Promise<Plan> {
    assertAudienceSize(input.audience as Audience, MAX_AUDIENCE_IDS);
    const template = await getTemplateById({ db, id: input.templateId });
    if (!template || template.companyId !== companyId)
      throw new AppError("VALIDATION_FAILED", "No such template", [{ pointer: "/templateId", message: "unknown template (GET /templates)" }]);
    if (template.status !== "approved")
      throw new AppError("TEMPLATE_NOT_APPROVED", `Template "${template.name}" is ${template.status}, not approved`, [
        { pointer: "/templateId", message: `template is ${template.status}` },
      ]);
    const runtime = (await accountsOf(deps, companyId)).find((r) => r.account.id === template.channelAccountId);
    if (!runtime)
      throw new AppError("CHANNEL_ACCOUNT_MISSING", "The template's channel account is no longer configured", [
        { pointer: "/templateId", message: "its channel account is gone" },
      ]);
    if (input.channelAccountId && input.channelAccountId !== runtime.account.id)
      throw new AppError("VALIDATION_FAILED", "The template belongs to another channel account", [
        { pointer: "/channelAccountId", message: `the template is on account ${runtime.account.id}` },
      ]);

    const p = new DetailCollector();
    const askValues = input.askValues ?? {};
    checkAskValues(askValues, template.params, p);
    let headerMedia: Plan["headerMedia"] = null;
    if (hasMediaHeader(template) && !input.headerMediaId) p.add("/headerMediaId", "required: the template has a media header");
    if (input.headerMediaId && !hasMediaHeader(template)) p.add("/headerMediaId", "the template has no media header");
    let scheduledAt: Date | null = null;
    if (input.scheduledAt) {
      scheduledAt = new Date(input.scheduledAt);
      if (Number.isNaN(scheduledAt.getTime())) p.add("/scheduledAt", "not a date-time");
      // One rule with social posts: a past time is a mistake to report, not "start now" (omit scheduledAt for that).
      else if (scheduledAt.getTime() <= now().getTime()) p.add("/scheduledAt", "must be in the future (omit scheduledAt to start at once)");
    }
    p.throwIfAny("The campaign request is not valid");
    if (input.headerMediaId && hasMediaHeader(template)) headerMedia = await mediaRef(deps, companyId, input.headerMediaId, "/headerMediaId", runtime);
    const audience = await resolveAudience({
      db,
      companyId,
      audience: audienceToResolve({ ...input.audience, filter: segmentFilter ?? (input.audience as { filter?: unknown }).filter }),
      filterContext: await filterContextOf(deps, companyId),
    });
    const price = priceOf(deps, runtime.account.channel, "template", template, headerMedia !== null);
    return { runtime, template, audience, askValues, headerMedia, price, scheduledAt, segmentFilter };
  }

  /**
   * Counts the audience by verdict (the estimate, and the cost check of POST /campaigns). A tag audience is
   * counted by fact combination in SQL (worker threads, ~1 µs a contact), each combination judged once by the same
   * `eligibility` as every send; an id list (at most MAX_AUDIENCE_IDS) page by page.
   */
  async function count(companyId: string, pl: Plan): Promise<Counts> {
    const excluded = Object.fromEntries(EXCLUSION_REASONS.map((r) => [r, 0])) as Record<ExclusionReason, number>;
    let matched = 0;
    let sendable = 0;
    const tally = (v: ReturnType<typeof memberVerdict>, n: number) => {
      matched += n;
      if (v.ok) sendable += n;
      else excluded[v.reason] += n;
    };
    const t = now().getTime();
    const channel = pl.runtime.account.channel;
    const channelAccountId = pl.runtime.account.id;
    if (pl.audience.type === "tags" || pl.audience.type === "filter") {
      const since = windowCutoff(CHANNEL_RULES[channel], "template", t);
      const onFallback = (err: unknown) => deps.log.warn({ err }, "audience count worker unavailable; counting on the event loop");
      for (const g of await audienceFactCounts({ db, companyId, audience: pl.audience, channel, channelAccountId, since, onFallback })) {
        // A stand-in member with the group's facts: "before" the cut-off is any instant that closes the window.
        const lastInboundAt = g.lastInbound === "never" ? null : g.lastInbound === "since" ? t : Number.MIN_SAFE_INTEGER;
        tally(memberVerdict({ ...g, lastInboundAt }, channel, t), g.n);
      }
      return { matched, sendable, excluded };
    }
    // One read transaction: every page sees the same snapshot.
    await db.snapshot(async () => {
      for (let after = ""; ; ) {
        const { members, last } = await audiencePage({ db, companyId, audience: pl.audience, channel, channelAccountId, after, limit: PAGE });
        if (last === null) break;
        after = last;
        for (const m of members) tally(memberVerdict(m, channel, t), 1);
      }
    });
    return { matched, sendable, excluded };
  }

  /** A segment audience's filter now (422 at /audience/segmentId when there is no such segment). */
  async function segmentFilterOf(companyId: string, input: EstimateInput): Promise<unknown> {
    const a = input.audience;
    return a.type === "segment" ? segmentFilterFor(deps, { companyId, id: a.segmentId, pointer: "/audience/segmentId" }) : undefined;
  }

  async function estimate(companyId: string, input: EstimateInput) {
    const pl = await plan(companyId, input, await segmentFilterOf(companyId, input));
    const counts = await count(companyId, pl);
    const cost = counts.sendable * pl.price.unitPrice;
    const balance = await deps.ledger.balance(companyId);
    return {
      channel: pl.runtime.account.channel,
      ...counts,
      unitPrice: formatMicros(pl.price.unitPrice),
      estimatedCost: money(cost),
      balance: money(balance),
      sufficientBalance: cost <= balance,
      dailyDmLimit: (await dailyDmQuota(deps, pl.runtime))?.limit ?? null,
    };
  }

  /** POST /campaigns, first half: the checks and the audience count (reads; outside the write transaction). */
  async function prepare(companyId: string, input: EstimateInput): Promise<{ pl: Plan; counts: Counts; cost: number }> {
    const pl = await plan(companyId, input, await segmentFilterOf(companyId, input));
    const counts = await count(companyId, pl);
    return { pl, counts, cost: counts.sendable * pl.price.unitPrice };
  }

  /**
   * POST /campaigns, second half: the balance check on committed truth and the campaign row with its run job
   * (due at `scheduledAt`, or now). In the caller's unit of work (the route's idem.batch).
   */
  async function create(
    companyId: string,
    apiKeyId: string | null,
    input: EstimateInput & { name: string },
    { pl, counts, cost }: Awaited<ReturnType<typeof prepare>>,
  ): Promise<CampaignRow> {
    return db.join(async () => {
      const balance = await deps.ledger.balance(companyId);
      if (cost > balance)
        throw new AppError(
          "INSUFFICIENT_BALANCE",
          `The estimated cost ${formatMicros(cost)} ${currency} is above the balance ${formatMicros(balance)} ${currency}`,
        );
      const at = now();
      const row: CampaignRow = {
        id: newId(),
        companyId,
        name: input.name,
        status: pl.scheduledAt ? "scheduled" : "running",
        channel: pl.runtime.account.channel,
        channelAccountId: pl.runtime.account.id,
        templateId: pl.template.id,
        // Stored as it will be read: a tags audience says its `match` even when the request left it to the default.
        // A segment audience keeps the segment's filter as it is now (campaigns.model.ts says so).
        audience:
          input.audience.type === "tags"
            ? { ...input.audience, match: input.audience.match ?? "any" }
            : input.audience.type === "segment"
              ? { ...input.audience, filter: pl.segmentFilter }
              : (input.audience as Record<string, unknown>),
        askValues: pl.askValues,
        headerMediaId: pl.headerMedia?.id ?? null,
        priceType: pl.price.priceType,
        unitPrice: pl.price.unitPrice,
        estimatedCost: cost,
        spent: 0,
        pauseReason: null,
        failureReason: null,
        resolvedAt: null,
        resolveCursor: null,
        recentOutcomes: "",
        // The estimate's counts until the audience is resolved at start (then the recipients' own).
        matched: counts.matched,
        nPending: 0,
        nQueued: 0,
        nSent: 0,
        nDelivered: 0,
        nRead: 0,
        nFailed: 0,
        nCanceled: 0,
        nReplied: 0,
        ...(Object.fromEntries(EXCLUSION_REASONS.map((r) => [excludedField(r), counts.excluded[r]])) as Record<ExcludedField, number>),
        scheduledAt: pl.scheduledAt,
        startedAt: pl.scheduledAt ? null : at,
        completedAt: null,
        canceledAt: null,
        createdAt: at,
        updatedAt: at,
        apiKeyId,
      };
      await store.insertCampaign(row);
      await deps.queue.enqueueJob({ type: RUN_JOB, payload: { campaignId: row.id }, runAt: pl.scheduledAt ?? at, groupKey: row.id });
      if (!pl.scheduledAt) emit(row, "campaign.started");
      return row;
    });
  }

  async function mustGet(companyId: string, id: string): Promise<CampaignRow> {
    const c = await store.ofCompany(companyId, id);
    if (!c) throw notFound("campaign");
    return c;
  }

  function conflict(c: CampaignRow, action: string): AppError {
    return new AppError("CONFLICT", `A ${c.status} campaign cannot be ${action}`);
  }

  function emit(c: CampaignRow, type: EventNameOf<"campaign.">) {
    deps.events.emit({ companyId: c.companyId, type, data: { campaign: view(c) } });
  }

  /**
   * Moves a campaign to another status (inside the caller's unit) and emits its event. `from`: only while it
   * still has that status (a decision made beside other writers of its row); otherwise nothing changes, nothing
   * is emitted, and `c` comes back as it was.
   */
  async function transition(
    c: CampaignRow,
    changes: Partial<CampaignRow> & { status: string },
    event: EventNameOf<"campaign.">,
    from?: string,
  ): Promise<CampaignRow> {
    const updated = { ...c, ...changes, updatedAt: now() };
    if (!(await store.updateCampaign(c.id, { ...changes, updatedAt: updated.updatedAt }, from)) && from !== undefined) return c;
    emit(updated, event);
    return updated;
  }

  async function pause(companyId: string, id: string): Promise<CampaignRow> {
    return db.join(async () => {
      const c = await mustGet(companyId, id);
      if (c.status !== "running") throw conflict(c, "paused");
      return await transition(c, { status: "paused", pauseReason: "MANUAL" }, "campaign.paused");
    });
  }

  async function resume(companyId: string, id: string): Promise<CampaignRow> {
    return db.join(async () => {
      const c = await mustGet(companyId, id);
      if (c.status !== "paused") throw conflict(c, "resumed");
      const updated = await transition(c, { status: "running", pauseReason: null, recentOutcomes: "" }, "campaign.resumed");
      await deps.queue.enqueueJob({ type: RUN_JOB, payload: { campaignId: c.id }, groupKey: c.id });
      return updated;
    });
  }

  /** Pending recipients become canceled in the same transaction; messages already created still go out. */
  async function cancel(companyId: string, id: string): Promise<CampaignRow> {
    return db.join(async () => {
      const c = await mustGet(companyId, id);
      if (!["scheduled", "running", "paused"].includes(c.status)) throw conflict(c, "canceled");
      const at = now();
      const n = await store.cancelPending(c.id, at.getTime());
      await store.bump(c.id, { n_pending: -n, n_canceled: n }, at.getTime());
      const fresh = (await store.get(c.id))!;
      return await transition(fresh, { status: "canceled", canceledAt: at, pauseReason: null }, "campaign.canceled");
    });
  }

  function view(c: CampaignRow) {
    const excluded = Object.fromEntries(EXCLUSION_REASONS.map((r) => [r, c[excludedField(r)]])) as Record<ExclusionReason, number>;
    const nExcluded = Object.values(excluded).reduce((a, b) => a + b, 0);
    const done = c.matched - c.nPending;
    const finished = c.status === "completed" || (c.resolvedAt !== null && c.nPending === 0);
    return {
      id: c.id,
      name: c.name,
      status: c.status as "running",
      channel: c.channel as Channel,
      channelAccountId: c.channelAccountId,
      templateId: c.templateId,
      // (A segment audience's stored filter is the engine's; the campaign shows the segment it was made from.)
      audience: (c.audience.type === "segment" ? { type: "segment", segmentId: c.audience.segmentId } : c.audience) as never,
      askValues: c.askValues,
      headerMediaId: c.headerMediaId,
      scheduledAt: iso(c.scheduledAt),
      startedAt: iso(c.startedAt),
      completedAt: iso(c.completedAt),
      canceledAt: iso(c.canceledAt),
      createdAt: c.createdAt.toISOString(),
      updatedAt: c.updatedAt.toISOString(),
      stats: {
        matched: c.matched,
        sendable: c.matched - nExcluded,
        excluded,
        pending: c.resolvedAt ? c.nPending : c.matched - nExcluded - c.nSent - c.nDelivered - c.nRead - c.nFailed - c.nCanceled,
        sent: c.nSent,
        delivered: c.nDelivered,
        read: c.nRead,
        failed: c.nFailed,
        canceled: c.nCanceled,
        replied: c.nReplied,
      },
      // Cumulative, as a marketer reads a funnel: a recipient counts in every stage up to its furthest one.
      funnel: { sent: c.nSent + c.nDelivered + c.nRead, delivered: c.nDelivered + c.nRead, read: c.nRead, replied: c.nReplied },
      cost: { estimated: money(c.estimatedCost), spent: money(c.spent) },
      progress: finished ? 100 : c.resolvedAt && c.matched > 0 ? Math.min(99, Math.floor((done * 100) / c.matched)) : 0,
      pauseReason: (c.pauseReason as "MANUAL" | null) ?? null,
      failureReason: c.failureReason,
    };
  }

  return {
    store,
    plan,
    estimate,
    prepare,
    create,
    pause,
    resume,
    cancel,
    transition,
    emit,
    view,
    get: mustGet,
    list: store.list,
    async recipients(companyId: string, id: string, q: { status?: string; reason?: string; limit: number; after?: string }) {
      await mustGet(companyId, id);
      return store.listRecipients({ campaignId: id, ...q });
    },
    excludedColumn: (r: ExclusionReason) => EXCLUDED_COLUMN[r],
    /** Recipients by status of the campaigns not finished (metrics). */
    async activeProgress() {
      return await store.activeProgress();
    },
  };
}

export type Campaigns = ReturnType<typeof createCampaigns>;
export type { CampaignRow, CampaignStore };
