/** The billing module of one app: `GET /billing/ledger`. The ledger itself is built by deps.ts (the API guard and the sends use it). */
import type { BillingNeeds } from "./billing.needs";
import { billingRoutes } from "./billing.routes";

export function createBillingModule(needs: BillingNeeds) {
  return { routes: billingRoutes(needs) };
}
