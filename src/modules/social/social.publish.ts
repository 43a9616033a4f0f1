/**
 * The publishing engine: one durable job per target (queue type `social.publish`, grouped by account).
 * Delivery policy lives here — statuses, retries, never-twice — and transport in the publishers.
 *
 * One attempt:
 *   1. The job's token must still be the post's run token (a cancel or re-schedule retires old jobs).
 *   2. The target becomes `publishing`, its attempt counted, in one transaction (before any platform call).
 *   3. An id saved by an earlier attempt → published. An earlier attempt began (attempts > 0) → ask the
 *      platform (`findExisting`) before publishing again: a crash between the platform's answer and our
 *      write, or an answer lost on the wire, never makes a second post.
 *   4. `publish`; the publisher saves every id the moment the platform returns it (`save`, own transaction).
 *   5. Success or a permanent failure settles the target; a retryable failure records the error on the
 *      target (visible in GET /social/posts/{id} while it waits) and retries with backoff.
 * The post's status is derived from its targets: published / partially_published / failed, with the event.
 */
import type { Db } from "../../db/client";
import type { PublishPayload } from "../../jobs";
import type { EventBus } from "../../events";
import type { Logger } from "../../platform/logger";
import type { Job, JobOutcome } from "../../platform/queue/queue";
import { defaultBackoffMs } from "../../platform/queue/queue.backoff";
import { publisherDefinition } from "../../social-publishers/publisher.registry";
import { PublishError, type PublishedPost, type PublishInput, type PublishMedia } from "../../social-publishers/publisher.types";
import type { SocialRuntime } from "./social.accounts";
import type { PostRow, SocialRepository, TargetRow } from "./social.repository";
import { postView } from "./social.service";
import type { StoredPostMedia } from "./social.table";

export const PUBLISH_MAX_ATTEMPTS = 8;

/** Target statuses no publish job changes any more. */
const SETTLED = new Set(["published", "failed", "canceled"]);

