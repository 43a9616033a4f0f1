import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";

/**
 * Files uploaded through POST /media. The bytes live on disk at `{data_dir}/media/{companyId}/{id}`;
 * `path` is that absolute path (adapters read it as StoredMedia.path).
 */
export const media = sqliteTable(
  "media",
  {
    id: text("id").primaryKey(),
    companyId: text("company_id").notNull(),
    filename: text("filename").notNull(),
    mimeType: text("mime_type").notNull(),
    size: integer("size").notNull(),
    sha256: text("sha256").notNull(),
    /** Absolute path of the bytes: `{data_dir}/media/{companyId}/{id}`. */
    path: text("path").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
    /** The API key that uploaded it. */
    apiKeyId: text("api_key_id"),
  },
  (t) => [index("media_company_idx").on(t.companyId, t.id)],
);

/**
 * Provider-side media ids from earlier uploads (WhatsApp /media), per channel account, so a file sent
 * twice through one account is uploaded once. Rows go with their media row.
 */
export const mediaProviderIds = sqliteTable(
  "media_provider_ids",
  {
    mediaId: text("media_id")
      .notNull()
      .references(() => media.id, { onDelete: "cascade" }),
    channelAccountId: text("channel_account_id").notNull(),
    providerMediaId: text("provider_media_id").notNull(),
    createdAt: integer("created_at", { mode: "timestamp_ms" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.mediaId, t.channelAccountId] })],
);

/**
 * Bytes of media each company holds: the row that holds the quota (DESIGN §15, guarded counters for limits).
 * An upload reserves its bytes with one guarded `UPDATE … SET bytes = bytes + ? WHERE … AND bytes + ? <= quota`
 * in the unit that inserts its media row, so uploads running side by side cannot both take the last room; a
 * delete gives them back in the unit that deletes the row. Opened by the company's first upload; the migration
 * that created it (`…_media_usage`) filled it from the media rows there were. No foreign key: media rows have
 * none either (and the fill must not fail on a row of a company that is gone).
 */
export const mediaUsage = sqliteTable("media_usage", {
  companyId: text("company_id").primaryKey(),
  bytes: integer("bytes").notNull(),
});
