/** Tags: listing with contact counts, creation. Tags are also created implicitly by contact writes. */
import type { Db } from "../../db/client";
import { AppError, DetailCollector } from "../../platform/errors";
import { newId } from "../../platform/ids";
import { tagByName } from "./contacts.repository";

export interface Tag {
  id: string;
  name: string;
  contactCount: number;
  createdAt: string;
}

/** Tags by name ascending; `after` is the last name of the previous page. */
export function listTags({ db, companyId, limit, after }: { db: Db; companyId: string; limit: number; after?: string }): Tag[] {
  const rows = db.$client
    .query(
      `SELECT t.id, t.name, t.created_at AS "createdAt",
         (SELECT count(*) FROM contact_tags ct WHERE ct.tag_id = t.id) AS "contactCount"
       FROM tags t WHERE t.company_id = ? AND t.name > ? ORDER BY t.name LIMIT ?`,
    )
    .all(companyId, after ?? "", limit) as { id: string; name: string; createdAt: number; contactCount: number }[];
  return rows.map((r) => ({ ...r, createdAt: new Date(r.createdAt).toISOString() }));
}

export function createTag({ db, now, companyId, name }: { db: Db; now: () => Date; companyId: string; name: string }): Tag {
  const trimmed = name.trim();
  if (!trimmed) new DetailCollector().add("/name", "must not be blank").throwIfAny();
  return db.tx(() => {
    if (tagByName(db.$client, companyId, trimmed)) throw new AppError("CONFLICT", `The tag ${trimmed} exists`, [{ pointer: "/name", message: "already exists" }]);
    const tag = { id: newId(), name: trimmed, createdAt: now().getTime() };
    db.$client.query(`INSERT INTO tags (id, company_id, name, created_at) VALUES (?, ?, ?, ?)`).run(tag.id, companyId, tag.name, tag.createdAt);
    return { id: tag.id, name: tag.name, contactCount: 0, createdAt: new Date(tag.createdAt).toISOString() };
  });
}
