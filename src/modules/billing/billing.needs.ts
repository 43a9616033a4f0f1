/** What the billing module needs from the app: the ledger (built by deps.ts) and the `[billing]` config. */
import type { Config } from "../../config/config.schema";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";
import type { Ledger } from "./ledger.service";

/** Prices read only the `[billing]` config. */
export type PricesNeeds = { config: Pick<Config, "billing"> };

export type BillingNeeds = PricesNeeds & {
  guard: ReturnType<typeof apiGuardPlugin>;
  ledger: Pick<Ledger, "list">;
};
