import { index, integer, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import type { TemplateComponent } from "../../channels/channel.types";

/**
 * Message templates: synced from the provider (WhatsApp) or our own (e-mail, Telegram, X, sandbox).
 * `params` lists the positional references the template takes (`body.1`, `button.0.1`).
 */
export const templates = sqliteTable(
  "templates",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    channelAccountId: text("channel_account_id").notNull(),
    channel: text("channel").notNull(),
    name: text("name").notNull(),
    language: text("language").notNull(),
    category: text("category").notNull(),
    /** approved | pending | rejected | paused | disabled */
    status: text("status").notNull(),
    components: text("components", { mode: "json" }).$type<TemplateComponent[]>().notNull(),
    params: text("params", { mode: "json" }).$type<string[]>().notNull(),
    /** provider | local */
    source: text("source").notNull(),
    providerTemplateId: text("provider_template_id"),
    /** Why the provider rejected it (Meta's `reason`, e.g. INVALID_FORMAT); null unless rejected. */
    rejectedReason: text("rejected_reason"),
    /** The provider's quality rating (Meta: GREEN | YELLOW | RED | UNKNOWN); null where there is none. */
    quality: text("quality"),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    updatedAt: integer("updated_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [uniqueIndex("templates_account_name_lang_uq").on(t.channelAccountId, t.name, t.language), index("templates_company_idx").on(t.companyId, t.channel)],
);
