/**
 * A post's metrics (issue 41 item 12): pulled once shortly after publishing (the `social.metrics` job, due
 * [social] metrics_after_publish_seconds later), shown on the post's targets, and pulled now by
 * POST /social/analytics/refresh at most once per account per refresh_interval_seconds. The real app with
 * sandbox accounts (deterministic metrics: sandboxPostMetrics) and a clock the test drives.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rowsOf, runScenarios, type Scenario } from "../../../test/helpers/scenarios";
import { IMAGE, SOCIAL, sandboxSocialAccounts } from "../../../test/helpers/social";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { sandboxPostMetrics } from "../../social-publishers/sandbox.publisher";

let app: TestApp;
const T0 = new Date("2026-03-02T10:00:00.000Z");
const OTHER = "0193a4b2-0000-7000-8000-0000000000c9";
let readOnlyKey = "";

beforeAll(async () => {
  app = await createTestApp({
    start: T0,
    config: { social_accounts: [...sandboxSocialAccounts(), { id: OTHER, company: "other", platform: "x", provider: "sandbox", name: "other's X" }] },
  });
  readOnlyKey = (await app.newKey({ name: "ro", scopes: ["social:read"] })).key;
});
afterAll(() => app.close());

const get = async (id: string) => (await app.request("GET", `/social/posts/${id}`)).body.data;
/** What the sandbox reports for a target at `now` (the pull's own arithmetic, so the test checks the wiring). */
function expected(target: { externalId: string; publishedAt: string }, now: Date) {
  const m = sandboxPostMetrics(target.externalId, new Date(target.publishedAt), now);
  return { ...m, engagements: m.likes + m.comments + m.shares, syncedAt: now.toISOString() };
}

describe("POST /social/analytics/refresh: errors and scopes", () => {
  const scenarios: Scenario[] = [
    ...rowsOf("POST", "/social/analytics/refresh", [
      {
        name: "no key → 401",
        key: null,
        body: {},
        status: 401,
        contains: { error: { code: "API_KEY_INVALID" } },
      },
      {
        name: "social:read cannot refresh → 403",
        setup(this: Scenario) {
          this.key = readOnlyKey;
        },
        body: {},
        status: 403,
        contains: { error: { code: "API_SCOPE_MISSING" } },
      },
      {
        name: "unknown post → 404",
        body: { postId: "0193a4b2-0000-7000-8000-000000000000" },
        status: 404,
        contains: { error: { code: "NOT_FOUND" } },
      },
      {
        name: "another company's account → 404",
        body: { accountId: OTHER },
        status: 404,
        contains: { error: { code: "NOT_FOUND" } },
      },
      {
        name: "postId not a string → 422 /postId",
        body: { postId: 5 },
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/postId" }] } },
      },
      {
        name: "nothing published yet → 202, nothing queued",
        body: {},
        status: 202,
        contains: { data: { queued: [], rateLimited: [] } },
      },
    ]),
  ];
  runScenarios(() => app, scenarios);
});

