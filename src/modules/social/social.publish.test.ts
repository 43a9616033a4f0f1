/**
 * The publishing engine end to end through the app, with real publishers talking to protocol fakes:
 * one post to four platforms, one platform failing, a crash between the platform's answer and our write
 * (never a second post), delete from the platforms, the analytics pull, and an overdue schedule after a restart.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { GraphPublishFake, graphPublishErrors } from "../../../test/fakes/graph-publish.fake";
import { TiktokPostingFake } from "../../../test/fakes/tiktok-posting.fake";
import { XFake } from "../../../test/fakes/x.fake";
import { SOCIAL, sandboxSocialAccounts } from "../../../test/helpers/social";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { eventsOf } from "../../../test/helpers/messaging";
import { silentLogger } from "../../platform/logger";
import { modulesOf } from "../../assembly";
import type { PublishPayload } from "../../jobs";
import { createPublishEngine } from "./social.publish";
import { PUBLISH_JOB } from "./social.service";

const ACC = {
  instagram: "0193a4b2-0000-7000-8000-0000000000d1",
  facebook: "0193a4b2-0000-7000-8000-0000000000d2",
  x: "0193a4b2-0000-7000-8000-0000000000d3",
  tiktok: "0193a4b2-0000-7000-8000-0000000000d4",
};
const ALL = Object.values(ACC);

let graph: GraphPublishFake;
let xf: XFake;
let tt: TiktokPostingFake;
let app: TestApp;

beforeAll(async () => {
  graph = GraphPublishFake.start();
  graph.processingPolls = 0;
  xf = XFake.start({ userId: "1000000001" });
  tt = TiktokPostingFake.start();
  tt.processingPolls = 0;
  app = await createTestApp({
    // NB! Mid-morning (UTC) of today: the tests move the clock by minutes, and the analytics keep a row per day —
    // a run started just before midnight pulled into two days and summed both.
    start: new Date(`${new Date().toISOString().slice(0, 10)}T10:00:00Z`),
    config: {
      social_accounts: [
        {
          id: ACC.instagram,
          platform: "instagram",
          provider: "instagram",
          name: "IG",
          settings: { ig_user_id: "17841400000000001", access_token: "graph-token", base_url: graph.url },
        },
        {
          id: ACC.facebook,
          platform: "facebook",
          provider: "facebook",
          name: "FB",
          settings: { page_id: "104000000000001", page_access_token: "graph-token", base_url: graph.url },
        },
        { id: ACC.x, platform: "x", provider: "x", name: "X", settings: { user_id: "1000000001", access_token: "x-token", base_url: xf.url } },
        { id: ACC.tiktok, platform: "tiktok", provider: "tiktok", name: "TT", settings: { access_token: "tt-publish-token", base_url: tt.url } },
      ],
    },
  });
  // The platforms share the app's clock, as real ones share real time (the test moves it past backoffs).
  graph.now = xf.now = tt.now = () => app.clock.now();
});
afterAll(async () => {
  await app.close();
  await Promise.all([graph.stop(), xf.stop(), tt.stop()]);
});

const VIDEO = { url: "https://cdn.example.com/v.mp4" };
const IMAGE = { url: "https://cdn.example.com/a.jpg" };
const get = async (id: string) => (await app.request("GET", `/social/posts/${id}`)).body.data;
const target = (p: any, accountId: string) => p.targets.find((t: any) => t.accountId === accountId);
/** Runs due jobs; moves the clock past any retry backoff first (`retries` rounds). */
async function settle(retries = 0) {
  await app.deps.queue.drain();
  for (let i = 0; i < retries; i++) {
    app.clock.advance(10 * 60_000);
    await app.deps.queue.drain();
  }
}

