import { Elysia, t } from "elysia";
import type { Deps } from "../../deps";
import { data, errors } from "../../platform/http/envelope";
import { money } from "../../platform/money";
import { getCompany } from "../companies/companies.service";

const MeModel = t.Object({
  key: t.Object({
    id: t.String(),
    name: t.String(),
    prefix: t.String(),
    scopes: t.Array(t.String()),
    allowedIps: t.Array(t.String()),
    expiresAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
  }),
  company: t.Object({
    id: t.String(),
    slug: t.String(),
    name: t.String(),
    balance: t.Object({ amount: t.String(), unit: t.String() }),
  }),
});

export const meRoutes = (deps: Deps) =>
  new Elysia({ tags: ["Meta"] })
    .use(deps.guard).get(
    "/me",
    ({ auth }) => {
      const company = getCompany({ db: deps.db, id: auth.companyId });
      return {
        data: {
          key: {
            id: auth.keyId,
            name: auth.name,
            prefix: auth.prefix,
            scopes: auth.scopes,
            allowedIps: auth.allowedIps,
            expiresAt: auth.expiresAt?.toISOString() ?? null,
          },
          company: { id: company.id, slug: company.slug, name: company.name, balance: money(deps.ledger.balance(company.id), deps.config.billing.currency) },
        },
      };
    },
    { scope: "any", response: { 200: data(MeModel), ...errors() }, detail: { summary: "The calling key and its company, with the balance", operationId: "getMe" } },
  );
