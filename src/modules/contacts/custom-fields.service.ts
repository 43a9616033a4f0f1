/** Custom field definitions and value validation. */
import type { Db } from "../../db/client";
import { AppError, DetailCollector } from "../../platform/errors";
import { newId } from "../../platform/ids";
import type { CustomFieldType } from "./contacts.model";
import { customFieldsStore, type CustomFieldDef } from "./custom-fields.repository";

const KEY = /^[a-z][a-z0-9_]{0,63}$/;
const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/** Why `value` does not fit the field, or null when it does. Null values (clear) are handled by the caller. */
export function validateCustomFieldValue(def: Pick<CustomFieldDef, "type" | "options">, value: unknown): string | null {
  switch (def.type) {
    case "text":
      return typeof value === "string" && value.length <= 10_000 ? null : "must be a string of at most 10000 characters";
    case "number":
      return typeof value === "number" && Number.isFinite(value) ? null : "must be a number";
    case "boolean":
      return typeof value === "boolean" ? null : "must be true or false";
    case "date": {
      const m = typeof value === "string" ? DATE.exec(value) : null;
      if (!m) return "must be a date YYYY-MM-DD";
      const d = new Date(`${value}T00:00:00Z`);
      return !Number.isNaN(d.getTime()) && d.toISOString().startsWith(value as string) ? null : "must be a valid calendar date YYYY-MM-DD";
    }
    case "select":
      return typeof value === "string" && (def.options ?? []).includes(value) ? null : `must be one of: ${(def.options ?? []).join(", ")}`;
  }
}

export interface CustomField {
  id: string;
  key: string;
  label: string;
  type: CustomFieldType;
  options: string[] | null;
  createdAt: string;
}

const toApi = (d: CustomFieldDef): CustomField => ({ ...d, createdAt: new Date(d.createdAt).toISOString() });

export async function listCustomFields({ db, companyId }: { db: Db; companyId: string }): Promise<CustomField[]> {
  return [...(await customFieldsStore(db).customFieldDefs(companyId)).values()].map(toApi);
}

/** In the caller's unit (the route's idem.batch), else a unit of its own. */
export async function createCustomField({
  db,
  now,
  companyId,
  input,
}: {
  db: Db;
  now: () => Date;
  companyId: string;
  input: { key: string; label: string; type: CustomFieldType; options?: string[] };
}): Promise<CustomField> {
  const errors = new DetailCollector();
  if (!KEY.test(input.key)) errors.add("/key", "must match ^[a-z][a-z0-9_]{0,63}$");
  if (!input.label.trim()) errors.add("/label", "must not be blank");
  if (input.type === "select") {
    if (!input.options?.length) errors.add("/options", "a select field needs at least one option");
    else if (new Set(input.options).size !== input.options.length) errors.add("/options", "options must be unique");
  } else if (input.options !== undefined) errors.add("/options", "only select fields have options");
  errors.throwIfAny();
  const store = customFieldsStore(db);
  return await db.join(async () => {
    if ((await store.customFieldDefs(companyId)).has(input.key))
      throw new AppError("CONFLICT", `A custom field with key ${input.key} exists`, [{ pointer: "/key", message: "already exists" }]);
    const def: CustomFieldDef = {
      id: newId(),
      key: input.key,
      label: input.label.trim(),
      type: input.type,
      options: input.type === "select" ? input.options! : null,
      createdAt: now().getTime(),
    };
    await store.insertCustomField(companyId, def);
    return toApi(def);
  });
}
