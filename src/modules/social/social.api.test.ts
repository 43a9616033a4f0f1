/**
 * API scenarios of /social: every route and every error code of DESIGN §11, against the real app with
 * sandbox accounts (one per platform) and a clock the test drives.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { rowsOf, runScenarios, type Scenario } from "../../../test/helpers/scenarios";
import { IMAGE, SOCIAL, sandboxSocialAccounts, VIDEO } from "../../../test/helpers/social";
import { BASE, createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { jsonText } from "../../db/dialect";

let app: TestApp;
const T0 = new Date("2026-03-02T10:00:00.000Z");
const ALL = [SOCIAL.instagram, SOCIAL.facebook, SOCIAL.x, SOCIAL.tiktok];
// NB! The clock only moves forward: the rate limiter's token bucket does not expect time to run backwards.
const future = (ms = 3_600_000) => new Date(app.clock.now().getTime() + ms).toISOString();
let readOnlyKey = "";
let noSocialKey = "";

beforeAll(async () => {
  app = await createTestApp({
    start: T0,
    config: {
      social_accounts: [
        ...sandboxSocialAccounts(),
        { id: "0193a4b2-0000-7000-8000-0000000000c9", company: "other", platform: "x", provider: "sandbox", name: "other's X" },
      ],
    },
  });
  readOnlyKey = (await app.newKey({ name: "ro", scopes: ["social:read"] })).key;
  noSocialKey = (await app.newKey({ name: "none", scopes: ["contacts:read"] })).key;
});
afterAll(() => app.close());

const post = (body: unknown) => app.request("POST", "/social/posts", { body });
/** The keys are made in beforeAll: a scenario's setup puts one in place (runScenarios reads `key` after setup). */
const withKey = (key: () => string) => ({
  setup(this: Scenario) {
    this.key = key();
  },
});
const get = async (id: string) => (await app.request("GET", `/social/posts/${id}`)).body.data;
const invalid = (pointer: string, code = "SOCIAL_POST_INVALID") => ({ error: { code, details: [{ pointer }] } });

