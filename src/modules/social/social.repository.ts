/** Social queries (drizzle). Writes run inside the caller's transaction. */
import { and, desc, eq, gte, inArray, lt, lte, sql } from "drizzle-orm";
import { storeDb, type Db } from "../../db/client";
import { createAdapterStateRows } from "../../channels/adapter-state.store";
import { mapRow } from "../../db/rows";
import { socialAccountDays, socialPlatformMedia, socialPosts, socialPostTargets } from "./social.table";

export type PostRow = typeof socialPosts.$inferSelect;
export type TargetRow = typeof socialPostTargets.$inferSelect;
export type AccountDayRow = typeof socialAccountDays.$inferSelect;
export type PlatformMediaRow = typeof socialPlatformMedia.$inferSelect;

export type SocialRepository = ReturnType<typeof createSocialRepository>;

/** adapter_state key of a social account's last analytics pull (ms): durable and shared by every instance. */
const PULLED_AT = "analytics.pulled_at";

const LOCK_POST = "SELECT * FROM social_posts WHERE id = ?";
const LOCK_POST_PG = `${LOCK_POST} FOR UPDATE`;

export function createSocialRepository(dbIn: Db) {
  const db = storeDb(dbIn);
  const state = createAdapterStateRows(dbIn);
  return {
    /** When the account's analytics were last pulled (or a pull was queued for now), if ever. */
    async lastPullAt(accountId: string): Promise<Date | undefined> {
      const v = await state.valueOf(accountId, PULLED_AT);
      return v === undefined ? undefined : new Date(Number(v));
    },
    async markPulled(accountId: string, at: Date) {
      await state.put(accountId, PULLED_AT, String(at.getTime()));
    },
    /** The latest pulled metrics of published targets: their rows of social_platform_media (by its key). */
    async metricsOfTargets(targets: Pick<TargetRow, "accountId" | "externalId">[]): Promise<PlatformMediaRow[]> {
      const published = targets.filter((t) => t.externalId !== null);
      if (!published.length) return [];
      const accounts = [...new Set(published.map((t) => t.accountId))];
      const external = [...new Set(published.map((t) => t.externalId!))];
      return await db
        .select()
        .from(socialPlatformMedia)
        .where(and(inArray(socialPlatformMedia.accountId, accounts), inArray(socialPlatformMedia.externalId, external)))
        .all();
    },
    /** Accounts with a published target of the company (what POST /social/analytics/refresh pulls by default). */
    async accountsWithPublished(companyId: string): Promise<string[]> {
      const rows = await db
        .select({ accountId: socialPostTargets.accountId })
        .from(socialPostTargets)
        .where(and(eq(socialPostTargets.companyId, companyId), eq(socialPostTargets.status, "published")))
        .groupBy(socialPostTargets.accountId)
        .all();
      return rows.map((r) => r.accountId);
    },
    async insertPost(post: PostRow, targets: TargetRow[]) {
      await db.insert(socialPosts).values(post).run();
      if (targets.length) await db.insert(socialPostTargets).values(targets).run();
    },
    async insertTargets(targets: TargetRow[]) {
      if (targets.length) await db.insert(socialPostTargets).values(targets).run();
    },
    async deleteTargetsOfPost(postId: string) {
      await db.delete(socialPostTargets).where(eq(socialPostTargets.postId, postId)).run();
    },
    async getPost(companyId: string, id: string): Promise<PostRow | undefined> {
      return await db
        .select()
        .from(socialPosts)
        .where(and(eq(socialPosts.companyId, companyId), eq(socialPosts.id, id)))
        .get();
    },
    /**
     * The post, its row locked until the unit ends: taken first by every unit that changes a post's targets or
     * decides its status, so those units of one post run one after another (READ COMMITTED: each statement after
     * the lock sees what the unit before it committed) and take their locks in one order, post then targets.
     * `companyId` scopes it to a company (undefined: not that company's post). On SQLite a plain read: the unit
     * holds the one writer.
     */
    async lockPost(id: string, companyId?: string): Promise<PostRow | undefined> {
      const post = mapRow(socialPosts, (await db.sql(db.engine === "postgres" ? LOCK_POST_PG : LOCK_POST).get(id)) as Record<string, unknown> | null);
      return companyId === undefined || post?.companyId === companyId ? post : undefined;
    },
    async getPostById(id: string): Promise<PostRow | undefined> {
      return await db.select().from(socialPosts).where(eq(socialPosts.id, id)).get();
    },
    async targetsOf(postIds: string[]): Promise<TargetRow[]> {
      if (!postIds.length) return [];
      return await db.select().from(socialPostTargets).where(inArray(socialPostTargets.postId, postIds)).orderBy(socialPostTargets.id).all();
    },
    async getTarget(id: string): Promise<TargetRow | undefined> {
      return await db.select().from(socialPostTargets).where(eq(socialPostTargets.id, id)).get();
    },
    async updatePost(id: string, patch: Partial<PostRow>) {
      await db.update(socialPosts).set(patch).where(eq(socialPosts.id, id)).run();
    },
    async updateTarget(id: string, patch: Partial<TargetRow>) {
      await db.update(socialPostTargets).set(patch).where(eq(socialPostTargets.id, id)).run();
    },
    async updateTargetsOfPost(postId: string, patch: Partial<TargetRow>) {
      await db.update(socialPostTargets).set(patch).where(eq(socialPostTargets.postId, postId)).run();
    },
    async deletePost(id: string) {
      await db.delete(socialPosts).where(eq(socialPosts.id, id)).run();
    },
    async listPosts(o: { companyId: string; limit: number; before?: string; status?: string; accountId?: string; from?: Date; to?: Date }): Promise<PostRow[]> {
      const when = sql`coalesce(${socialPosts.scheduledAt}, ${socialPosts.createdAt})`;
      const conds = [eq(socialPosts.companyId, o.companyId)];
      if (o.before) conds.push(lt(socialPosts.id, o.before));
      if (o.status) conds.push(eq(socialPosts.status, o.status));
      if (o.from) conds.push(sql`${when} >= ${o.from.getTime()}`);
      if (o.to) conds.push(sql`${when} < ${o.to.getTime()}`);
      if (o.accountId)
        conds.push(
          sql`exists (select 1 from ${socialPostTargets} where ${socialPostTargets.postId} = ${socialPosts.id} and ${socialPostTargets.accountId} = ${o.accountId})`,
        );
      return await db
        .select()
        .from(socialPosts)
        .where(and(...conds))
        .orderBy(desc(socialPosts.id))
        .limit(o.limit)
        .all();
    },
    /** Media ids a not-yet-published post of the company will publish (for MEDIA_IN_USE). */
    async postUsingMedia(companyId: string, mediaId: string): Promise<string | undefined> {
      const row = await db
        .select({ id: socialPosts.id })
        .from(socialPosts)
        .where(
          and(
            eq(socialPosts.companyId, companyId),
            inArray(socialPosts.status, ["draft", "pending_approval", "scheduled", "publishing"]),
            db.engine === "sqlite"
              ? sql`(exists (select 1 from json_each(${socialPosts.media}) where json_extract(value, '$.mediaId') = ${mediaId})
                 or exists (select 1 from json_each(${socialPosts.overrides}) o, json_each(o.value, '$.media') m where json_extract(m.value, '$.mediaId') = ${mediaId}))`
              : // overrides is an object (platform → override); an override's media may be absent, never a scalar
                sql`(exists (select 1 from json_array_elements(${socialPosts.media}::json) as v(value) where v.value->>'mediaId' = ${mediaId})
                 or exists (select 1 from json_each(${socialPosts.overrides}::json) o, json_array_elements(o.value->'media') as m(value) where m.value->>'mediaId' = ${mediaId}))`,
          ),
        )
        .limit(1)
        .get();
      return row?.id;
    },
    /** Published targets of an account (the sandbox's "platform" listing). */
    async publishedTargets(accountId: string, limit = 200) {
      return await db
        .select({ target: socialPostTargets, text: socialPosts.text, overrides: socialPosts.overrides, media: socialPosts.media })
        .from(socialPostTargets)
        .innerJoin(socialPosts, eq(socialPosts.id, socialPostTargets.postId))
        .where(and(eq(socialPostTargets.accountId, accountId), eq(socialPostTargets.status, "published")))
        .orderBy(desc(socialPostTargets.publishedAt))
        .limit(limit)
        .all();
    },
    async postIdByExternal(accountId: string, externalIds: string[]): Promise<Map<string, string>> {
      if (!externalIds.length) return new Map();
      const rows = await db
        .select({ externalId: socialPostTargets.externalId, postId: socialPostTargets.postId })
        .from(socialPostTargets)
        .where(and(eq(socialPostTargets.accountId, accountId), inArray(socialPostTargets.externalId, externalIds)))
        .all();
      return new Map(rows.map((r) => [r.externalId!, r.postId]));
    },
    async upsertDays(rows: AccountDayRow[]) {
      for (const r of rows)
        await db
          .insert(socialAccountDays)
          .values(r)
          .onConflictDoUpdate({
            target: [socialAccountDays.accountId, socialAccountDays.date],
            set: { followers: r.followers, views: r.views, reach: r.reach, engagements: r.engagements, syncedAt: r.syncedAt },
          })
          .run();
    },
    async upsertMedia(rows: PlatformMediaRow[]) {
      for (const r of rows)
        await db
          .insert(socialPlatformMedia)
          .values(r)
          .onConflictDoUpdate({
            target: [socialPlatformMedia.accountId, socialPlatformMedia.externalId],
            set: {
              postId: r.postId,
              text: r.text,
              mediaType: r.mediaType,
              url: r.url,
              views: r.views,
              reach: r.reach,
              likes: r.likes,
              comments: r.comments,
              shares: r.shares,
              engagements: r.engagements,
              syncedAt: r.syncedAt,
            },
          })
          .run();
    },
    async days(o: { companyId: string; platform?: string; accountIds?: string[]; from: string; to: string }): Promise<AccountDayRow[]> {
      const conds = [eq(socialAccountDays.companyId, o.companyId), gte(socialAccountDays.date, o.from), lte(socialAccountDays.date, o.to)];
      if (o.platform) conds.push(eq(socialAccountDays.platform, o.platform));
      if (o.accountIds) conds.push(inArray(socialAccountDays.accountId, o.accountIds));
      return await db
        .select()
        .from(socialAccountDays)
        .where(and(...conds))
        .orderBy(socialAccountDays.date)
        .all();
    },
    /** Latest known followers of each account of the company (any date up to `to`). */
    async latestFollowers(companyId: string, to: string): Promise<{ accountId: string; platform: string; followers: number }[]> {
      const rows = await db
        .sql(
          `SELECT d.account_id AS "accountId", d.platform AS platform, d.followers AS followers FROM social_account_days d
           WHERE d.company_id = ?1 AND d.date = (SELECT max(date) FROM social_account_days WHERE account_id = d.account_id AND date <= ?2)`,
        )
        .all(companyId, to);
      return rows as { accountId: string; platform: string; followers: number }[];
    },
    async mediaInRange(o: {
      companyId: string;
      platform?: string;
      accountIds?: string[];
      from: Date;
      to: Date;
      orderByEngagement?: boolean;
      limit?: number;
    }): Promise<PlatformMediaRow[]> {
      const conds = [eq(socialPlatformMedia.companyId, o.companyId), gte(socialPlatformMedia.publishedAt, o.from), lt(socialPlatformMedia.publishedAt, o.to)];
      if (o.platform) conds.push(eq(socialPlatformMedia.platform, o.platform));
      if (o.accountIds) conds.push(inArray(socialPlatformMedia.accountId, o.accountIds));
      const q = db
        .select()
        .from(socialPlatformMedia)
        .where(and(...conds));
      return (o.orderByEngagement ? q.orderBy(desc(socialPlatformMedia.engagements), desc(socialPlatformMedia.publishedAt)) : q)
        .limit(o.limit ?? 100_000)
        .all();
    },
    /** GET /social/media: newest first, keyset on (published_at, account_id, external_id). */
    async listMedia(o: { companyId: string; accountIds: string[]; limit: number; after?: [number, string, string] }): Promise<PlatformMediaRow[]> {
      const conds = [eq(socialPlatformMedia.companyId, o.companyId), inArray(socialPlatformMedia.accountId, o.accountIds)];
      if (o.after) {
        const [t, a, e] = o.after;
        conds.push(
          sql`(${socialPlatformMedia.publishedAt} < ${t} OR (${socialPlatformMedia.publishedAt} = ${t} AND (${socialPlatformMedia.accountId} < ${a} OR (${socialPlatformMedia.accountId} = ${a} AND ${socialPlatformMedia.externalId} < ${e}))))`,
        );
      }
      return await db
        .select()
        .from(socialPlatformMedia)
        .where(and(...conds))
        .orderBy(desc(socialPlatformMedia.publishedAt), desc(socialPlatformMedia.accountId), desc(socialPlatformMedia.externalId))
        .limit(o.limit)
        .all();
    },
  };
}