describe("publishing through the platforms", () => {
  test("one post, four platforms: each published once with the platform's id and link", async () => {
    const res = await app.request("POST", "/social/posts", {
      body: {
        accountIds: ALL,
        text: "Four ways",
        media: [IMAGE],
        overrides: { [ACC.tiktok]: { media: [VIDEO] }, [ACC.x]: { text: "Four ways on X", media: [] }, [ACC.facebook]: { media: [] } },
        publishNow: true,
      },
    });
    expect(res.status).toBe(201);
    await settle();
    const p = await get(res.body.data.id);
    expect(p.status).toBe("published");
    expect(target(p, ACC.instagram)).toMatchObject({
      status: "published",
      externalId: graph.igMedia.at(-1)!.id,
      url: `https://www.instagram.com/p/${graph.igMedia.at(-1)!.id}/`,
    });
    expect(target(p, ACC.facebook)).toMatchObject({ status: "published", externalId: graph.fbPosts.at(-1)!.id });
    expect(target(p, ACC.x)).toMatchObject({ status: "published", externalId: xf.tweets.at(-1)!.id });
    expect(target(p, ACC.tiktok)).toMatchObject({ status: "published", externalId: tt.posts.at(-1)! });
    expect(xf.tweets.at(-1)!.text).toBe("Four ways on X");
    expect(graph.fbPosts.at(-1)!.message).toBe("Four ways");
    const accounts = (await app.request("GET", "/social/accounts")).body.data;
    expect(accounts.every((a: any) => a.status === "connected")).toBe(true);
  });

  test("Instagram with a mediaId is refused up front: it pulls media from URLs", async () => {
    const form = new FormData();
    form.append("file", new Blob([new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 0xff, 0xd9])], { type: "image/jpeg" }), "a.jpg");
    const up = await app.app.handle(
      new Request("http://localhost/api/public/v1/media", { method: "POST", headers: { authorization: `Bearer ${app.key}` }, body: form }),
    );
    const mediaId = ((await up.json()) as any).data.id;
    const res = await app.request("POST", "/social/posts", { body: { accountIds: [ACC.instagram], media: [{ mediaId }] } });
    expect(res.status).toBe(422);
    expect(res.body.error).toMatchObject({ code: "SOCIAL_POST_INVALID", details: [{ pointer: "/media" }] });
  });

  test("one platform refusing leaves the others published: partially_published, the refusal on its target", async () => {
    graph.fail((r) => r.method === "POST" && r.path.endsWith("/104000000000001/feed"), graphPublishErrors.invalidParameter("(#100) Invalid link"));
    const res = await app.request("POST", "/social/posts", { body: { accountIds: [ACC.x, ACC.facebook], text: "Partial day", publishNow: true } });
    await settle();
    const p = await get(res.body.data.id);
    expect(p.status).toBe("partially_published");
    expect(target(p, ACC.x).status).toBe("published");
    expect(target(p, ACC.facebook)).toMatchObject({
      status: "failed",
      externalId: null,
      error: { code: "PROVIDER_REJECTED", message: expect.stringContaining("Invalid link") },
    });
    const ev = app.emitted.filter((e) => (e.data as any).post?.id === p.id);
    expect(ev.map((e) => e.type)).toEqual(["social_post.published"]);
  });

  test("an expired token fails the target and marks the account error; the next post is refused with SOCIAL_PLATFORM_UNAVAILABLE", async () => {
    graph.fail((r) => r.path.endsWith("/feed"), graphPublishErrors.tokenExpired());
    const res = await app.request("POST", "/social/posts", { body: { accountIds: [ACC.facebook], text: "Token?", publishNow: true } });
    await settle();
    expect((await get(res.body.data.id)).status).toBe("failed");
    const fb = (await app.request("GET", "/social/accounts")).body.data.find((a: any) => a.id === ACC.facebook);
    expect(fb).toMatchObject({ status: "error", lastError: expect.stringContaining("expired") });
    const refused = await app.request("POST", "/social/posts", { body: { accountIds: [ACC.facebook], text: "again" } });
    expect(refused.body.error.code).toBe("SOCIAL_PLATFORM_UNAVAILABLE");
    // The next analytics pull that succeeds reconnects it.
    await app.deps.scheduler.tasks.get("social-analytics")!();
    expect((await app.request("GET", "/social/accounts")).body.data.find((a: any) => a.id === ACC.facebook).status).toBe("connected");
  });
});

