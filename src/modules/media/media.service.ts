/**
 * Media service: rows of uploaded files and the provider media id cache. The file bytes are handled by
 * media.storage.ts; routes in media.routes.ts.
 *
 * `findStoredMedia` / `rememberProviderMediaId` are the messaging engine's entry points: it resolves a
 * media id to the StoredMedia it puts into message content, and caches the provider id an adapter's
 * upload returned (SendResult.providerMediaId). `mediaRef` is the send's (messages, campaigns): a stored file
 * checked against what the account's adapter takes, held for the caller's unit.
 */
import type { AccountRuntime } from "../../channels/channel.accounts";
import type { StoredMedia } from "../../channels/channel.types";
import type { Db } from "../../db/client";
import { AppError } from "../../platform/errors";
import { mediaStore, type MediaRow } from "./media.repository";

export type { MediaRow };

type MediaOfAccount = { db: Db; companyId: string; mediaId: string; channelAccountId?: string };
type ProviderMediaId = { db: Db; now: () => Date; mediaId: string; channelAccountId: string; providerMediaId: string };

function storedMedia(row: MediaRow, cached: string | undefined): StoredMedia {
  const out: StoredMedia = { id: row.id, path: row.path, mimeType: row.mimeType, filename: row.filename, size: row.size };
  if (cached) out.providerMediaId = cached;
  return out;
}

/** Our media row as StoredMedia, with the provider media id cached for `channelAccountId` (if any). */
export async function findStoredMedia({ db, companyId, mediaId, channelAccountId }: MediaOfAccount): Promise<StoredMedia | undefined> {
  const store = mediaStore(db);
  const row = await store.ofCompany(companyId, mediaId);
  if (!row) return undefined;
  return storedMedia(row, channelAccountId ? await store.providerMediaId(mediaId, channelAccountId) : undefined);
}

/**
 * A file a new message or post will use (its type and size), held against DELETE /media until the caller's unit
 * ends (PostgreSQL: units side by side; media.usage.ts's check then sees the use). Undefined when there is none.
 */
export async function holdMediaForUse({ db, companyId, mediaId }: { db: Db; companyId: string; mediaId: string }): Promise<StoredMedia | undefined> {
  const row = await mediaStore(db).holdForUse(companyId, mediaId);
  return row ? { id: row.id, path: row.path, mimeType: row.mimeType, filename: row.filename, size: row.size } : undefined;
}

/** Remembers the provider's id of an upload of `mediaId` through `channelAccountId` (replaces an older one). */
export async function rememberProviderMediaId({ db, now, mediaId, channelAccountId, providerMediaId }: ProviderMediaId): Promise<void> {
  // The media may have been deleted while the send was in flight: nothing to cache then (and the FK
  // would refuse the row).
  const store = mediaStore(db);
  await db.unit(async () => {
    if (!(await store.exists(mediaId))) return;
    await store.putProviderMediaId({ mediaId, channelAccountId, providerMediaId, now });
  });
}

/** Forgets a cached provider id (the provider said it expired / is unknown). */
export async function forgetProviderMediaId({ db, mediaId, channelAccountId }: { db: Db; mediaId: string; channelAccountId: string }): Promise<void> {
  await mediaStore(db).deleteProviderMediaId(mediaId, channelAccountId);
}

export async function getMedia({ db, companyId, id }: { db: Db; companyId: string; id: string }): Promise<MediaRow | undefined> {
  return await mediaStore(db).ofCompany(companyId, id);
}

/** Newest first (ids are UUID v7); `before` = id of the last row of the previous page. */
export async function listMedia({ db, companyId, limit, before }: { db: Db; companyId: string; limit: number; before?: string }): Promise<MediaRow[]> {
  return await mediaStore(db).list({ companyId, limit, before });
}

/** Bytes of media a company holds (its media_usage counter), for the quota's cheap pre-check. */
export async function companyMediaBytes({ db, companyId }: { db: Db; companyId: string }): Promise<number> {
  return await mediaStore(db).usedBytes(companyId);
}

/**
 * Inserts the row and adds its size to the company's counter, unless that takes the counter over
 * `quotaBytes`: false then, and nothing is written. In the caller's unit (or one of its own).
 */
export async function insertMedia({ db, row, quotaBytes }: { db: Db; row: MediaRow; quotaBytes: number }): Promise<boolean> {
  const store = mediaStore(db);
  return await db.join(async () => {
    // NB! The reservation is the quota check: a SUM read here would let two units side by side both see room.
    if (!(await store.reserveBytes(row.companyId, row.size, quotaBytes))) return false;
    await store.insertMedia(row);
    return true;
  });
}

/** Deletes the row and gives its bytes back to the company's counter, in one unit. True when a row was deleted. */
export async function deleteMediaRow({ db, companyId, id }: { db: Db; companyId: string; id: string }): Promise<boolean> {
  const store = mediaStore(db);
  return await db.join(async () => {
    const size = await store.deleteMedia(companyId, id);
    if (size === null) return false;
    await store.releaseBytes(companyId, size);
    return true;
  });
}

/** A stored file for a send; its type and size must be ones the account's adapter takes (else it would only fail later, MEDIA_INVALID). */
export async function mediaRef(deps: { db: Db }, companyId: string, mediaId: string, pointer: string, runtime: AccountRuntime) {
  const m = await holdMediaForUse({ db: deps.db, companyId, mediaId });
  if (!m) throw new AppError("VALIDATION_FAILED", "No such media", [{ pointer, message: "unknown mediaId (POST /media)" }]);
  const max = runtime.adapter.capabilities.media[m.mimeType];
  if (max === undefined || m.size > max)
    throw new AppError("VALIDATION_FAILED", `This ${runtime.account.channel} account cannot send the stored file`, [
      {
        pointer,
        message:
          max === undefined
            ? `${m.mimeType} files are not accepted on this account`
            : `${m.size} bytes is over the ${max} byte limit for ${m.mimeType} on this account`,
      },
    ]);
  return { id: m.id, filename: m.filename, mimeType: m.mimeType, size: m.size };
}
