/**
 * What keeps a media file from being deleted (DELETE /media/{id} → 409 MEDIA_IN_USE): a queued message
 * that will send it, or a scheduled social post that will publish it. Sent messages keep their own copy
 * of the StoredMedia in `content` and do not need the file any more.
 */
import type { Db } from "../../db/client";
import { queuedMessageUsingMedia as queuedMessageWithMedia } from "../messages/messages.service";
import { socialPostUsingMedia } from "../social/social.service";

export interface MediaUse {
  kind: "message" | "social_post";
  id: string;
}

/** A queued message that will still send this media (the messaging service knows where content keeps it). */
export async function queuedMessageUsingMedia({ db, companyId, mediaId }: { db: Db; companyId: string; mediaId: string }): Promise<MediaUse | undefined> {
  const id = await queuedMessageWithMedia({ db, companyId, mediaId });
  return id ? { kind: "message", id } : undefined;
}

/**
 * A social post that will still publish this media (draft, pending approval, scheduled or publishing),
 * asked of the social module's service (it owns its tables).
 */
export async function scheduledSocialPostUsingMedia({ db, companyId, mediaId }: { db: Db; companyId: string; mediaId: string }): Promise<MediaUse | undefined> {
  const id = await socialPostUsingMedia({ db, companyId, mediaId });
  return id ? { kind: "social_post", id } : undefined;
}

/** The first thing still using the media, if any. Call inside the deleting transaction. */
export async function mediaInUse(args: { db: Db; companyId: string; mediaId: string }): Promise<MediaUse | undefined> {
  return (await queuedMessageUsingMedia(args)) ?? (await scheduledSocialPostUsingMedia(args));
}
