/** Every table of the appliance, for drizzle-kit and the typed client. One export line per table file. */
export * from "../modules/companies/companies.table";
export * from "../modules/api-keys/api-keys.table";
export * from "../modules/billing/ledger.table";
export * from "../platform/idempotency/idempotency.table";
export * from "../platform/queue/jobs.table";
export * from "../platform/events/events.table";
