/**
 * POST /media and DELETE /media/{id} as operations: checks, the file on disk and the row, kept consistent
 * (a row always has its file; a failed write leaves no file).
 */
import type { Db } from "../../db/client";
import { AppError, DetailCollector, notFound } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { checkMediaAgainst, mediaRulesFor, type ChannelsView } from "./media.channels";
import { companyMediaBytes, deleteMediaRow, getMedia, insertMedia, type MediaRow } from "./media.service";
import { decideMime, SNIFF_BYTES } from "./media.sniff";
import { mediaDir, removeMediaFile, writeMediaFile } from "./media.storage";
import { mediaInUse } from "./media.usage";

/** Global hard cap on one upload, whatever the channel. */
export const MAX_MEDIA_BYTES = 100 * 1024 * 1024;

/** `C:\\fakepath\\a b.png` → `a b.png`; control characters dropped, at most 255 characters. */
export function cleanFilename(name: string | undefined): string {
  const base = (name ?? "").split(/[\\/]/).pop() ?? "";
  // biome-ignore lint/suspicious/noControlCharactersInRegex: stripping control characters from a file name is the point
  const noControl = /[\u0000-\u001f\u007f]/g;
  const clean = base.replace(noControl, "").trim().slice(0, 255);
  return clean && clean !== "." && clean !== ".." ? clean : "file";
}

function quotaError(quotaBytes: number) {
  return new AppError("STORAGE_LIMIT_REACHED", `The company's media storage quota of ${Math.round(quotaBytes / (1 << 20))} MB is used up; delete media first`, [
    { pointer: "/file", message: "does not fit in the remaining media quota" },
  ]);
}

export interface UploadArgs {
  db: Db;
  now: () => Date;
  dataDir: string;
  quotaBytes: number;
  channels: ChannelsView | undefined;
  companyId: string;
  companySlug: string;
  apiKeyId: string | null;
  file: File;
  channel?: string;
  /** Runs the DB write as a unit (the route passes idem.batch so the Idempotency-Key record lands in the same transaction). */
  commit: (write: () => Promise<MediaRow>) => Promise<MediaRow>;
}

export async function uploadMedia(a: UploadArgs): Promise<MediaRow> {
  const errors = new DetailCollector();
  const size = a.file.size;
  if (size === 0) errors.add("/file", "is empty");
  if (size > MAX_MEDIA_BYTES) errors.add("/file", `is over the ${MAX_MEDIA_BYTES >> 20} MB limit for one file`);
  errors.throwIfAny();

  const head = new Uint8Array(await a.file.slice(0, SNIFF_BYTES).arrayBuffer());
  const mime = decideMime({ declared: a.file.type, head });
  if (!mime.ok) errors.add("/file", mime.message);
  if (a.channel !== undefined) {
    const rules = mediaRulesFor({ channels: a.channels, companySlug: a.companySlug, channel: a.channel, errors });
    if (rules && mime.ok) checkMediaAgainst({ rules, mimeType: mime.mimeType, size, errors });
  }
  errors.throwIfAny("The file is not accepted");
  const mimeType = (mime as { mimeType: string }).mimeType;

  // Cheap pre-check (one counter row) so an over-quota upload is not even written. Not the check: uploads
  // running side by side all pass it; the reservation in the unit below is what holds the quota.
  if ((await companyMediaBytes({ db: a.db, companyId: a.companyId })) + size > a.quotaBytes) throw quotaError(a.quotaBytes);

  const id = newId();
  const written = await writeMediaFile({ source: a.file, dir: mediaDir(a.dataDir, a.companyId), id });
  try {
    return await a.commit(async () => {
      const row: MediaRow = {
        id,
        companyId: a.companyId,
        filename: cleanFilename(a.file.name),
        mimeType,
        size: written.size,
        sha256: written.sha256,
        path: written.path,
        createdAt: a.now(),
        apiKeyId: a.apiKeyId,
      };
      if (!(await insertMedia({ db: a.db, row, quotaBytes: a.quotaBytes }))) throw quotaError(a.quotaBytes);
      return row;
    });
  } catch (e) {
    await removeMediaFile(written.path);
    throw e;
  }
}

/** Deletes the row (409 MEDIA_IN_USE while something will still send it), then the file. */
export async function deleteMedia({ db, companyId, id }: { db: Db; companyId: string; id: string }): Promise<void> {
  const row = await db.unit(async () => {
    const r = await getMedia({ db, companyId, id });
    if (!r) throw notFound("Media");
    // The row first, then the check: the DELETE locks it (PostgreSQL) after every unit that holds it for a use
    // (holdMediaForUse) has committed, so the check below sees that use; a use that starts later waits for this
    // unit and finds the file gone — or, when the check refuses, there after all (the DELETE rolls back).
    // A delete of the same media side by side may have taken the row since it was read: the loser answers 404
    // and gives back nothing (only the unit that deleted the row releases its bytes).
    if (!(await deleteMediaRow({ db, companyId, id }))) throw notFound("Media");
    const use = await mediaInUse({ db, companyId, mediaId: id });
    if (use)
      throw new AppError(
        "MEDIA_IN_USE",
        use.kind === "message" ? `The media is used by queued message ${use.id}` : `The media is used by scheduled social post ${use.id}`,
        [{ pointer: "path:id", message: `in use by ${use.kind === "message" ? "message" : "social post"} ${use.id}` }],
      );
    return r;
  });
  // After the commit: a crash in between leaves an orphan file, never a row without its file.
  await removeMediaFile(row.path);
}