describe("validation and errors", () => {
  const scenarios: Scenario[] = [
    { name: "accounts: no key → 401", method: "GET", url: "/social/accounts", key: null, status: 401, contains: { error: { code: "API_KEY_INVALID" } } },
    {
      name: "accounts: key without social scope → 403",
      method: "GET",
      url: "/social/accounts",
      ...withKey(() => noSocialKey),
      status: 403,
      contains: { error: { code: "API_SCOPE_MISSING" } },
    },
    {
      name: "accounts: the company's four sandbox accounts, connected, with limits",
      method: "GET",
      url: "/social/accounts",
      status: 200,
      check: (res) => {
        expect(res.body.data.map((a: any) => a.id).sort()).toEqual([...ALL].sort());
        const x = res.body.data.find((a: any) => a.platform === "x");
        expect(x).toMatchObject({
          provider: "sandbox",
          status: "connected",
          handle: null,
          limits: { textMax: 280, mediaMax: 4, needsMedia: false, video: true },
        });
        const ig = res.body.data.find((a: any) => a.platform === "instagram");
        expect(ig.limits).toEqual({ textMax: 2200, mediaMax: 10, needsMedia: true, video: true });
      },
    },
    ...rowsOf("POST", "/social/posts", [
      {
        name: "create: no accountIds → 422 VALIDATION_FAILED /accountIds",
        body: { text: "x" },
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED" } },
      },
      {
        name: "create: unknown account → 422 naming /accountIds/1",
        body: { accountIds: [SOCIAL.x, "0193a4b2-0000-7000-8000-00000000dead"], text: "hi" },
        status: 422,
        contains: invalid("/accountIds/1", "VALIDATION_FAILED"),
      },
      {
        name: "create: another company's account is unknown → 422 /accountIds/0",
        body: { accountIds: ["0193a4b2-0000-7000-8000-0000000000c9"], text: "hi" },
        status: 422,
        contains: invalid("/accountIds/0", "VALIDATION_FAILED"),
      },
      {
        name: "create: unknown mediaId → 422 /media/0/mediaId",
        body: { accountIds: [SOCIAL.x], media: [{ mediaId: "nope" }] },
        status: 422,
        contains: invalid("/media/0/mediaId", "VALIDATION_FAILED"),
      },
      {
        name: "create: a loopback media URL → 422 /media/0/url",
        body: { accountIds: [SOCIAL.x], media: [{ url: "http://127.0.0.1:9/a.png" }] },
        status: 422,
        contains: invalid("/media/0/url", "VALIDATION_FAILED"),
      },
      {
        name: "create: a metadata media URL → 422 /media/0/url",
        body: { accountIds: [SOCIAL.x], media: [{ url: "http://metadata.google.internal/a.png" }] },
        status: 422,
        contains: invalid("/media/0/url", "VALIDATION_FAILED"),
      },
      {
        name: "create: a link-local override media URL → 422 pointer to it",
        body: { accountIds: [SOCIAL.x], text: "a", overrides: { [SOCIAL.x]: { media: [{ url: "http://169.254.169.254/a.png" }] } } },
        status: 422,
        contains: invalid(`/overrides/${SOCIAL.x}/media/0/url`, "VALIDATION_FAILED"),
      },
      {
        name: "create: override of an account not in accountIds → 422",
        body: { accountIds: [SOCIAL.x], text: "a", overrides: { [SOCIAL.facebook]: { text: "b" } } },
        status: 422,
        contains: invalid(`/overrides/${SOCIAL.facebook}`, "VALIDATION_FAILED"),
      },
      {
        name: "create: scheduledAt in the past → 422 /scheduledAt",
        body: { accountIds: [SOCIAL.x], text: "a", scheduledAt: "2026-03-02T09:00:00Z" },
        status: 422,
        contains: invalid("/scheduledAt", "VALIDATION_FAILED"),
      },
      {
        name: "create: scheduledAt and publishNow → 422 /publishNow",
        body: { accountIds: [SOCIAL.x], text: "a", scheduledAt: "2026-03-02T12:00:00Z", publishNow: true },
        status: 422,
        contains: invalid("/publishNow", "VALIDATION_FAILED"),
      },
      {
        name: "X: 281 characters → SOCIAL_POST_INVALID /text",
        body: { accountIds: [SOCIAL.x], text: "a".repeat(281) },
        status: 422,
        contains: invalid("/text"),
      },
      {
        name: "X: a long URL counts 23 → 280 weighted characters pass",
        body: { accountIds: [SOCIAL.x], text: `${"a".repeat(256)} https://example.com/${"p".repeat(100)}` },
        status: 201,
        contains: { data: { status: "draft" } },
      },
      {
        name: "X: the override's text breaks the rule → pointer names the override",
        body: { accountIds: [SOCIAL.x, SOCIAL.facebook], text: "short", overrides: { [SOCIAL.x]: { text: "b".repeat(300) } } },
        status: 422,
        contains: invalid(`/overrides/${SOCIAL.x}/text`),
      },
      {
        name: "X: 5 images → /media",
        body: { accountIds: [SOCIAL.x], media: Array(5).fill(IMAGE) },
        status: 422,
        contains: invalid("/media"),
      },
      {
        name: "X: video with an image → /media",
        body: { accountIds: [SOCIAL.x], media: [VIDEO, IMAGE] },
        status: 422,
        contains: invalid("/media"),
      },
      {
        name: "Instagram: no media → /media",
        body: { accountIds: [SOCIAL.instagram], text: "hi" },
        status: 422,
        contains: invalid("/media"),
      },
      {
        name: "Instagram: 2,201 characters → /text",
        body: { accountIds: [SOCIAL.instagram], text: "é".repeat(2201), media: [IMAGE] },
        status: 422,
        contains: invalid("/text"),
      },
      {
        name: "TikTok: an image → /media (needs one video)",
        body: { accountIds: [SOCIAL.tiktok], media: [IMAGE] },
        status: 422,
        contains: invalid("/media"),
      },
      {
        name: "TikTok: a URL declared a video passes",
        body: { accountIds: [SOCIAL.tiktok], media: [{ url: "https://cdn.example.com/stream", kind: "video" }] },
        status: 201,
      },
      {
        name: "Facebook: 11 images → /media",
        body: { accountIds: [SOCIAL.facebook], media: Array(11).fill(IMAGE) },
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED" } },
      },
      {
        name: "Facebook: a video → /media",
        body: { accountIds: [SOCIAL.facebook], media: [VIDEO] },
        status: 422,
        contains: invalid("/media"),
      },
      {
        name: "every broken rule is listed, one per target",
        body: { accountIds: [SOCIAL.instagram, SOCIAL.tiktok, SOCIAL.x], text: "z".repeat(300) },
        status: 422,
        check: (res) => {
          expect(res.body.error.code).toBe("SOCIAL_POST_INVALID");
          expect(res.body.error.details.map((d: any) => d.pointer)).toEqual(["/media", "/media", "/text"]);
        },
      },
      {
        name: "requiresApproval with publishNow → 409 SOCIAL_APPROVAL_REQUIRED",
        body: { accountIds: [SOCIAL.x], text: "a", publishNow: true, requiresApproval: true },
        status: 409,
        contains: { error: { code: "SOCIAL_APPROVAL_REQUIRED" } },
      },
      {
        name: "requiresApproval with scheduledAt → 409 SOCIAL_APPROVAL_REQUIRED",
        body: { accountIds: [SOCIAL.x], text: "a", scheduledAt: "2026-03-02T12:00:00Z", requiresApproval: true },
        status: 409,
        contains: { error: { code: "SOCIAL_APPROVAL_REQUIRED" } },
      },
      {
        name: "read-only key cannot create → 403",
        ...withKey(() => readOnlyKey),
        body: { accountIds: [SOCIAL.x], text: "a" },
        status: 403,
        contains: { error: { code: "API_SCOPE_MISSING" } },
      },
    ]),
    {
      name: "detail of an unknown post → 404",
      method: "GET",
      url: "/social/posts/0193a4b2-0000-7000-8000-000000000000",
      status: 404,
      contains: { error: { code: "NOT_FOUND" } },
    },
    { name: "delete of an unknown post → 404", method: "DELETE", url: "/social/posts/0193a4b2-0000-7000-8000-000000000000", status: 404 },
    {
      name: "schedule of an unknown post → 404",
      method: "POST",
      url: "/social/posts/0193a4b2-0000-7000-8000-000000000000/schedule",
      body: { publishNow: true },
      status: 404,
    },
    { name: "cancel of an unknown post → 404", method: "POST", url: "/social/posts/0193a4b2-0000-7000-8000-000000000000/cancel", status: 404 },
    { name: "PATCH of an unknown post → 404", method: "PATCH", url: "/social/posts/0193a4b2-0000-7000-8000-000000000000", body: { text: "a" }, status: 404 },
    {
      name: "PATCH with a text that is not a string → 422 /text",
      method: "PATCH",
      url: "/social/posts/0193a4b2-0000-7000-8000-000000000000",
      body: { text: 5 },
      status: 422,
      contains: invalid("/text", "VALIDATION_FAILED"),
    },
    { name: "approve of an unknown post → 404", method: "POST", url: "/social/posts/0193a4b2-0000-7000-8000-000000000000/approve", status: 404 },
    {
      name: "list: bad limit → 422 query:limit",
      method: "GET",
      url: "/social/posts?limit=0",
      status: 422,
      contains: invalid("query:limit", "VALIDATION_FAILED"),
    },
    { name: "list: bad status → 422", method: "GET", url: "/social/posts?status=lost", status: 422, contains: { error: { code: "VALIDATION_FAILED" } } },
    {
      name: "analytics of an unknown platform → 404",
      method: "GET",
      url: "/social/analytics/myspace",
      status: 404,
      contains: { error: { code: "NOT_FOUND" } },
    },
    {
      name: "analytics: from after to → 422 query:from",
      method: "GET",
      url: "/social/analytics/summary?from=2026-03-02&to=2026-03-01",
      status: 422,
      contains: invalid("query:from", "VALIDATION_FAILED"),
    },
    { name: "analytics: another platform's account → 404", method: "GET", url: `/social/analytics/x?accountId=${SOCIAL.tiktok}`, status: 404 },
    { name: "media: another company's account → 404", method: "GET", url: "/social/media?accountId=0193a4b2-0000-7000-8000-0000000000c9", status: 404 },
  ];
  runScenarios(() => app, scenarios);
});

