/**
 * The templates store: every read and write of the templates table. Callers hold the transaction and the
 * read cache (templates.service.ts); nothing here opens a transaction. Asynchronous (issue 35), except the
 * three marked NB!.
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
    /** NB! Synchronous: the template cache's loader (getTemplateById), which the dispatch reads inside db.read's synchronous snapshot. */
    byId(id: string): TemplateRow | undefined {
      return mapRow(templates, sqlite.query(`SELECT * FROM templates WHERE id = ?`).get(id) as Record<string, unknown> | null);
    },
    /** Every language of a name on an account. NB! Synchronous: the template cache's loader. */
    byName(channelAccountId: string, name: string): TemplateRow[] {
      return (sqlite.query(`SELECT * FROM templates WHERE channel_account_id = ? AND name = ?`).all(channelAccountId, name) as Record<string, unknown>[]).map(
        (r) => mapRow(templates, r)!,
      );
    },
    async list({ companyId, channel }: { companyId: string; channel?: string }): Promise<TemplateRow[]> {
      return db
        .select()
        .from(templates)
        .where(channel ? and(eq(templates.companyId, companyId), eq(templates.channel, channel)) : eq(templates.companyId, companyId))
        .orderBy(asc(templates.channel), asc(templates.name), asc(templates.language))
        .all();
    },
    async exists(channelAccountId: string, name: string, language: string): Promise<boolean> {
      return !!db
        .select({ id: templates.id })
        .from(templates)
        .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.name, name), eq(templates.language, language)))
        .get();
    },
    async insertTemplate(row: TemplateRow): Promise<void> {
      db.insert(templates).values(row).run();
    },
    /** Inserts the row unless (account, name, language) is taken. NB! Synchronous: start-up seeds the sandbox's templates without waiting (ensureHelloWorld). */
    insertTemplateIfAbsent(row: TemplateRow) {
      db.insert(templates).values(row).onConflictDoNothing().run();
    },
    /** The templates of an account that came from the provider (sync). */
    async providerTemplates(channelAccountId: string): Promise<TemplateRow[]> {
      return db
        .select()
        .from(templates)
        .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.source, "provider")))
        .all();
    },
    async disable(id: string, at: Date): Promise<void> {
      db.update(templates).set({ status: "disabled", updatedAt: at }).where(eq(templates.id, id)).run();
    },
    /** One template of an account by name and language. */
    async byNameAndLanguage(channelAccountId: string, name: string, language: string): Promise<TemplateRow | undefined> {
      return db
        .select()
        .from(templates)
        .where(and(eq(templates.channelAccountId, channelAccountId), eq(templates.name, name), eq(templates.language, language)))
        .get();
    },
    /** The template a provider's review names: by the provider's id, else by (account, name, language). */
    async reviewed(channelAccountId: string, ref: { providerTemplateId: string | null; name: string; language: string }): Promise<TemplateRow | undefined> {
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
    async recordReview(id: string, values: ReviewValues): Promise<void> {
      db.update(templates).set(values).where(eq(templates.id, id)).run();
    },
    async removeTemplate(id: string): Promise<void> {
      db.delete(templates).where(eq(templates.id, id)).run();
    },
    /** Inserts a provider's template, or updates `values` of the one with its (account, name, language). */
    async upsertProviderTemplate(
      row: Pick<TemplateRow, "id" | "companyId" | "channelAccountId" | "channel" | "name" | "language" | "source" | "createdAt"> & ProviderValues,
      values: ProviderValues,
    ): Promise<void> {
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