describe("a crash between the platform's answer and our write never makes a second post", () => {
  const cases: { name: string; accountId: string; drop: () => void; count: (text: string) => number; media?: unknown[] }[] = [
    { name: "X", accountId: ACC.x, drop: () => xf.dropAfterCreate(), count: (t) => xf.tweets.filter((x) => x.text === t).length },
    {
      name: "Facebook",
      accountId: ACC.facebook,
      drop: () => graph.dropAfter((r) => r.path.endsWith("/feed")),
      count: (t) => graph.fbPosts.filter((p) => p.message === t).length,
    },
    {
      name: "Instagram",
      accountId: ACC.instagram,
      media: [IMAGE],
      drop: () => graph.dropAfter((r) => r.path.endsWith("/media_publish")),
      count: (t) => graph.igMedia.filter((m) => m.caption === t).length,
    },
    {
      name: "TikTok",
      accountId: ACC.tiktok,
      media: [VIDEO],
      drop: () => tt.dropAfter((r) => r.path.endsWith("/status/fetch/")),
      count: (t) => [...tt.publishes.values()].filter((p) => p.postInfo.title === t).length,
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const text = `Only once on ${c.name}`;
      c.drop();
      const res = await app.request("POST", "/social/posts", { body: { accountIds: [c.accountId], text, media: c.media ?? [], publishNow: true } });
      await settle();
      let p = await get(res.body.data.id);
      // The platform has the post; we have not heard: the target waits for a retry and says why.
      expect(c.count(text)).toBe(1);
      expect(target(p, c.accountId)).toMatchObject({ status: "pending", attempts: 1, error: { code: expect.any(String) } });
      await settle(1);
      p = await get(res.body.data.id);
      expect(p.status).toBe("published");
      expect(target(p, c.accountId)).toMatchObject({ status: "published", attempts: 2, error: null });
      expect(c.count(text)).toBe(1);
    });
  }

  test("a job retried after its platform id was stored publishes nothing more", async () => {
    const res = await app.request("POST", "/social/posts", { body: { accountIds: [ACC.x], text: "Stored then crashed", publishNow: true } });
    await settle();
    const p = await get(res.body.data.id);
    const before = xf.requests.length;
    // Simulate the lease of a crashed worker being reclaimed: run the handler again for the same target.
    const t = (await app.deps.db.sql("SELECT id FROM social_post_targets WHERE post_id = ?").get(p.id)) as { id: string };
    const post = (await app.deps.db.sql("SELECT run_token FROM social_posts WHERE id = ?").get(p.id)) as { run_token: string };
    await app.deps.db.sql("UPDATE social_post_targets SET status = 'publishing' WHERE id = ?").run(t.id);
    await modulesOf(app.deps).social.service.engine.handle({
      id: "j",
      type: "social.publish",
      payload: { targetId: t.id, token: post.run_token },
      attempts: 2,
      maxAttempts: 8,
      groupKey: null,
      runAt: 0,
      leaseToken: "l",
    });
    expect(xf.requests.length).toBe(before);
    expect(xf.tweets.filter((x) => x.text === "Stored then crashed")).toHaveLength(1);
    expect((await get(p.id)).targets[0]).toMatchObject({ status: "published", externalId: target(p, ACC.x).externalId });
  });
});