describe("metrics of a published post", () => {
  let id = "";

  test("publish → no metrics yet; the job due 60 s later pulls them onto GET /social/posts/{id}", async () => {
    const res = await app.request("POST", "/social/posts", {
      body: { accountIds: [SOCIAL.x, SOCIAL.instagram], text: "Fresh", media: [IMAGE], publishNow: true },
    });
    expect(res.status).toBe(201);
    id = res.body.data.id;
    expect(res.body.data.targets.map((t: any) => t.metrics)).toEqual([null, null]);
    await app.deps.queue.drain();
    const published = await get(id);
    expect(published.status).toBe("published");
    expect(published.targets.map((t: any) => t.metrics)).toEqual([null, null]); // not due yet
    // The publish event carries the post as it settled, without metrics.
    const ev = app.emitted.find((e) => e.type === "social_post.published" && (e.data as any).post.id === id)!;
    expect((ev.data as any).post.targets[0]).not.toHaveProperty("metrics");

    app.clock.advance(59_000);
    await app.deps.queue.drain();
    expect((await get(id)).targets.map((t: any) => t.metrics)).toEqual([null, null]);
    app.clock.advance(1_000);
    await app.deps.queue.drain();
    const now = app.clock.now();
    const p = await get(id);
    for (const t of p.targets) expect(t.metrics).toEqual(expected(t, now));
    expect(p.targets[0].metrics.views).toBeGreaterThan(0);
    // The list shows the same.
    const listed = (await app.request("GET", "/social/posts?limit=1")).body.data[0];
    expect(listed.targets).toEqual(p.targets);
  });

  test("refresh within the interval → 429 RATE_LIMITED with Retry-After (the publish pull counts)", async () => {
    app.clock.advance(20_000);
    const res = await app.request("POST", "/social/analytics/refresh", { body: { postId: id } });
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe("RATE_LIMITED");
    expect(res.headers.get("retry-after")).toBe("40");
  });

  test("refresh pulls now: 202 with what was queued; the job runs at once and the numbers move", async () => {
    app.clock.advance(86_400_000); // a day on: the sandbox's numbers grow with the post's age
    const before = await get(id);
    const res = await app.request("POST", "/social/analytics/refresh", { body: { postId: id }, headers: { "idempotency-key": "refresh-1" } });
    expect(res.status).toBe(202);
    // A retry with the same Idempotency-Key replays the 202 (no second pull, no 429).
    const replay = await app.request("POST", "/social/analytics/refresh", { body: { postId: id }, headers: { "idempotency-key": "refresh-1" } });
    expect(replay.status).toBe(202);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body).toEqual(res.body);
    expect(res.body.data).toEqual({
      queued: [
        { accountId: SOCIAL.x, platform: "x" },
        { accountId: SOCIAL.instagram, platform: "instagram" },
      ],
      rateLimited: [],
    });
    await app.deps.queue.drain();
    const now = app.clock.now();
    const after = await get(id);
    for (const t of after.targets) expect(t.metrics).toEqual(expected(t, now));
    expect(after.targets[0].metrics.views).toBeGreaterThan(before.targets[0].metrics.views);
  });

  test("a second refresh within the window → 429 with Retry-After; another account is still queued", async () => {
    app.clock.advance(30_000);
    const again = await app.request("POST", "/social/analytics/refresh", { body: { accountId: SOCIAL.x } });
    expect(again.status).toBe(429);
    expect(again.headers.get("retry-after")).toBe("30");
    const fb = await app.request("POST", "/social/posts", { body: { accountIds: [SOCIAL.facebook], text: "FB", publishNow: true } });
    await app.deps.queue.drain();
    expect((await get(fb.body.data.id)).status).toBe("published");
    // Company-wide: x and instagram wait, facebook (never pulled) is queued; a partial answer is 202.
    const all = await app.request("POST", "/social/analytics/refresh", { body: {} });
    expect(all.status).toBe(202);
    expect(all.body.data.queued).toEqual([{ accountId: SOCIAL.facebook, platform: "facebook" }]);
    expect(all.body.data.rateLimited.map((r: any) => [r.accountId, r.retryAt]).sort()).toEqual(
      [
        [SOCIAL.x, new Date(app.clock.now().getTime() + 30_000).toISOString()],
        [SOCIAL.instagram, new Date(app.clock.now().getTime() + 30_000).toISOString()],
      ].sort(),
    );
    await app.deps.queue.drain();
    expect((await get(fb.body.data.id)).targets[0].metrics).not.toBeNull();
    // Past the window the account can be refreshed again.
    app.clock.advance(30_000);
    expect((await app.request("POST", "/social/analytics/refresh", { body: { accountId: SOCIAL.x } })).status).toBe(202);
  });

  test("posts published together on one account: at most one pull a minute, every post pulled at least 60 s after it was published", async () => {
    app.clock.advance(120_000);
    await app.deps.queue.drain();
    const ids: string[] = [];
    for (const text of ["burst 1", "burst 2", "burst 3"]) {
      ids.push(
        (
          await app.request("POST", "/social/posts", {
            body: { accountIds: [SOCIAL.tiktok], media: [{ url: "https://cdn.example.com/v.mp4" }], text, publishNow: true },
          })
        ).body.data.id,
      );
      await app.deps.queue.drain();
      app.clock.advance(1_000);
    }
    const syncedAt = async () => Promise.all(ids.map(async (pid) => (await get(pid)).targets[0].metrics?.syncedAt ?? null));
    const t0 = app.clock.now().getTime() - 3_000;
    app.clock.advance(57_000); // the first post's pull is due, and shows the other two as well
    await app.deps.queue.drain();
    expect(await syncedAt()).toEqual(Array(3).fill(new Date(t0 + 60_000).toISOString()));
    app.clock.advance(5_000); // the later posts' jobs wait for the account's next minute
    await app.deps.queue.drain();
    expect(await syncedAt()).toEqual(Array(3).fill(new Date(t0 + 60_000).toISOString()));
    app.clock.advance(55_000); // one pull serves both
    await app.deps.queue.drain();
    expect(await syncedAt()).toEqual(Array(3).fill(new Date(t0 + 120_000).toISOString()));
    app.clock.advance(300_000);
    await app.deps.queue.drain();
    expect(await syncedAt()).toEqual(Array(3).fill(new Date(t0 + 120_000).toISOString()));
  });
});
