/**
 * The media store: every read and write of the media, media_usage and media_provider_ids tables. Callers
 * hold the transaction; nothing here opens one.
 */
import { and, desc, eq, lt } from "drizzle-orm";
import { storeDb, type Db } from "../../db/client";
import { media, mediaProviderIds } from "./media.table";
import { perConnection } from "../../db/per-connection";

export type MediaRow = typeof media.$inferSelect;

export function createMediaStore(dbIn: Db) {
  const db = storeDb(dbIn);
  const used = db.sql("SELECT bytes FROM media_usage WHERE company_id = ?");
  // The guard is the quota: the row changes only when the bytes still fit (a refused upload changes nothing).
  const reserve = db.sql("UPDATE media_usage SET bytes = bytes + ?1 WHERE company_id = ?2 AND bytes + ?1 <= ?3");
  const open = db.sql("INSERT INTO media_usage (company_id, bytes) VALUES (?, 0) ON CONFLICT (company_id) DO NOTHING");
  const release = db.sql("UPDATE media_usage SET bytes = bytes - ? WHERE company_id = ?");
  // RETURNING: the size given back is the deleted row's, read in the statement that deletes it — of two units
  // deleting one row side by side, only the one that deleted it gets a size.
  const remove = db.sql("DELETE FROM media WHERE id = ? AND company_id = ? RETURNING size");
  // PostgreSQL: a send or a post that will use the file holds its row until its unit ends (FOR KEY SHARE), so a
  // DELETE (which locks the row first) waits for it and then sees the message or post that uses it — or, taken
  // first, makes the use wait and find the file gone. Uses do not wait for each other. (SQLite: one writer.)
  const hold = db.sql(
    `SELECT id, path, mime_type AS "mimeType", filename, size FROM media WHERE id = ? AND company_id = ?${db.engine === "postgres" ? " FOR KEY SHARE" : ""}`,
  );
  return {
    async ofCompany(companyId: string, id: string): Promise<MediaRow | undefined> {
      return await db
        .select()
        .from(media)
        .where(and(eq(media.id, id), eq(media.companyId, companyId)))
        .get();
    },
    /** What a send or a post needs of a file it will use, held against a delete until the caller's unit ends. */
    async holdForUse(companyId: string, id: string): Promise<Pick<MediaRow, "id" | "path" | "mimeType" | "filename" | "size"> | undefined> {
      return ((await hold.get(id, companyId)) as Pick<MediaRow, "id" | "path" | "mimeType" | "filename" | "size"> | null) ?? undefined;
    },
    async exists(id: string): Promise<boolean> {
      return !!(await db.select({ id: media.id }).from(media).where(eq(media.id, id)).get());
    },
    /** Newest first (ids are UUID v7); `before` = id of the last row of the previous page. */
    async list({ companyId, limit, before }: { companyId: string; limit: number; before?: string }): Promise<MediaRow[]> {
      return await db
        .select()
        .from(media)
        .where(before ? and(eq(media.companyId, companyId), lt(media.id, before)) : eq(media.companyId, companyId))
        .orderBy(desc(media.id))
        .limit(limit)
        .all();
    },
    /** Bytes of media a company holds (its counter; 0 before its first upload). */
    async usedBytes(companyId: string): Promise<number> {
      return ((await used.get(companyId)) as { bytes: number } | null)?.bytes ?? 0;
    },
    /**
     * Adds `bytes` to the company's counter unless that takes it over `quotaBytes`: false (nothing changed)
     * when it would. A company's first upload opens its row.
     */
    async reserveBytes(companyId: string, bytes: number, quotaBytes: number): Promise<boolean> {
      if ((await reserve.run(bytes, companyId, quotaBytes)).changes > 0) return true;
      // Refused, or no row yet: open it (a concurrent opener's row is waited for, then kept) and ask again.
      await open.run(companyId);
      return (await reserve.run(bytes, companyId, quotaBytes)).changes > 0;
    },
    /** Takes `bytes` off the company's counter (a deleted file's). */
    async releaseBytes(companyId: string, bytes: number): Promise<void> {
      await release.run(bytes, companyId);
    },
    async insertMedia(row: MediaRow): Promise<void> {
      await db.insert(media).values(row).run();
    },
    /** The deleted row's size, or null when there was no such row (its cached provider ids cascade). */
    async deleteMedia(companyId: string, id: string): Promise<number | null> {
      return ((await remove.get(id, companyId)) as { size: number } | null)?.size ?? null;
    },

    // ---------------------------------------------------------------- provider ids
    async providerMediaId(mediaId: string, channelAccountId: string): Promise<string | undefined> {
      const row = await db
        .select({ providerMediaId: mediaProviderIds.providerMediaId })
        .from(mediaProviderIds)
        .where(and(eq(mediaProviderIds.mediaId, mediaId), eq(mediaProviderIds.channelAccountId, channelAccountId)))
        .get();
      return row?.providerMediaId;
    },
    /** Replaces an older id of the same (media, account). */
    async putProviderMediaId({
      mediaId,
      channelAccountId,
      providerMediaId,
      now,
    }: {
      mediaId: string;
      channelAccountId: string;
      providerMediaId: string;
      now: () => Date;
    }): Promise<void> {
      await db
        .insert(mediaProviderIds)
        .values({ mediaId, channelAccountId, providerMediaId, createdAt: now() })
        .onConflictDoUpdate({
          target: [mediaProviderIds.mediaId, mediaProviderIds.channelAccountId],
          set: { providerMediaId, createdAt: now() },
        })
        .run();
    },
    async deleteProviderMediaId(mediaId: string, channelAccountId: string): Promise<void> {
      await db
        .delete(mediaProviderIds)
        .where(and(eq(mediaProviderIds.mediaId, mediaId), eq(mediaProviderIds.channelAccountId, channelAccountId)))
        .run();
    },
  };
}

export type MediaStore = ReturnType<typeof createMediaStore>;

/** The store of a connection, built once. */
export const mediaStore = perConnection(createMediaStore);