export function createPublishEngine({
  repo,
  unit,
  runtime,
  events,
  now,
  log,
  resolveMedia,
  mediaLink,
  onPublished,
}: {
  repo: SocialRepository;
  /** The unit of work around the repository's writes (db.unit). */
  unit: Db["unit"];
  runtime: SocialRuntime;
  events: EventBus;
  now: () => Date;
  log: Pick<Logger, "warn" | "error">;
  /** Our media id → the stored file; undefined when it is gone. */
  resolveMedia: (companyId: string, mediaId: string) => Promise<PublishMedia["file"] | undefined>;
  /** A signed public link to our media, for platforms that only pull from URLs. */
  mediaLink: (companyId: string, mediaId: string) => Promise<string>;
  /** A target was published (inside the transaction that says so): the first metrics pull is queued here. */
  onPublished: (accountId: string, publishedAt: Date) => Promise<void>;
}) {
  /**
   * Derives the post's status from its targets; emits the event when it reaches a final one. Inside the unit
   * that changed a target, `post` locked by it before that change (repo.lockPost). NB! The lock is what makes
   * this read-then-write right on PostgreSQL: the targets' units run side by side, and without it two of them,
   * each settling the last but one target, both read the other still `publishing` (neither committed yet) and
   * the post stayed `publishing` for ever. With it, the later unit waits for the earlier to commit, then reads
   * its target settled.
   */
  async function settlePost(post: PostRow): Promise<void> {
    const targets = await repo.targetsOf([post.id]);
    const live = targets.filter((t) => t.status !== "canceled");
    if (live.some((t) => t.status === "pending" || t.status === "publishing")) {
      if (post.status !== "publishing") await repo.updatePost(post.id, { status: "publishing", updatedAt: now() });
      return;
    }
    const published = live.filter((t) => t.status === "published");
    const status = published.length === live.length ? "published" : published.length > 0 ? "partially_published" : "failed";
    if (status === post.status) return;
    const publishedAt = published.length ? new Date(Math.max(...published.map((t) => t.publishedAt!.getTime()))) : null;
    const patch: Partial<PostRow> = { status, publishedAt, updatedAt: now() };
    await repo.updatePost(post.id, patch);
    const settled = { ...post, ...patch };
    events.emit({
      companyId: post.companyId,
      type: status === "failed" ? "social_post.failed" : "social_post.published",
      data: () => ({ post: postView(settled, targets) }),
    });
  }

  async function succeed(target: TargetRow, result: PublishedPost): Promise<void> {
    await unit(async () => {
      const post = await repo.lockPost(target.postId);
      if (!post) return; // deleted meanwhile
      await repo.updateTarget(target.id, {
        status: "published",
        externalId: result.externalId,
        url: result.url,
        publishedAt: result.publishedAt,
        errorCode: null,
        errorMessage: null,
        updatedAt: now(),
      });
      await onPublished(target.accountId, result.publishedAt);
      await settlePost(post);
    });
  }

  /** The target fails (unless it settled meanwhile, or `token` is given and no longer the post's run token). */
  async function fail(target: TargetRow, code: string, message: string, token?: string): Promise<void> {
    await unit(async () => {
      const post = await repo.lockPost(target.postId);
      if (!post || (token !== undefined && post.runToken !== token)) return;
      const current = await repo.getTarget(target.id);
      if (!current || SETTLED.has(current.status)) return;
      await repo.updateTarget(target.id, { status: "failed", errorCode: code, errorMessage: message, updatedAt: now() });
      await settlePost(post);
    });
  }

  function contentOf(post: PostRow, target: TargetRow): { text: string; media: StoredPostMedia[] } {
    const o = post.overrides[target.accountId] ?? {};
    return { text: o.text ?? post.text, media: o.media ?? post.media };
  }

  async function handle(job: Job<PublishPayload>): Promise<JobOutcome> {
    const { targetId, token } = job.payload;
    const found = await repo.getTarget(targetId);
    // Deleted or already settled: this job has nothing to do.
    if (!found || SETTLED.has(found.status)) return;

    const rt = runtime.get(found.accountId);
    if (!rt) return await fail(found, "ACCOUNT_MISSING", `social account ${found.accountId} is no longer configured`, token);

    // The target becomes `publishing` under the post's lock, where a cancel or re-schedule (which take it too)
    // cannot slip between the token check and the write.
    const startedAt = now();
    const started = await unit(async () => {
      const post = await repo.lockPost(found.postId);
      const current = post && post.runToken === token ? await repo.getTarget(targetId) : undefined;
      // Canceled, re-scheduled (another token), deleted or settled meanwhile: nothing to do.
      if (!post || !current || SETTLED.has(current.status)) return null;
      const patch = { status: "publishing", attempts: current.attempts + 1, firstAttemptAt: current.firstAttemptAt ?? startedAt, updatedAt: startedAt };
      await repo.updateTarget(current.id, patch);
      if (post.status !== "publishing") await repo.updatePost(post.id, { status: "publishing", updatedAt: startedAt });
      return { post, target: { ...current, ...patch }, earlierAttempts: current.attempts };
    });
    if (!started) return;
    const { post, target, earlierAttempts } = started;

    const { text, media: stored } = contentOf(post, target);
    const media: PublishMedia[] = [];
    for (const m of stored) {
      if (m.mediaId) {
        const file = await resolveMedia(post.companyId, m.mediaId);
        if (!file) return await fail(target, "MEDIA_MISSING", `media ${m.mediaId} was deleted before the post was published`);
        // URL-pulling platforms (Instagram) get a signed link to the file; the others upload the bytes.
        media.push(
          publisherDefinition(rt.account.provider)!.uploads ? { kind: m.kind, file } : { kind: m.kind, file, url: await mediaLink(post.companyId, m.mediaId) },
        );
      } else media.push({ kind: m.kind, url: m.url });
    }

    const progress = { ...target.progress };
    const input: PublishInput = {
      targetId: target.id,
      text,
      media,
      progress,
      firstAttemptAt: target.firstAttemptAt!,
      async save(p) {
        Object.assign(progress, p);
        await unit(async () => {
          const current = await repo.getTarget(target.id);
          if (!current) return;
          await repo.updateTarget(target.id, {
            progress: { ...current.progress, ...p },
            externalId: p.externalId ?? current.externalId,
            url: p.url ?? current.url,
            updatedAt: now(),
          });
        });
      },
    };

    try {
      let result: PublishedPost | null = null;
      if (progress.externalId) result = { externalId: progress.externalId, url: progress.url ?? null, publishedAt: now() };
      else if (earlierAttempts > 0) result = await rt.publisher.findExisting(input);
      result ??= await rt.publisher.publish(input);
      await succeed(target, result);
      if (rt.status !== "connected") runtime.setStatus(rt.account.id, "connected");
    } catch (e) {
      const err = e instanceof PublishError ? e : new PublishError("INTERNAL", e instanceof Error ? e.message : String(e), true);
      if (!(e instanceof PublishError)) log.error({ err: e, targetId }, "social publisher threw unexpectedly");
      if (err.opts.accountError) runtime.setStatus(rt.account.id, "error", err.message);
      if (err.retry && job.attempts < job.maxAttempts) {
        await unit(async () => repo.updateTarget(target.id, { status: "pending", errorCode: err.code, errorMessage: err.message, updatedAt: now() }));
        log.warn({ targetId, code: err.code, attempt: job.attempts }, "social publish attempt failed; will retry");
        return { retryAt: err.opts.retryAt ?? new Date(now().getTime() + defaultBackoffMs(job.attempts)), error: `${err.code}: ${err.message}` };
      }
      await fail(target, err.code, err.message);
    }
  }

  /**
   * Targets whose publish job died outside the handler's own error handling (e.g. the database refused the
   * write eight times) would wait forever: settle them as failed with the job's last error, so the post gets
   * a final status and says why. Idempotent (settled targets and retired tokens are skipped).
   */
  async function failDeadJobs(dead: { payload: Record<string, unknown>; lastError: string | null }[]): Promise<number> {
    let failed = 0;
    for (const job of dead) {
      const { targetId, token } = job.payload as unknown as PublishPayload;
      const target = await repo.getTarget(targetId);
      const post = target && (await repo.getPostById(target.postId));
      if (!target || !post || post.runToken !== token || (target.status !== "pending" && target.status !== "publishing")) continue;
      await fail(target, target.errorCode ?? "PUBLISH_GAVE_UP", target.errorMessage ?? job.lastError ?? "the publish job gave up", token);
      failed++;
    }
    return failed;
  }

  return { handle, failDeadJobs };
}
