/**
 * Every table of the appliance, for drizzle-kit and scripts/pg-schema.ts (the PostgreSQL mirror). One export line
 * per table file. Above the modules and the platform (it gathers their tables); src/db imports none of it.
 */
export * from "./modules/companies/companies.table";
export * from "./modules/api-keys/api-keys.table";
export * from "./modules/billing/ledger.table";
export * from "./platform/idempotency/idempotency.table";
export * from "./platform/queue/jobs.table";
export * from "./modules/contacts/contacts.table";
export * from "./modules/contacts/tags.table";
export * from "./modules/contacts/custom-fields.table";
export * from "./modules/contacts/contact-imports.table";
export * from "./channels/adapter-state.table";
export * from "./modules/messages/messages.table";
export * from "./modules/conversations/conversations.table";
export * from "./modules/templates/templates.table";
export * from "./modules/webhooks/webhooks.table";
export * from "./modules/media/media.table";
export * from "./modules/campaigns/campaigns.table";
export * from "./modules/pipeline/pipeline.table";
export * from "./modules/social/social.table";
export * from "./modules/sources/sources.table";
export * from "./modules/segments/segments.table";
