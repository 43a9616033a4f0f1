/** Tags: listing with contact counts, creation. Tags are also created implicitly by contact writes. */
import type { Db } from "../../db/client";
import { AppError, DetailCollector } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { tagsStore } from "./tags.repository";

export interface Tag {
  id: string;
  name: string;
  contactCount: number;
  createdAt: string;
}

/** Tags by name ascending; `after` is the last name of the previous page. */
export async function listTags({ db, companyId, limit, after }: { db: Db; companyId: string; limit: number; after?: string }): Promise<Tag[]> {
  const rows = await tagsStore(db).listTags(companyId, after ?? "", limit);
  return rows.map((r) => ({ ...r, createdAt: new Date(r.createdAt).toISOString() }));
}

/** In the caller's unit (the route's idem.batch), else a unit of its own. */
export async function createTag({ db, now, companyId, name }: { db: Db; now: () => Date; companyId: string; name: string }): Promise<Tag> {
  const trimmed = name.trim();
  if (!trimmed) new DetailCollector().add("/name", "must not be blank").throwIfAny();
  const store = tagsStore(db);
  return await db.join(async () => {
    if (await store.tagByName(companyId, trimmed))
      throw new AppError("CONFLICT", `The tag ${trimmed} exists`, [{ pointer: "/name", message: "already exists" }]);
    const tag = { id: newId(), name: trimmed, createdAt: now().getTime() };
    await store.insertTag({ ...tag, companyId });
    return { id: tag.id, name: tag.name, contactCount: 0, createdAt: new Date(tag.createdAt).toISOString() };
  });
}
