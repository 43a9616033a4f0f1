/** What the me module needs from the app: its routes read the company, its balance and the license. */
import type { Config } from "../../config/config.schema";
import type { Db } from "../../db/client";
import type { apiGuardPlugin } from "../../platform/http/api-guard.plugin";
import type { LicenseChecker } from "../../platform/license/license";
import type { Ledger } from "../billing/ledger.service";

export type MeNeeds = {
  db: Db;
  guard: ReturnType<typeof apiGuardPlugin>;
  ledger: Pick<Ledger, "balance">;
  license: LicenseChecker;
  config: Pick<Config, "billing">;
};
