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
export function listTags({ db, companyId, limit, after }: { db: Db; companyId: string; limit: number; after?: string }): Tag[] {
  const rows = tagsStore(db).listTags(companyId, after ?? "", limit);
  return rows.map((r) => ({ ...r, createdAt: new Date(r.createdAt).toISOString() }));
}

export function createTag({ db, now, companyId, name }: { db: Db; now: () => Date; companyId: string; name: string }): Tag {
  const trimmed = name.trim();
  if (!trimmed) new DetailCollector().add("/name", "must not be blank").throwIfAny();
  const store = tagsStore(db);
  return db.tx(() => {
    if (store.tagByName(companyId, trimmed)) throw new AppError("CONFLICT", `The tag ${trimmed} exists`, [{ pointer: "/name", message: "already exists" }]);
    const tag = { id: newId(), name: trimmed, createdAt: now().getTime() };
    store.insertTag({ ...tag, companyId });
    return { id: tag.id, name: tag.name, contactCount: 0, createdAt: new Date(tag.createdAt).toISOString() };
  });
}
