/**
 * The templates store: every read and write of the templates table. Callers hold the transaction and the
 * read cache (templates.cache.ts); nothing here opens a transaction. Asynchronous (issue 35): every
 * statement is awaited.
 */
import { and, asc, eq } from "drizzle-orm";
import { storeDb, type Db } from "../../db/client";
import { mapRow } from "../../db/rows";
import { templates } from "./templates.table";
import { perConnection } from "../../db/per-connection";

export type TemplateRow = typeof templates.$inferSelect;
type ProviderValues = Pick<TemplateRow, "category" | "status" | "components" | "params" | "providerTemplateId" | "rejectedReason" | "quality" | "updatedAt">;
/** What a provider's review changes on a row. */
export type ReviewValues = Pick<TemplateRow, "status" | "rejectedReason" | "quality" | "updatedAt">;

export function createTemplatesStore(dbIn: Db) {
  const db = storeDb(dbIn);
  return {
    /** The template cache's loader by id (getTemplateById). */
    async byId(id: string): Promise<TemplateRow | undefined> {
      return mapRow(templates, await db.sql(`SELECT * FROM templates WHERE id = ?`).get(id));
    },
    /** Every language of a name on an account (the template cache's loader by name). */
    async byName(channelAccountId: string, name: string): Promise<TemplateRow[]> {
      return (await db.sql(`SELECT * FROM templates WHERE channel_account_id = ? AND name = ?`).all(channelAccountId, name)).map((r) => mapRow(templates, r)!);
    },
    async list({ companyId, channel }: { companyId: string; channel?: string }): Promise<TemplateRow[]> {
      return await db
        .select()
        .from(templates)
        .where(channel ? and(eq(templates.companyId, companyId), eq(templates.channel, channel)) : eq(templates.companyId, companyId))
        .orderBy(asc(templates.channel), asc(templates.name), asc(templates.language))
        .all();
    },
    async exists(channelAccountId: string, name: string, language: string): Promise<boolean> {
      return !!(await db
        .select({ id: templates.id })
        .from(templates)
        .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.name, name), eq(templates.language, language)))
        .get());
    },
    async insertTemplate(row: TemplateRow): Promise<void> {
      await db.insert(templates).values(row).run();
    },
    /** Inserts the row unless (account, name, language) is taken (start-up seeds the sandbox's templates: ensureHelloWorld). */
    async insertTemplateIfAbsent(row: TemplateRow): Promise<void> {
      await db.insert(templates).values(row).onConflictDoNothing().run();
    },
    /** The templates of an account that came from the provider (sync). */
    async providerTemplates(channelAccountId: string): Promise<TemplateRow[]> {
      return await db
        .select()
        .from(templates)
        .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.source, "provider")))
        .all();
    },
    async disable(id: string, at: Date): Promise<void> {
      await db.update(templates).set({ status: "disabled", updatedAt: at }).where(eq(templates.id, id)).run();
    },
    /** One template of an account by name and language. */
    async byNameAndLanguage(channelAccountId: string, name: string, language: string): Promise<TemplateRow | undefined> {
      return await db
        .select()
        .from(templates)
        .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.name, name), eq(templates.language, language)))
        .get();
    },
    /** The template a provider's review names: by the provider's id, else by (account, name, language). */
    async reviewed(channelAccountId: string, ref: { providerTemplateId: string | null; name: string; language: string }): Promise<TemplateRow | undefined> {
      const byProviderId = ref.providerTemplateId
        ? await db
            .select()
            .from(templates)
            .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.providerTemplateId, ref.providerTemplateId)))
            .get()
        : undefined;
      return (
        byProviderId ??
        (await db
          .select()
          .from(templates)
          .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.name, ref.name), eq(templates.language, ref.language)))
          .get())
      );
    },
    /** Records a provider's review (status, rejection reason, quality). */
    async recordReview(id: string, values: ReviewValues): Promise<void> {
      await db.update(templates).set(values).where(eq(templates.id, id)).run();
    },
    async removeTemplate(id: string): Promise<void> {
      await db.delete(templates).where(eq(templates.id, id)).run();
    },
    /** Inserts a provider's template, or updates `values` of the one with its (account, name, language). */
    async upsertProviderTemplate(
      row: Pick<TemplateRow, "id" | "companyId" | "channelAccountId" | "channel" | "name" | "language" | "source" | "createdAt"> & ProviderValues,
      values: ProviderValues,
    ): Promise<void> {
      await db
        .insert(templates)
        .values(row)
        .onConflictDoUpdate({ target: [templates.channelAccountId, templates.name, templates.language], set: values })
        .run();
    },
  };
}

export type TemplatesStore = ReturnType<typeof createTemplatesStore>;

/** The store of a connection, built once. */
export const templatesStore = perConnection(createTemplatesStore);