describe("post lifecycle", () => {
  test("draft → 201 with a pending target per account; detail and list show it", async () => {
    const res = await post({ accountIds: [SOCIAL.x, SOCIAL.facebook], text: "Hello" });
    expect(res.status).toBe(201);
    expect(res.body.data).toMatchObject({ status: "draft", text: "Hello", scheduledAt: null, requiresApproval: false, approvedAt: null, publishedAt: null });
    expect(res.body.data.targets).toEqual([
      { accountId: SOCIAL.x, platform: "x", status: "pending", externalId: null, url: null, error: null, attempts: 0, publishedAt: null, metrics: null },
      {
        accountId: SOCIAL.facebook,
        platform: "facebook",
        status: "pending",
        externalId: null,
        url: null,
        error: null,
        attempts: 0,
        publishedAt: null,
        metrics: null,
      },
    ]);
    const detail = await app.request("GET", `/social/posts/${res.body.data.id}`);
    expect(detail.body.data).toEqual(res.body.data);
    const ro = await app.request("GET", `/social/posts/${res.body.data.id}`, { key: readOnlyKey });
    expect(ro.status).toBe(200);
  });

  test("schedule → scheduled; due time publishes on every target; published event once", async () => {
    const created = await post({ accountIds: ALL, text: "Launch", media: [IMAGE], overrides: { [SOCIAL.tiktok]: { media: [VIDEO] } } });
    const id = created.body.data.id;
    const at = future(60_000);
    const scheduled = await app.request("POST", `/social/posts/${id}/schedule`, { body: { scheduledAt: at } });
    expect(scheduled.status).toBe(200);
    expect(scheduled.body.data).toMatchObject({ status: "scheduled", scheduledAt: at });
    await app.deps.queue.drain();
    expect((await app.request("GET", `/social/posts/${id}`)).body.data.status).toBe("scheduled"); // not due yet
    app.clock.advance(61_000);
    await app.deps.queue.drain();
    const done = (await app.request("GET", `/social/posts/${id}`)).body.data;
    expect(done.status).toBe("published");
    expect(done.publishedAt).not.toBeNull();
    for (const t of done.targets) expect(t).toMatchObject({ status: "published", externalId: expect.stringMatching(/^sbx_/), error: null, attempts: 1 });
    const events = app.emitted.filter((e) => e.type.startsWith("social_post.") && (e.data as any).post.id === id);
    expect(events.map((e) => e.type)).toEqual(["social_post.published"]);
    expect((events[0]!.data as any).post.targets).toHaveLength(4);
  });

  test("publishNow: one target refused → partially_published, the others published, error {code, message}", async () => {
    const res = await post({ accountIds: [SOCIAL.x, SOCIAL.facebook], text: "ok", overrides: { [SOCIAL.x]: { text: "nope #fail" } }, publishNow: true });
    expect(res.status).toBe(201);
    expect(res.body.data.status).toBe("publishing");
    await app.deps.queue.drain();
    const p = (await app.request("GET", `/social/posts/${res.body.data.id}`)).body.data;
    expect(p.status).toBe("partially_published");
    expect(p.targets.find((t: any) => t.accountId === SOCIAL.x)).toMatchObject({
      status: "failed",
      externalId: null,
      error: { code: "SANDBOX_REJECTED", message: expect.any(String) },
    });
    expect(p.targets.find((t: any) => t.accountId === SOCIAL.facebook)).toMatchObject({ status: "published", error: null });
    const ev = app.emitted.filter((e) => (e.data as any).post?.id === p.id);
    expect(ev.map((e) => e.type)).toEqual(["social_post.published"]);
    expect((ev[0]!.data as any).post.status).toBe("partially_published");
  });

  test("every target refused → failed and social_post.failed", async () => {
    const res = await post({ accountIds: [SOCIAL.x], text: "#fail", publishNow: true });
    await app.deps.queue.drain();
    const p = (await app.request("GET", `/social/posts/${res.body.data.id}`)).body.data;
    expect(p.status).toBe("failed");
    expect(app.emitted.filter((e) => (e.data as any).post?.id === p.id).map((e) => e.type)).toEqual(["social_post.failed"]);
  });

  test("a retryable failure is visible on the target while it waits, then publishes once", async () => {
    const res = await post({ accountIds: [SOCIAL.facebook], text: "#flaky", publishNow: true });
    await app.deps.queue.drain();
    let p = (await app.request("GET", `/social/posts/${res.body.data.id}`)).body.data;
    expect(p.status).toBe("publishing");
    expect(p.targets[0]).toMatchObject({ status: "pending", attempts: 1, error: { code: "SANDBOX_UNAVAILABLE" } });
    app.clock.advance(60_000);
    await app.deps.queue.drain();
    p = (await app.request("GET", `/social/posts/${res.body.data.id}`)).body.data;
    expect(p.targets[0]).toMatchObject({ status: "published", attempts: 2, error: null });
  });

  test("a target whose job died unexpectedly is failed with the job's error by the watchdog, and the post settles", async () => {
    const res = await post({ accountIds: [SOCIAL.x, SOCIAL.facebook], text: "watchdog", publishNow: true });
    const id = res.body.data.id;
    // The X job dies outside the handler (as after repeated database errors); Facebook publishes.
    const targets = (await app.deps.db.sql("SELECT id, account_id FROM social_post_targets WHERE post_id = ?").all(id)) as {
      id: string;
      account_id: string;
    }[];
    const xTarget = targets.find((t) => t.account_id === SOCIAL.x)!.id;
    await app.deps.db
      .sql(
        `UPDATE jobs SET status = 'dead', last_error = 'disk I/O error' WHERE type = 'social.publish' AND ${jsonText(app.deps.db.engine, "payload", ["targetId"])} = ?`,
      )
      .run(xTarget);
    await app.deps.queue.drain();
    expect((await get(id)).status).toBe("publishing");
    await app.deps.scheduler.tasks.get("social-dead-jobs")!();
    const p = await get(id);
    expect(p.status).toBe("partially_published");
    expect(p.targets.find((t: any) => t.accountId === SOCIAL.x)).toMatchObject({
      status: "failed",
      error: { code: "PUBLISH_GAVE_UP", message: "disk I/O error" },
    });
    expect(await app.deps.scheduler.tasks.get("social-dead-jobs")!()).toBe(0); // idempotent
  });

  test("approval: schedule without approval → 409; approve → draft; then schedule works", async () => {
    const res = await post({ accountIds: [SOCIAL.x], text: "needs a yes", requiresApproval: true });
    expect(res.body.data.status).toBe("pending_approval");
    const id = res.body.data.id;
    const refused = await app.request("POST", `/social/posts/${id}/schedule`, { body: { publishNow: true } });
    expect(refused.status).toBe(409);
    expect(refused.body.error.code).toBe("SOCIAL_APPROVAL_REQUIRED");
    const approved = await app.request("POST", `/social/posts/${id}/approve`);
    expect(approved.body.data).toMatchObject({ status: "draft", approvedAt: app.clock.now().toISOString() });
    const scheduled = await app.request("POST", `/social/posts/${id}/schedule`, { body: { scheduledAt: future() } });
    expect(scheduled.body.data.status).toBe("scheduled");
  });

  test("PATCH: changes content and accounts, re-checks the rules, withdraws an approval; refused once published", async () => {
    const res = await post({ accountIds: [SOCIAL.x], text: "v1", requiresApproval: true });
    const id = res.body.data.id;
    await app.request("POST", `/social/posts/${id}/approve`);
    const tooLong = await app.request("PATCH", `/social/posts/${id}`, { body: { text: "y".repeat(281) } });
    expect(tooLong.status).toBe(422);
    expect(tooLong.body.error).toMatchObject({ code: "SOCIAL_POST_INVALID", details: [{ pointer: "/text" }] });
    const needsMedia = await app.request("PATCH", `/social/posts/${id}`, { body: { accountIds: [SOCIAL.x, SOCIAL.instagram] } });
    expect(needsMedia.body.error).toMatchObject({ code: "SOCIAL_POST_INVALID", details: [{ pointer: "/media" }] });
    const edited = await app.request("PATCH", `/social/posts/${id}`, { body: { text: "v2", accountIds: [SOCIAL.x, SOCIAL.facebook] } });
    expect(edited.status).toBe(200);
    expect(edited.body.data).toMatchObject({ text: "v2", status: "pending_approval", approvedAt: null });
    expect(edited.body.data.targets.map((t: any) => [t.accountId, t.status])).toEqual([
      [SOCIAL.x, "pending"],
      [SOCIAL.facebook, "pending"],
    ]);
    await app.request("POST", `/social/posts/${id}/approve`);
    await app.request("POST", `/social/posts/${id}/schedule`, { body: { publishNow: true } });
    await app.deps.queue.drain();
    const locked = await app.request("PATCH", `/social/posts/${id}`, { body: { text: "v3" } });
    expect(locked.status).toBe(409);
    expect(locked.body.error.code).toBe("SOCIAL_POST_NOT_EDITABLE");
    expect((await get(id)).text).toBe("v2");
  });

  test("PATCH of a scheduled post without approval keeps its time: the old jobs are retired, it publishes once", async () => {
    const at = future(5000);
    const res = await post({ accountIds: [SOCIAL.x], text: "before", scheduledAt: at });
    const edited = await app.request("PATCH", `/social/posts/${res.body.data.id}`, { body: { text: "after", accountIds: [SOCIAL.x, SOCIAL.facebook] } });
    expect(edited.body.data).toMatchObject({ status: "scheduled", scheduledAt: at, text: "after" });
    app.clock.advance(6000);
    await app.deps.queue.drain();
    const p = await get(res.body.data.id);
    expect(p.status).toBe("published");
    expect(p.targets.map((t: any) => [t.accountId, t.status, t.attempts])).toEqual([
      [SOCIAL.x, "published", 1],
      [SOCIAL.facebook, "published", 1],
    ]);
  });

  test("schedule body: neither field → 422 /scheduledAt", async () => {
    const res = await post({ accountIds: [SOCIAL.x], text: "a" });
    const bad = await app.request("POST", `/social/posts/${res.body.data.id}/schedule`, { body: {} });
    expect(bad.status).toBe(422);
    expect(bad.body.error.details[0].pointer).toBe("/scheduledAt");
  });

  test("cancel a scheduled post: it never publishes; cancel again → 409 CONFLICT; re-schedule revives it", async () => {
    const res = await post({ accountIds: [SOCIAL.x], text: "maybe", scheduledAt: future(1000) });
    const id = res.body.data.id;
    const canceled = await app.request("POST", `/social/posts/${id}/cancel`);
    expect(canceled.body.data.status).toBe("canceled");
    expect(canceled.body.data.targets[0].status).toBe("canceled");
    app.clock.advance(2000);
    await app.deps.queue.drain();
    expect((await app.request("GET", `/social/posts/${id}`)).body.data.status).toBe("canceled");
    const again = await app.request("POST", `/social/posts/${id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("CONFLICT");
    const revived = await app.request("POST", `/social/posts/${id}/schedule`, { body: { publishNow: true } });
    expect(revived.body.data.status).toBe("publishing");
    await app.deps.queue.drain();
    expect((await app.request("GET", `/social/posts/${id}`)).body.data.status).toBe("published");
  });

  test("re-scheduling retires the earlier schedule's jobs: published once, at the new time", async () => {
    const res = await post({ accountIds: [SOCIAL.x], text: "moved", scheduledAt: future(1000) });
    const id = res.body.data.id;
    await app.request("POST", `/social/posts/${id}/schedule`, { body: { scheduledAt: future(10_000) } });
    app.clock.advance(2000);
    await app.deps.queue.drain();
    expect((await app.request("GET", `/social/posts/${id}`)).body.data.status).toBe("scheduled");
    app.clock.advance(9000);
    await app.deps.queue.drain();
    const p = (await app.request("GET", `/social/posts/${id}`)).body.data;
    expect(p.status).toBe("published");
    expect(p.targets[0].attempts).toBe(1);
  });

  test("a published post is not editable: schedule, cancel, approve → 409 SOCIAL_POST_NOT_EDITABLE", async () => {
    const res = await post({ accountIds: [SOCIAL.x], text: "done", publishNow: true });
    const id = res.body.data.id;
    // While publishing, DELETE is refused too.
    const busy = await app.request("DELETE", `/social/posts/${id}`);
    expect(busy.status).toBe(409);
    expect(busy.body.error.code).toBe("SOCIAL_POST_NOT_EDITABLE");
    await app.deps.queue.drain();
    for (const [path, body] of [
      ["schedule", { publishNow: true }],
      ["cancel", undefined],
      ["approve", undefined],
    ] as const) {
      const r = await app.request("POST", `/social/posts/${id}/${path}`, { body });
      expect(r.status).toBe(409);
      expect(r.body.error.code).toBe("SOCIAL_POST_NOT_EDITABLE");
    }
  });

  test("DELETE: a draft is gone; a published post is removed where the platform allows it, the rest reported", async () => {
    const draft = await post({ accountIds: [SOCIAL.x], text: "bye" });
    const del = await app.request("DELETE", `/social/posts/${draft.body.data.id}`);
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ id: draft.body.data.id, deleted: true, notRemoved: [] });
    expect((await app.request("GET", `/social/posts/${draft.body.data.id}`)).status).toBe(404);

    const pub = await post({ accountIds: [SOCIAL.x, SOCIAL.instagram], text: "gone soon", media: [IMAGE], publishNow: true });
    await app.deps.queue.drain();
    const del2 = await app.request("DELETE", `/social/posts/${pub.body.data.id}`);
    expect(del2.status).toBe(200);
    expect(del2.body.data.notRemoved).toEqual([
      { accountId: SOCIAL.instagram, platform: "instagram", externalId: expect.stringMatching(/^sbx_/), reason: expect.stringContaining("does not allow") },
    ]);
  });

  test("an account that is not connected → 422 SOCIAL_PLATFORM_UNAVAILABLE naming it", async () => {
    app.deps.social.setStatus(SOCIAL.facebook, "error", "token expired");
    try {
      const res = await post({ accountIds: [SOCIAL.x, SOCIAL.facebook], text: "a" });
      expect(res.status).toBe(422);
      expect(res.body.error).toMatchObject({
        code: "SOCIAL_PLATFORM_UNAVAILABLE",
        details: [{ pointer: "/accountIds/1", message: expect.stringContaining("token expired") }],
      });
      const accounts = await app.request("GET", "/social/accounts");
      expect(accounts.body.data.find((a: any) => a.id === SOCIAL.facebook)).toMatchObject({ status: "error", lastError: "token expired" });
    } finally {
      app.deps.social.setStatus(SOCIAL.facebook, "connected");
    }
  });

  test("media from POST /media: usable in a post, and MEDIA_IN_USE while the post is scheduled", async () => {
    const form = new FormData();
    form.append("file", new Blob([new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 16, 0x4a, 0x46, 0x49, 0x46, 0, 1, 0xff, 0xd9])], { type: "image/jpeg" }), "a.jpg");
    const up = await app.app.handle(new Request(`${BASE}/media`, { method: "POST", headers: { authorization: `Bearer ${app.key}` }, body: form }));
    const mediaId = ((await up.json()) as any).data.id;
    const res = await post({ accountIds: [SOCIAL.instagram], text: "pic", media: [{ mediaId }], scheduledAt: future() });
    expect(res.status).toBe(201);
    expect(res.body.data.media).toEqual([{ mediaId, kind: "image" }]);
    const pdf = new FormData();
    pdf.append("file", new Blob([new TextEncoder().encode("%PDF-1.4\n%%EOF\n")], { type: "application/pdf" }), "a.pdf");
    const pdfId = (
      (await (await app.app.handle(new Request(`${BASE}/media`, { method: "POST", headers: { authorization: `Bearer ${app.key}` }, body: pdf }))).json()) as any
    ).data.id;
    const refused = await post({ accountIds: [SOCIAL.x], media: [{ mediaId: pdfId }] });
    expect(refused.body.error).toMatchObject({
      code: "VALIDATION_FAILED",
      details: [{ pointer: "/media/0/mediaId", message: expect.stringContaining("application/pdf") }],
    });
    const del = await app.request("DELETE", `/media/${mediaId}`);
    expect(del.status).toBe(409);
    expect(del.body.error.code).toBe("MEDIA_IN_USE");
    await app.request("POST", `/social/posts/${res.body.data.id}/cancel`);
    expect((await app.request("DELETE", `/media/${mediaId}`)).status).toBe(200);
  });

  test("list: newest first, filters and cursor", async () => {
    const a = await post({ accountIds: [SOCIAL.facebook], text: "L1", scheduledAt: "2026-04-01T10:00:00Z" });
    const b = await post({ accountIds: [SOCIAL.tiktok], media: [VIDEO], scheduledAt: "2026-04-02T10:00:00Z" });
    const byAccount = await app.request("GET", `/social/posts?accountId=${SOCIAL.tiktok}&status=scheduled`);
    expect(byAccount.body.data.map((p: any) => p.id)).toContain(b.body.data.id);
    expect(byAccount.body.data.map((p: any) => p.id)).not.toContain(a.body.data.id);
    const range = await app.request("GET", "/social/posts?from=2026-04-01T00:00:00Z&to=2026-04-02T00:00:00Z");
    expect(range.body.data.map((p: any) => p.id)).toEqual([a.body.data.id]);
    const page1 = await app.request("GET", "/social/posts?limit=1");
    expect(page1.body.data[0].id).toBe(b.body.data.id);
    expect(page1.body.page).toEqual({ nextCursor: expect.any(String), limit: 1 });
    const page2 = await app.request("GET", `/social/posts?limit=1&cursor=${page1.body.page.nextCursor}`);
    expect(page2.body.data[0].id).toBe(a.body.data.id);
    expect((await app.request("GET", "/social/posts?from=yesterday")).status).toBe(422);
  });
});

describe("analytics", () => {
  test("pulled into tables by the job; summary, platform series, top posts and media list read them", async () => {
    // The posts published above were pulled by their social.metrics jobs; a request never pulls (numbers move only with a pull).
    const before = await app.request("GET", "/social/analytics/summary");
    expect((await app.request("GET", "/social/analytics/summary")).body).toEqual(before.body);
    await app.deps.scheduler.tasks.get("social-analytics")!();
    const summary = await app.request("GET", "/social/analytics/summary");
    expect(summary.status).toBe(200);
    expect(summary.body.data).toMatchObject({ from: "2026-02-01", to: "2026-03-02" });
    expect(summary.body.data.platforms.map((p: any) => p.platform)).toEqual(["instagram", "facebook", "x", "tiktok"]);
    for (const p of summary.body.data.platforms) {
      expect(p.accounts).toBe(1);
      expect(p.followers).toBeGreaterThan(0);
      expect(p.posts).toBeGreaterThan(0);
      expect(p.engagementRate).toBeCloseTo(p.engagements / p.reach, 4);
    }
    const x = await app.request("GET", `/social/analytics/x?accountId=${SOCIAL.x}`);
    expect(x.body.data.platform).toBe("x");
    expect(x.body.data.series).toHaveLength(30);
    expect(x.body.data.series[29].date).toBe("2026-03-02");
    expect(x.body.data.topPosts.length).toBeGreaterThan(0);
    const tops = x.body.data.topPosts.map((p: any) => p.metrics.engagements);
    expect(tops).toEqual([...tops].sort((m: number, n: number) => n - m));
    // Deterministic: a second pull gives the same numbers.
    await app.deps.scheduler.tasks.get("social-analytics")!();
    expect((await app.request("GET", `/social/analytics/x?accountId=${SOCIAL.x}`)).body.data).toMatchObject({ series: x.body.data.series });

    const media = await app.request("GET", `/social/media?accountId=${SOCIAL.x}&limit=3`);
    expect(media.body.data).toHaveLength(3);
    const all = [...media.body.data];
    let cursor = media.body.page.nextCursor;
    while (cursor) {
      const next = await app.request("GET", `/social/media?accountId=${SOCIAL.x}&limit=3&cursor=${cursor}`);
      all.push(...next.body.data);
      cursor = next.body.page.nextCursor;
    }
    expect(new Set(all.map((m) => m.externalId)).size).toBe(all.length);
    expect(all.some((m) => m.postId === null)).toBe(true); // posts not made here
    expect(all.some((m) => m.postId !== null)).toBe(true); // and ours, linked to our post
  });
});
