/** The audience count's shards and worker threads give the inline count's numbers, fact by fact. */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { audienceFactCounts, countSource } from "./contacts.audience";
import { countInWorker, type CountQuery } from "./audience-count";
import { factGroups } from "./audience-facts.repository";
import { audienceStore } from "./audience.repository";
import { TEST_ENGINE } from "../../../test/helpers/test-app";

let app: TestApp;
let q: CountQuery;
const H = 3_600_000;
/** The count on the instance's own connection (SQLite) or pool (PostgreSQL): what the workers must agree with. */
const inline = (query: CountQuery) => audienceStore(app.deps.db).countCodes(query);
/** SQLite counts on worker threads; PostgreSQL on the instance's pool (the server does the work). */
const workers = TEST_ENGINE === "sqlite";
beforeAll(async () => {
  app = await createTestApp();
  const now = app.deps.now().getTime();
  // 40 contacts on a tag, spread over every fact: identity (verified / pending / none), blocked, consent,
  // and (through the sandbox's inbound hook) a last inbound message inside or outside 24 h.
  for (let i = 0; i < 40; i++) {
    const identities =
      i % 5 === 0 ? [{ channel: "email", value: `n${i}@example.com` }] : [{ channel: "instagram", value: i % 7 === 0 ? `@pending_${i}` : `ig_${i}` }];
    const res = await app.request("POST", "/contacts", { body: { identities, tags: ["t"], optIn: i % 3 !== 0 } });
    expect(res.status).toBeLessThan(300);
    if (i % 4 === 0) expect((await app.request("PATCH", `/contacts/${res.body.data.contact.id}`, { body: { blocked: true } })).status).toBe(200);
  }
  const tag = (await app.deps.db.sql("SELECT id FROM tags WHERE name = 't'").get()) as { id: string };
  const account = (await app.deps.db.sql("SELECT DISTINCT channel_account_id AS a FROM contact_channel_state").get()) as { a: string } | null;
  q = {
    companyId: app.company.id,
    channel: "instagram",
    channelAccountId: account?.a ?? "none",
    since: now - 24 * H,
    tagIds: [tag.id],
    match: "any",
    shard: null,
  };
});
afterAll(() => app.close());

test("two shards add up to the whole, and the whole covers every member once", async () => {
  const whole = await inline(q);
  const halves = await Promise.all([0, 1].map((index) => inline({ ...q, shard: { of: 2, index } })));
  expect(halves[0]!.map((n, k) => n + halves[1]![k]!)).toEqual(whole);
  expect(whole.reduce((a, b) => a + b, 0)).toBe(40);
  expect(halves.every((h) => h.some((n) => n > 0))).toBe(true);
  const groups = factGroups(whole);
  expect(groups.filter((g) => g.blocked).reduce((a, g) => a + g.n, 0)).toBe(10);
  expect(groups.filter((g) => g.identityStatus === null).reduce((a, g) => a + g.n, 0)).toBe(8);
});

test.skipIf(!workers)("a worker thread counts its shard on its own connection", async () => {
  const shard = { of: 2, index: 1 };
  const source = countSource(app.deps.db);
  expect(source).toEqual({ file: expect.stringMatching(/switchboard\.db$/) });
  expect(await countInWorker(source!, { ...q, shard })).toEqual(await inline({ ...q, shard }));
});

test("audienceFactCounts uses the workers (no fallback) and agrees with the inline count", async () => {
  const fallbacks: unknown[] = [];
  const groups = await audienceFactCounts({
    db: app.deps.db,
    companyId: q.companyId,
    audience: { type: "tags", tagIds: q.tagIds, match: "any" },
    channel: q.channel,
    channelAccountId: q.channelAccountId,
    since: q.since,
    onFallback: (e) => fallbacks.push(e),
  });
  expect(fallbacks).toEqual([]);
  expect(groups).toEqual(factGroups(await inline(q)));
});

test.skipIf(!workers)("a worker that cannot open the database falls back to the event loop", async () => {
  await expect(countInWorker({ file: "/nonexistent/dir/switchboard.db" }, q)).rejects.toThrow();
  const fallbacks: unknown[] = [];
  const db = Object.assign(Object.create(app.deps.db), {
    $client: Object.assign(Object.create(app.deps.db.$client), { filename: "/nonexistent/dir/switchboard.db" }),
  });
  const groups = await audienceFactCounts({
    db,
    companyId: q.companyId,
    audience: { type: "tags", tagIds: q.tagIds, match: "any" },
    channel: q.channel,
    channelAccountId: q.channelAccountId,
    since: q.since,
    onFallback: (e) => fallbacks.push(e),
  });
  expect(fallbacks).toHaveLength(1);
  expect(groups).toEqual(factGroups(await inline(q)));
});

test("several tags, any and all: each member counted once, the blocked ones among them (and only them) apart", async () => {
  // Last: it adds members to tag t. 6 contacts on u alone (3 blocked), 4 on t and u (1 blocked).
  for (let i = 0; i < 10; i++) {
    const res = await app.request("POST", "/contacts", {
      body: { identities: [{ channel: "instagram", value: `ig_multi_${i}` }], tags: i < 6 ? ["u"] : ["t", "u"], optIn: true },
    });
    expect(res.status).toBeLessThan(300);
    if (i % 2 === 0 && i <= 6) expect((await app.request("PATCH", `/contacts/${res.body.data.contact.id}`, { body: { blocked: true } })).status).toBe(200);
  }
  const u = ((await app.deps.db.sql("SELECT id FROM tags WHERE name = 'u'").get()) as { id: string }).id;
  const blockedOf = (n: number[]) =>
    factGroups(n)
      .filter((g) => g.blocked)
      .reduce((a, g) => a + g.n, 0);
  const total = (n: number[]) => n.reduce((a, b) => a + b, 0);
  for (const [match, members, blocked] of [
    ["any", 50, 14],
    ["all", 4, 1],
  ] as const) {
    const mq = { ...q, tagIds: [q.tagIds[0]!, u], match };
    const whole = await inline(mq);
    const halves = await Promise.all([0, 1].map((index) => inline({ ...mq, shard: { of: 2, index } })));
    expect([match, total(whole), blockedOf(whole)]).toEqual([match, members, blocked]);
    expect(halves[0]!.map((n, k) => n + halves[1]![k]!)).toEqual(whole);
  }
});
