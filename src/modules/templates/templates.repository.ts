/**
 * The templates store: every read and write of the templates table. Callers hold the transaction and the
 * read cache (templates.service.ts); nothing here opens a transaction.
 */
import { and, asc, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { mapRow } from "../../db/rows";
import { templates } from "./templates.table";
import { perConnection } from "../../db/per-connection";

export type TemplateRow = typeof templates.$inferSelect;
type ProviderValues = Pick<TemplateRow, "category" | "status" | "components" | "params" | "providerTemplateId" | "rejectedReason" | "quality" | "updatedAt">;
/** What a provider's review changes on a row. */
export type ReviewValues = Pick<TemplateRow, "status" | "rejectedReason" | "quality" | "updatedAt">;

export function createTemplatesStore(db: Db) {
  const sqlite = db.$client;
  return {
    byId(id: string): TemplateRow | undefined {
      return mapRow(templates, sqlite.query(`SELECT * FROM templates WHERE id = ?`).get(id) as Record<string, unknown> | null);
    },
    /** Every language of a name on an account. */
    byName(channelAccountId: string, name: string): TemplateRow[] {
      return (sqlite.query(`SELECT * FROM templates WHERE channel_account_id = ? AND name = ?`).all(channelAccountId, name) as Record<string, unknown>[]).map(
        (r) => mapRow(templates, r)!,
      );
    },
    list({ companyId, channel }: { companyId: string; channel?: string }): TemplateRow[] {
      return db
        .select()
        .from(templates)
        .where(channel ? and(eq(templates.companyId, companyId), eq(templates.channel, channel)) : eq(templates.companyId, companyId))
        .orderBy(asc(templates.channel), asc(templates.name), asc(templates.language))
        .all();
    },
    exists(channelAccountId: string, name: string, language: string): boolean {
      return !!db
        .select({ id: templates.id })
        .from(templates)
        .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.name, name), eq(templates.language, language)))
        .get();
    },
    insertTemplate(row: TemplateRow) {
      db.insert(templates).values(row).run();
    },
    /** Inserts the row unless (account, name, language) is taken. */
    insertTemplateIfAbsent(row: TemplateRow) {
      db.insert(templates).values(row).onConflictDoNothing().run();
    },
    /** The templates of an account that came from the provider (sync). */
    providerTemplates(channelAccountId: string): TemplateRow[] {
      return db
        .select()
        .from(templates)
        .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.source, "provider")))
        .all();
    },
    disable(id: string, at: Date) {
      db.update(templates).set({ status: "disabled", updatedAt: at }).where(eq(templates.id, id)).run();
    },
    /** One template of an account by name and language. */
    byNameAndLanguage(channelAccountId: string, name: string, language: string): TemplateRow | undefined {
      return db
        .select()
        .from(templates)
        .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.name, name), eq(templates.language, language)))
        .get();
    },
    /** The template a provider's review names: by the provider's id, else by (account, name, language). */
    reviewed(channelAccountId: string, ref: { providerTemplateId: string | null; name: string; language: string }): TemplateRow | undefined {
      const byProviderId = ref.providerTemplateId
        ? db
            .select()
            .from(templates)
            .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.providerTemplateId, ref.providerTemplateId)))
            .get()
        : undefined;
      return (
        byProviderId ??
        db
          .select()
          .from(templates)
          .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.name, ref.name), eq(templates.language, ref.language)))
          .get()
      );
    },
    /** Records a provider's review (status, rejection reason, quality). */
    recordReview(id: string, values: ReviewValues) {
      db.update(templates).set(values).where(eq(templates.id, id)).run();
    },
    removeTemplate(id: string) {
      db.delete(templates).where(eq(templates.id, id)).run();
    },
    /** Inserts a provider's template, or updates `values` of the one with its (account, name, language). */
    upsertProviderTemplate(
      row: Pick<TemplateRow, "id" | "companyId" | "channelAccountId" | "channel" | "name" | "language" | "source" | "createdAt"> & ProviderValues,
      values: ProviderValues,
    ) {
      db.insert(templates)
        .values(row)
        .onConflictDoUpdate({ target: [templates.channelAccountId, templates.name, templates.language], set: values })
        .run();
    },
  };
}

export type TemplatesStore = ReturnType<typeof createTemplatesStore>;

/** The store of a connection, built once. */
export const templatesStore = perConnection(createTemplatesStore);
