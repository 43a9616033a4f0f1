import { Elysia, t } from "elysia";
import type { MeNeeds } from "./me.needs";
import { data, errors } from "../../platform/http/envelope";
import { money } from "../../platform/money";
import { getCompany } from "../companies/companies.service";
import { AppError } from "../../platform/errors";
import { LICENSED_MODULES } from "../../platform/license/license";
import { named } from "../../platform/http/schemas";

const MeModel = named(
  "Me",
  t.Object({
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
    licensedModules: t.Array(
      t.Object({
        module: t.String({ description: "pipeline | sources" }),
        licensed: t.Boolean({ description: "whether this company may call the module now" }),
        code: t.Union([t.String(), t.Null()], {
          description: "the 403 code its routes answer when not licensed: LICENSE_NOT_FOUND, LICENSE_EXPIRED, FEATURE_NOT_LICENSED",
        }),
        expiresAt: t.Union([t.String({ format: "date-time" }), t.Null()], { description: "the license's expiry (when one is installed for this company)" }),
      }),
      { description: "every licensed module with its state under the installed license file" },
    ),
  }),
);

/** Each licensed module's state for this company: the same check its routes make. */
function licensedModules(license: MeNeeds["license"], companySlug: string) {
  const read = license.read();
  const expiresAt = read.ok && read.payload.company === companySlug ? new Date(read.payload.expiresAt).toISOString() : null;
  return LICENSED_MODULES.map((module) => {
    try {
      license.check(companySlug, module);
      return { module, licensed: true, code: null, expiresAt };
    } catch (e) {
      if (!(e instanceof AppError)) throw e;
      return { module, licensed: false, code: e.code as string, expiresAt };
    }
  });
}

export const meRoutes = (deps: MeNeeds) =>
  new Elysia({ tags: ["Meta"] }).use(deps.guard).get(
    "/me",
    async ({ auth }) => {
      const company = await getCompany({ db: deps.db, id: auth.companyId });
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
          company: {
            id: company.id,
            slug: company.slug,
            name: company.name,
            balance: money(await deps.ledger.balance(company.id), deps.config.billing.currency),
          },
          licensedModules: licensedModules(deps.license, auth.companySlug),
        },
      };
    },
    {
      scope: "any",
      response: { 200: data(MeModel), ...errors() },
      detail: { summary: "The calling key and its company, with the balance", operationId: "getMe" },
    },
  );
