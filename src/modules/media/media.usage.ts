/**
 * What keeps a media file from being deleted (DELETE /media/{id} → 409 MEDIA_IN_USE): a queued message
 * that will send it, or a scheduled social post that will publish it. Sent messages keep their own copy
 * of the StoredMedia in `content` and do not need the file any more.
 */
import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { messages } from "../messages/messages.table";

export interface MediaUse {
  kind: "message" | "social_post";
  id: string;
}

/**
 * Queued messages whose content holds this media: the messaging engine stores the StoredMedia at
 * `$.media.file` (media messages) and `$.template.headerMedia.file` (template header media).
 */
export function queuedMessageUsingMedia({ db, companyId, mediaId }: { db: Db; companyId: string; mediaId: string }): MediaUse | undefined {
  const row = db
    .select({ id: messages.id })
    .from(messages)
    .where(
      and(
        eq(messages.companyId, companyId),
        eq(messages.status, "queued"),
        sql`(json_extract(${messages.content}, '$.media.file.id') = ${mediaId} OR json_extract(${messages.content}, '$.template.headerMedia.file.id') = ${mediaId})`,
      ),
    )
    .limit(1)
    .get();
  return row ? { kind: "message", id: row.id } : undefined;
}

/**
 * SEAM — scheduled social posts (not built yet). When the social module lands, look its scheduled posts
 * up here (status scheduled / pending approval, media ids in the post) and return the first one.
 */
export function scheduledSocialPostUsingMedia(_: { db: Db; companyId: string; mediaId: string }): MediaUse | undefined {
  return undefined;
}

/** The first thing still using the media, if any. Call inside the deleting transaction. */
export function mediaInUse(args: { db: Db; companyId: string; mediaId: string }): MediaUse | undefined {
  return queuedMessageUsingMedia(args) ?? scheduledSocialPostUsingMedia(args);
}
