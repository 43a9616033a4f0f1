/**
 * What keeps a media file from being deleted (DELETE /media/{id} → 409 MEDIA_IN_USE): a queued message
 * that will send it, or a scheduled social post that will publish it. Sent messages keep their own copy
 * of the StoredMedia in `content` and do not need the file any more.
 */
import type { Db } from "../../db/client";
import { queuedMessageUsingMedia as queuedMessageWithMedia } from "../messages/messages.service";

export interface MediaUse {
  kind: "message" | "social_post";
  id: string;
}

/** A queued message that will still send this media (the messaging service knows where content keeps it). */
export function queuedMessageUsingMedia({ db, companyId, mediaId }: { db: Db; companyId: string; mediaId: string }): MediaUse | undefined {
  const id = queuedMessageWithMedia({ db, companyId, mediaId });
  return id ? { kind: "message", id } : undefined;
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