describe("delete and analytics against the platforms", () => {
  test("DELETE removes from X and Facebook, reports Instagram and TikTok", async () => {
    const res = await app.request("POST", "/social/posts", {
      body: {
        accountIds: ALL,
        text: "Short-lived",
        media: [IMAGE],
        overrides: { [ACC.tiktok]: { media: [VIDEO] }, [ACC.x]: { media: [] }, [ACC.facebook]: { media: [] } },
        publishNow: true,
      },
    });
    await settle();
    const p = await get(res.body.data.id);
    expect(p.status).toBe("published");
    const del = await app.request("DELETE", `/social/posts/${p.id}`);
    expect(del.status).toBe(200);
    expect(del.body.data.notRemoved.map((n: any) => n.platform).sort()).toEqual(["instagram", "tiktok"]);
    expect(xf.tweets.find((t) => t.id === target(p, ACC.x).externalId)!.deleted).toBe(true);
    expect(graph.fbPosts.find((f) => f.id === target(p, ACC.facebook).externalId)!.deleted).toBe(true);
  });

  test("the analytics pull reads every platform into the tables; handles appear on the accounts", async () => {
    await app.deps.scheduler.tasks.get("social-analytics")!();
    const accounts = (await app.request("GET", "/social/accounts")).body.data;
    expect(Object.fromEntries(accounts.map((a: any) => [a.platform, a.handle]))).toEqual({
      instagram: "ourshop.ig",
      facebook: "ourshop",
      x: "ourshop",
      tiktok: "ourshop.tt",
    });
    const summary = (await app.request("GET", "/social/analytics/summary")).body.data;
    expect(summary.platforms.find((p: any) => p.platform === "instagram")).toMatchObject({ followers: 4321, views: 900, reach: 600, engagements: 45 });
    expect(summary.platforms.find((p: any) => p.platform === "x").followers).toBe(1234);
    const media = (await app.request("GET", `/social/media?accountId=${ACC.x}&limit=200`)).body.data;
    const live = xf.tweets.filter((t) => !t.deleted);
    expect(media.map((m: any) => m.externalId).sort()).toEqual(live.map((t) => t.id).sort());
    const ours = media.find((m: any) => m.text === "Four ways on X");
    expect(ours.postId).not.toBeNull();
    expect(ours.metrics.views).toBe(live.find((t) => t.text === "Four ways on X")!.metrics.impression_count);
    // Requests the pull made on X: the profile with public_metrics, the timeline with public_metrics.
    const pulls = xf.requests.filter((r) => r.method === "GET" && r.path.startsWith("/2/users/")).slice(-2);
    expect(pulls.map((r) => [r.path, r.query.get("user.fields") ?? r.query.get("tweet.fields")])).toEqual([
      ["/2/users/1000000001", "public_metrics"],
      ["/2/users/1000000001/tweets", "public_metrics,created_at"],
    ]);
  });
});

describe("schedules survive a restart", () => {
  test("a post due while the appliance was down publishes once after start-up", async () => {
    const t0 = new Date("2026-05-01T08:00:00Z");
    const first = await createTestApp({ start: t0, config: { social_accounts: sandboxSocialAccounts() } });
    const res = await first.request("POST", "/social/posts", {
      body: {
        accountIds: Object.values(SOCIAL),
        text: "While you slept",
        media: [IMAGE],
        overrides: { [SOCIAL.tiktok]: { media: [VIDEO] } },
        scheduledAt: "2026-05-01T08:00:02Z",
      },
    });
    expect(res.status).toBe(201);
    await first.close({ keepData: true }); // down before it is due
    const second = await createTestApp({ start: new Date("2026-05-01T09:00:00Z"), dataDir: first.dir, config: { social_accounts: sandboxSocialAccounts() } });
    try {
      await second.deps.queue.drain();
      const p = (await second.request("GET", `/social/posts/${res.body.data.id}`)).body.data;
      expect(p.status).toBe("published");
      expect(p.targets.map((t: any) => [t.status, t.attempts])).toEqual(Array(4).fill(["published", 1]));
      const jobs = (await second.deps.db.sql("SELECT count(*) AS n FROM jobs WHERE type = 'social.publish'").get()) as { n: number };
      expect(jobs.n).toBe(0);
    } finally {
      await second.close();
    }
  });
});

