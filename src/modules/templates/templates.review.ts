/**
 * The review cycle of a template (DESIGN §17): a provider's verdict (webhook, sync) or the sandbox's review job
 * applied to its row, and `template.status_changed` emitted when status, rejection reason or quality changed.
 */
import type { InboundEvent } from "../../channels/channel.types";
import type { Db } from "../../db/client";
import type { EventBus } from "../../events";
import type { ReviewNeeds } from "./templates.needs";
import { forgetTemplates } from "./templates.cache";
import { templateView } from "./templates.model";
import { templatesStore, type ReviewValues, type TemplateRow } from "./templates.repository";

export const TEMPLATE_STATUS_CHANGED = "template.status_changed";
/** The sandbox's stand-in for Meta's review: a durable job, due 2 s after the submission. */
export const SANDBOX_REVIEW_JOB = "templates.sandbox_review";
export const SANDBOX_REVIEW_MS = 2000;

export const reviewChanged = (before: TemplateRow, after: Pick<TemplateRow, "status" | "rejectedReason" | "quality">) =>
  before.status !== after.status || (before.rejectedReason ?? null) !== (after.rejectedReason ?? null) || (before.quality ?? null) !== (after.quality ?? null);

/** NB! Inside the transaction that wrote `after` (the event is an outbox row). */
export function emitChange(events: EventBus, before: TemplateRow, after: TemplateRow): void {
  events.emit({
    companyId: after.companyId,
    type: TEMPLATE_STATUS_CHANGED,
    data: { template: templateView(after), previousStatus: before.status, previousQuality: before.quality ?? null },
  });
}

/**
 * Applies one review to a row: status (its rejection reason kept only while rejected), quality; writes and
 * emits `template.status_changed` when something changed. Inside the caller's unit of work (the inbound
 * delivery's, or the sandbox review job's).
 */
async function applyReview(
  { db, events, now }: { db: Db; events: EventBus; now: () => Date },
  row: TemplateRow,
  review: { status?: TemplateRow["status"]; rejectedReason?: string | null; quality?: string | null },
): Promise<TemplateRow> {
  const status = review.status ?? row.status;
  const values: ReviewValues = {
    status,
    rejectedReason: status === "rejected" ? (review.rejectedReason ?? (review.status ? null : row.rejectedReason)) : null,
    quality: review.quality !== undefined ? review.quality : row.quality,
    updatedAt: now(),
  };
  if (!reviewChanged(row, values)) return row;
  await templatesStore(db).recordReview(row.id, values);
  forgetTemplates(db);
  const after = { ...row, ...values };
  emitChange(events, row, after);
  return after;
}

/**
 * A provider's template webhook (WhatsApp `message_template_status_update` / `…_quality_update`), inside the
 * inbound delivery's transaction. A template we do not hold (made in Meta's console) is left to the next sync.
 */
export async function applyTemplateReview(deps: ReviewNeeds, account: { id: string }, event: Extract<InboundEvent, { kind: "template" }>): Promise<void> {
  const row = await templatesStore(deps.db).reviewed(account.id, event);
  if (!row) {
    deps.log.info({ accountId: account.id, name: event.name, language: event.language }, "review of a template we do not hold; the next sync brings it");
    return;
  }
  await applyReview(deps, row, {
    status: event.status,
    rejectedReason: event.rejectedReason,
    ...(event.quality !== undefined ? { quality: event.quality } : {}),
  });
}

/** The sandbox's verdict: `reject_*` is rejected (INVALID_FORMAT), anything else approved. */
export async function sandboxReview(deps: { db: Db; events: EventBus; now: () => Date }, templateId: string): Promise<void> {
  const row = await templatesStore(deps.db).byId(templateId);
  if (row?.status !== "pending") return; // deleted meanwhile, or reviewed already: nothing to do
  await applyReview(
    deps,
    row,
    row.name.startsWith("reject_") ? { status: "rejected", rejectedReason: "INVALID_FORMAT" } : { status: "approved", quality: "UNKNOWN" },
  );
}
