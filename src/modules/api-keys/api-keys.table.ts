import { index, integer, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { companies } from "../companies/companies.table";

/** API keys. Only the SHA-256 of the key is stored, plus a display prefix (`sb_live_AbC1…`). */
export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id")
      .notNull()
      .references(() => companies.id),
    name: text("name").notNull(),
    prefix: text("prefix").notNull(),
    hash: text("hash").notNull().unique(),
    /** JSON array of scopes; `["*"]` grants all. */
    scopes: text("scopes", { mode: "json" }).$type<string[]>().notNull(),
    /** JSON array of CIDRs; empty = any address. */
    allowedIps: text("allowed_ips", { mode: "json" }).$type<string[]>().notNull(),
    /** Requests per second for this key's bucket; null = the config default. */
    rateLimit: integer("rate_limit"),
    expiresAt: integer("expires_at", { mode: "timestamp_ms" }),
    revokedAt: integer("revoked_at", { mode: "timestamp_ms" }),
    lastUsedAt: integer("last_used_at", { mode: "timestamp_ms" }),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [index("api_keys_company_idx").on(t.companyId)],
);