describe("targets settling side by side", () => {
  test("the last two targets of a post published at the same time: the post is published once, whatever their units' order", async () => {
    const side = await createTestApp({ config: { social_accounts: sandboxSocialAccounts() } });
    try {
      const res = await side.request("POST", "/social/posts", {
        body: { accountIds: [SOCIAL.x, SOCIAL.facebook], text: "Side by side", scheduledAt: new Date(side.clock.now().getTime() + 60_000).toISOString() },
      });
      expect(res.status).toBe(201);
      const jobs = await side.deps.queue.listJobs({ type: PUBLISH_JOB });
      expect(jobs.length).toBe(2);
      // Each target's unit, once it has read the post's targets after writing its own `published`, waits for
      // the other's to get that far (at most 300 ms): with nothing ordering them, both read the other still
      // `publishing` (on PostgreSQL, where units run side by side, neither has committed yet) and the post
      // stayed `publishing`.
      const s = modulesOf(side.deps).social.service;
      let arrived = 0;
      let bothThere: () => void = () => {};
      const met = new Promise<void>((resolve) => (bothThere = resolve));
      const engine = createPublishEngine({
        repo: {
          ...s.repo,
          async targetsOf(postIds) {
            const rows = await s.repo.targetsOf(postIds);
            if (!rows.some((t) => t.status === "published")) return rows;
            if (++arrived === 2) bothThere();
            await Promise.race([met, Bun.sleep(300)]);
            return rows;
          },
        },
        unit: side.deps.db.unit,
        runtime: side.deps.social,
        events: side.deps.events,
        now: () => side.clock.now(),
        log: silentLogger,
        resolveMedia: async () => undefined,
        mediaLink: async () => "",
        onPublished: async () => {},
      });
      await Promise.all(
        jobs.map((j) =>
          engine.handle({
            id: j.id,
            type: PUBLISH_JOB,
            payload: j.payload as unknown as PublishPayload,
            attempts: 1,
            maxAttempts: 8,
            groupKey: null,
            runAt: 0,
            leaseToken: "",
          }),
        ),
      );
      expect(arrived).toBe(2);
      const p = (await side.request("GET", `/social/posts/${res.body.data.id}`)).body.data;
      expect([p.status, p.targets.map((t: any) => t.status)]).toEqual(["published", ["published", "published"]]);
      expect(eventsOf(side, "social_post.published").filter((e) => e.data.post.id === p.id).length).toBe(1);
    } finally {
      await side.close();
    }
  });
});

describe("uploaded media on Instagram: a signed public link", () => {
  test("public_url reachable: Instagram gets a signed link to the file, which serves the bytes until it expires", async () => {
    const pub = await createTestApp({
      config: {
        server: { public_url: "https://switchboard.example.com" },
        social_accounts: [
          {
            id: ACC.instagram,
            platform: "instagram",
            provider: "instagram",
            name: "IG",
            settings: { ig_user_id: "17841400000000001", access_token: "graph-token", base_url: graph.url },
          },
        ],
      },
    });
    try {
      const bytes = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 9, 9, 0xff, 0xd9]);
      const form = new FormData();
      form.append("file", new Blob([bytes], { type: "image/jpeg" }), "a.jpg");
      const up = await pub.app.handle(
        new Request("http://localhost/api/public/v1/media", { method: "POST", headers: { authorization: `Bearer ${pub.key}` }, body: form }),
      );
      const mediaId = ((await up.json()) as any).data.id;
      const res = await pub.request("POST", "/social/posts", {
        body: { accountIds: [ACC.instagram], text: "Uploaded pic", media: [{ mediaId }], publishNow: true },
      });
      expect(res.status).toBe(201);
      await pub.deps.queue.drain();
      expect((await pub.request("GET", `/social/posts/${res.body.data.id}`)).body.data.status).toBe("published");
      const create = graph.requests.filter((r) => r.method === "POST" && r.path.endsWith("/media")).at(-1)!;
      const link = new URL((create.body as any).image_url);
      expect(link.origin).toBe("https://switchboard.example.com");
      expect(link.pathname).toBe(`/hooks/social-media/${pub.company.id}/${mediaId}`);
      const served = await pub.app.handle(new Request(`http://localhost${link.pathname}${link.search}`));
      expect(served.status).toBe(200);
      expect(served.headers.get("content-type")).toBe("image/jpeg");
      expect(new Uint8Array(await served.arrayBuffer())).toEqual(bytes);
      // No API key needed, but a forged signature, another media id or an expired link get nothing.
      const forged = new URLSearchParams(link.search);
      // (Its first character changed: "AA" in place of the last two left the signature as it was whenever it
      // ended in "AA", one run in 4,096.)
      const sig = forged.get("sig")!;
      forged.set("sig", `${sig[0] === "A" ? "B" : "A"}${sig.slice(1)}`);
      expect((await pub.app.handle(new Request(`http://localhost${link.pathname}?${forged}`))).status).toBe(404);
      expect((await pub.app.handle(new Request(`http://localhost/hooks/social-media/${pub.company.id}/other${link.search}`))).status).toBe(404);
      pub.clock.advance(25 * 3_600_000);
      expect((await pub.app.handle(new Request(`http://localhost${link.pathname}${link.search}`))).status).toBe(404);
    } finally {
      await pub.close();
    }
  });
});
