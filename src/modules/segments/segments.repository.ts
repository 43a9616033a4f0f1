/**
 * The segments store: saved filters (segments.table.ts). Raw statements of the asynchronous contract (db.sql),
 * every function awaited (issue 35). The members of a segment are the
 * contacts module's to read (contacts.audience.ts): this store never reads contact tables.
 */
import { storeDb, type Db } from "../../db/client";
import { perConnection } from "../../db/per-connection";

export interface SegmentRow {
  id: string;
  companyId: string;
  name: string;
  /** The filter tree as the client wrote it (JSON text). */
  filter: string;
  createdAt: number;
  updatedAt: number;
}

const COLUMNS = `id, company_id AS "companyId", name, filter, created_at AS "createdAt", updated_at AS "updatedAt"`;

export function createSegmentsStore(dbIn: Db) {
  const db = storeDb(dbIn);
  const num = (r: SegmentRow | null): SegmentRow | undefined => (r ? { ...r, createdAt: Number(r.createdAt), updatedAt: Number(r.updatedAt) } : undefined);

  return {
    async segmentById(companyId: string, id: string): Promise<SegmentRow | undefined> {
      return num((await db.sql(`SELECT ${COLUMNS} FROM segments WHERE id = ? AND company_id = ?`).get(id, companyId)) as SegmentRow | null);
    },

    /** The company's segment of that name (names are unique per company). */
    async segmentByName(companyId: string, name: string): Promise<SegmentRow | undefined> {
      return num((await db.sql(`SELECT ${COLUMNS} FROM segments WHERE company_id = ? AND name = ?`).get(companyId, name)) as SegmentRow | null);
    },

    /** Newest first; `before` is the last id of the previous page. `limit + 1` to tell whether there are more. */
    async listSegments(companyId: string, before: string | null, limit: number): Promise<SegmentRow[]> {
      const rows = (await (before === null
        ? db.sql(`SELECT ${COLUMNS} FROM segments WHERE company_id = ? ORDER BY id DESC LIMIT ?`).all(companyId, limit)
        : db
            .sql(`SELECT ${COLUMNS} FROM segments WHERE company_id = ? AND id < ? ORDER BY id DESC LIMIT ?`)
            .all(companyId, before, limit))) as unknown as SegmentRow[];
      return rows.map((r) => num(r)!);
    },

    async insertSegment(s: SegmentRow): Promise<void> {
      await db
        .sql(`INSERT INTO segments (id, company_id, name, filter, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)`)
        .run(s.id, s.companyId, s.name, s.filter, s.createdAt, s.updatedAt);
    },

    /** Writes name and filter; returns whether the segment exists. */
    async rewriteSegment(s: Pick<SegmentRow, "id" | "companyId" | "name" | "filter" | "updatedAt">): Promise<boolean> {
      return (
        (
          await db
            .sql(`UPDATE segments SET name = ?, filter = ?, updated_at = ? WHERE id = ? AND company_id = ?`)
            .run(s.name, s.filter, s.updatedAt, s.id, s.companyId)
        ).changes > 0
      );
    },

    /** Returns whether there was one to delete. */
    async deleteSegment(companyId: string, id: string): Promise<boolean> {
      return (await db.sql(`DELETE FROM segments WHERE id = ? AND company_id = ?`).run(id, companyId)).changes > 0;
    },
  };
}

export type SegmentsStore = ReturnType<typeof createSegmentsStore>;
/** The segments store of a connection (built on first use). */
export const segmentsStore = perConnection(createSegmentsStore);
