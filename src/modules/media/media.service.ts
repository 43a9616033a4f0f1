/**
 * Media service: rows of uploaded files and the provider media id cache. The file bytes are handled by
 * media.storage.ts; routes in media.routes.ts.
 *
 * `resolveStoredMedia` / `cacheProviderMediaId` are the messaging engine's entry points: it resolves a
 * media id to the StoredMedia it puts into message content, and caches the provider id an adapter's
 * upload returned (SendResult.providerMediaId).
 */
import { and, desc, eq, lt, sql } from "drizzle-orm";
import type { StoredMedia } from "../../channels/channel.types";
import type { Db } from "../../db/client";
import { media, mediaProviderIds } from "./media.table";

export type MediaRow = typeof media.$inferSelect;

/** Our media row as StoredMedia, with the provider media id cached for `channelAccountId` (if any). */
export function resolveStoredMedia({
  db,
  companyId,
  mediaId,
  channelAccountId,
}: {
  db: Db;
  companyId: string;
  mediaId: string;
  channelAccountId?: string;
}): StoredMedia | undefined {
  const row = getMedia({ db, companyId, id: mediaId });
  if (!row) return undefined;
  const out: StoredMedia = { id: row.id, path: row.path, mimeType: row.mimeType, filename: row.filename, size: row.size };
  if (channelAccountId) {
    const cached = db
      .select({ providerMediaId: mediaProviderIds.providerMediaId })
      .from(mediaProviderIds)
      .where(and(eq(mediaProviderIds.mediaId, mediaId), eq(mediaProviderIds.channelAccountId, channelAccountId)))
      .get();
    if (cached) out.providerMediaId = cached.providerMediaId;
  }
  return out;
}

/** Remembers the provider's id of an upload of `mediaId` through `channelAccountId` (replaces an older one). */
export function cacheProviderMediaId({
  db,
  now,
  mediaId,
  channelAccountId,
  providerMediaId,
}: {
  db: Db;
  now: () => Date;
  mediaId: string;
  channelAccountId: string;
  providerMediaId: string;
}): void {
  // The media may have been deleted while the send was in flight: nothing to cache then (and the FK
  // would refuse the row).
  db.tx(() => {
    const exists = db.select({ id: media.id }).from(media).where(eq(media.id, mediaId)).get();
    if (!exists) return;
    db.insert(mediaProviderIds)
      .values({ mediaId, channelAccountId, providerMediaId, createdAt: now() })
      .onConflictDoUpdate({
        target: [mediaProviderIds.mediaId, mediaProviderIds.channelAccountId],
        set: { providerMediaId, createdAt: now() },
      })
      .run();
  });
}

/** Forgets a cached provider id (the provider said it expired / is unknown). */
export function forgetProviderMediaId({ db, mediaId, channelAccountId }: { db: Db; mediaId: string; channelAccountId: string }): void {
  db.delete(mediaProviderIds)
    .where(and(eq(mediaProviderIds.mediaId, mediaId), eq(mediaProviderIds.channelAccountId, channelAccountId)))
    .run();
}

export function getMedia({ db, companyId, id }: { db: Db; companyId: string; id: string }): MediaRow | undefined {
  return db
    .select()
    .from(media)
    .where(and(eq(media.id, id), eq(media.companyId, companyId)))
    .get();
}

/** Newest first (ids are UUID v7); `before` = id of the last row of the previous page. */
export function listMedia({ db, companyId, limit, before }: { db: Db; companyId: string; limit: number; before?: string }): MediaRow[] {
  return db
    .select()
    .from(media)
    .where(before ? and(eq(media.companyId, companyId), lt(media.id, before)) : eq(media.companyId, companyId))
    .orderBy(desc(media.id))
    .limit(limit)
    .all();
}

/** Bytes of media a company holds, for the quota. */
export function companyMediaBytes({ db, companyId }: { db: Db; companyId: string }): number {
  const row = db
    .select({ total: sql<number>`coalesce(sum(${media.size}), 0)` })
    .from(media)
    .where(eq(media.companyId, companyId))
    .get();
  return Number(row?.total ?? 0);
}

export function insertMedia({ db, row }: { db: Db; row: MediaRow }): void {
  db.insert(media).values(row).run();
}

export function deleteMediaRow({ db, companyId, id }: { db: Db; companyId: string; id: string }): boolean {
  const res = db
    .delete(media)
    .where(and(eq(media.id, id), eq(media.companyId, companyId)))
    .run();
  return (res as unknown as { changes: number }).changes > 0;
}
