/**
 * Sandbox publisher: every platform without credentials. Publishing succeeds at once with a post id derived
 * from the target id (`sbx_…`), so a retry can never make a second post. Text containing `#fail` is
 * refused (permanently), `#flaky` fails its first attempt (retryably) — to try failure flows by hand.
 * Analytics are synthetic and deterministic: a function of the account id, the date and the post id.
 */
import { Type } from "@sinclair/typebox";
import { hash32, PublishError, settingsReader, type PlatformMediaItem, type PublisherDefinition, type SocialPublisher } from "./publisher.types";

const sandboxSettings = Type.Object(
  { handle: Type.Optional(Type.String({ minLength: 1, description: "handle shown by GET /social/accounts" })) },
  { additionalProperties: false },
);

const DAY = 86_400_000;
const dateOf = (d: Date) => d.toISOString().slice(0, 10);

/** Synthetic metrics of one post: stable for an id, growing with the post's age in days (capped at 30). */
export function sandboxPostMetrics(externalId: string, publishedAt: Date, now: Date) {
  const h = hash32(externalId);
  const age = Math.min(30, Math.max(0, Math.floor((now.getTime() - publishedAt.getTime()) / DAY)) + 1);
  const views = (200 + (h % 800)) * age;
  const reach = Math.round(views * 0.7);
  const likes = Math.round(views * (0.02 + ((h >>> 8) % 30) / 1000));
  const comments = Math.round(likes * 0.1);
  const shares = Math.round(likes * 0.05);
  return { views, reach, likes, comments, shares };
}

/** Synthetic account numbers for one UTC day. */
export function sandboxDay(accountId: string, date: string) {
  const h = hash32(`${accountId}:${date}`);
  const base = 1000 + (hash32(accountId) % 9000);
  const dayIndex = Math.floor(Date.parse(`${date}T00:00:00Z`) / DAY);
  return {
    date,
    followers: base + (dayIndex % 1000) * 3,
    views: 500 + (h % 2500),
    reach: 300 + (h % 1500),
    engagements: 20 + ((h >>> 12) % 180),
  };
}

export const sandboxPublisher: PublisherDefinition = {
  platforms: ["instagram", "facebook", "x", "tiktok"],
  uploads: true,
  readSettings: settingsReader(sandboxSettings),
  create(ctx): SocialPublisher {
    const { account } = ctx;
    const handle = (account.settings.handle as string | undefined) ?? `sandbox_${account.platform}`;
    const externalIdOf = (targetId: string) => `sbx_${targetId}`;
    const urlOf = (id: string) => `https://sandbox.invalid/${account.platform}/${handle}/${id}`;
    return {
      async publish(input) {
        if (/#fail\b/i.test(input.text)) throw new PublishError("SANDBOX_REJECTED", "the sandbox refuses posts containing #fail", false);
        if (/#flaky\b/i.test(input.text) && !input.progress.flaky) {
          await input.save({ flaky: "1" });
          throw new PublishError("SANDBOX_UNAVAILABLE", "the sandbox fails the first attempt of posts containing #flaky", true);
        }
        const externalId = externalIdOf(input.targetId);
        await input.save({ externalId });
        return { externalId, url: urlOf(externalId), publishedAt: ctx.now() };
      },
      // The id is a function of the target: publishing again returns the same post, never a second one.
      async findExisting() {
        return null;
      },
      async remove() {},
      async analytics({ now, published }) {
        const days = [];
        for (let i = 29; i >= 0; i--) days.push(sandboxDay(account.id, dateOf(new Date(now.getTime() - i * DAY))));
        // Five posts "made outside Switchboard", one every six days back from now.
        const outside: PlatformMediaItem[] = [1, 2, 3, 4, 5].map((n) => {
          const publishedAt = new Date(Math.floor(now.getTime() / DAY) * DAY - n * 6 * DAY + 9 * 3_600_000);
          const externalId = `sbx_ext_${hash32(`${account.id}:${dateOf(publishedAt)}`).toString(36)}`;
          return {
            externalId,
            text: `Sandbox ${account.platform} post from ${dateOf(publishedAt)}`,
            mediaType: account.platform === "tiktok" ? "video" : "image",
            url: urlOf(externalId),
            publishedAt,
            ...sandboxPostMetrics(externalId, publishedAt, now),
          };
        });
        const ours: PlatformMediaItem[] = published.map((p) => ({
          externalId: p.externalId,
          text: p.text,
          mediaType: p.mediaType,
          url: urlOf(p.externalId),
          publishedAt: p.publishedAt,
          ...sandboxPostMetrics(p.externalId, p.publishedAt, now),
        }));
        return { handle, followers: days[days.length - 1]!.followers, days, media: [...ours, ...outside] };
      },
    };
  },
};
