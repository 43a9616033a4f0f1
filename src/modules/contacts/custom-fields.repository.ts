/** The custom fields store: the company's field definitions (values live in contacts.custom_fields). */
import { storeDb, type Db } from "../../db/client";
import { perConnection } from "../../db/per-connection";

export interface CustomFieldDef {
  id: string;
  key: string;
  label: string;
  type: "text" | "number" | "boolean" | "date" | "select";
  options: string[] | null;
  createdAt: number;
}

const DEFS = `SELECT id, key, label, type, options, created_at AS "createdAt" FROM custom_fields WHERE company_id = ? ORDER BY key`;
type DefRow = Omit<CustomFieldDef, "options"> & { options: string | null };
const byKey = (rows: DefRow[]) => new Map(rows.map((r) => [r.key, { ...r, options: r.options ? JSON.parse(r.options) : null }]));

export function createCustomFieldsStore(dbIn: Db) {
  const db = storeDb(dbIn);
  return {
    /** The company's definitions by key. */
    async customFieldDefs(companyId: string): Promise<Map<string, CustomFieldDef>> {
      return byKey((await db.sql(DEFS).all(companyId)) as unknown as DefRow[]);
    },

    async insertCustomField(companyId: string, def: CustomFieldDef): Promise<void> {
      await db
        .sql(`INSERT INTO custom_fields (id, company_id, key, label, type, options, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)`)
        .run(def.id, companyId, def.key, def.label, def.type, def.options ? JSON.stringify(def.options) : null, def.createdAt);
    },
  };
}

export type CustomFieldsStore = ReturnType<typeof createCustomFieldsStore>;
/** The custom fields store of a connection (built on first use). */
export const customFieldsStore = perConnection(createCustomFieldsStore);
