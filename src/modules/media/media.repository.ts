/**
 * The media store: every read and write of the media and media_provider_ids tables. Callers hold the
 * transaction; nothing here opens one.
 */
import { and, desc, eq, lt, sql } from "drizzle-orm";
import { storeDb, type Db } from "../../db/client";
import { media, mediaProviderIds } from "./media.table";
import { perConnection } from "../../db/per-connection";

export type MediaRow = typeof media.$inferSelect;

export function createMediaStore(dbIn: Db) {
  const db = storeDb(dbIn);
  return {
    async ofCompany(companyId: string, id: string): Promise<MediaRow | undefined> {
      return await db
        .select()
        .from(media)
        .where(and(eq(media.id, id), eq(media.companyId, companyId)))
        .get();
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
    /** Bytes of media a company holds. */
    async companyBytes(companyId: string): Promise<number> {
      const row = await db
        .select({ total: sql<number>`coalesce(sum(${media.size}), 0)` })
        .from(media)
        .where(eq(media.companyId, companyId))
        .get();
      return Number(row?.total ?? 0);
    },
    async insertMedia(row: MediaRow): Promise<void> {
      await db.insert(media).values(row).run();
    },
    /** True when a row was deleted. */
    async deleteMedia(companyId: string, id: string): Promise<boolean> {
      const res = await db
        .delete(media)
        .where(and(eq(media.id, id), eq(media.companyId, companyId)))
        .run();
      return res.changes > 0;
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
