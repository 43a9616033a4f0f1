import { Elysia, t } from "elysia";
import type { BillingNeeds } from "./billing.needs";
import { decodeCursor, PageQuery, pageLimit, toPage } from "../../platform/http/pagination";
import { errors, list } from "../../platform/http/envelope";
import { formatMicros } from "../../platform/money";
import { named } from "../../platform/http/schemas";

const LedgerEntryModel = named(
  "LedgerEntry",
  t.Object({
    id: t.String(),
    kind: t.Union([t.Literal("credit"), t.Literal("debit"), t.Literal("refund")]),
    amount: t.String({ description: "signed decimal, 6 places" }),
    balanceAfter: t.String(),
    unit: t.String(),
    messageId: t.Union([t.String(), t.Null()]),
    description: t.String(),
    createdAt: t.String({ format: "date-time" }),
  }),
);

export const billingRoutes = (deps: BillingNeeds) =>
  new Elysia({ tags: ["Billing"] }).use(deps.guard).get(
    "/billing/ledger",
    async ({ auth, query }) => {
      const limit = pageLimit(query.limit);
      const before = decodeCursor(query.cursor)?.[0] as string | undefined;
      const rows = await deps.ledger.list({ companyId: auth.companyId, limit: limit + 1, before });
      return toPage(
        rows,
        limit,
        (r) => [r.id],
        (r) => ({
          id: r.id,
          kind: r.kind as "credit",
          amount: formatMicros(r.amount),
          balanceAfter: formatMicros(r.balanceAfter),
          unit: deps.config.billing.currency,
          messageId: r.messageId,
          description: r.description,
          createdAt: r.createdAt.toISOString(),
        }),
      );
    },
    {
      scope: "billing:read",
      query: t.Object(PageQuery),
      response: { 200: list(LedgerEntryModel), ...errors(403, 422) },
      detail: { summary: "Balance ledger (credits, debits per message, refunds), newest first", operationId: "listLedger" },
    },
  );
