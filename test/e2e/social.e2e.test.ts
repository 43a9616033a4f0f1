/**
 * Social publishing through the compiled binary: a post scheduled 2 s ahead on the four sandbox accounts
 * `init` writes, the binary stopped before it is due and started again after — the post publishes once
 * per account after start-up. And an X account on the X fake whose answer to the post is lost: the binary
 * retries, finds the post on X, and never posts twice.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { appendFileSync, rmSync } from "node:fs";
import { XFake } from "../fakes/x.fake";
import { run, serve, tempDir } from "./binary";

let dir: string;
let init: { configPath: string; apiKey: string };

beforeAll(() => {
  dir = tempDir("sb-social-e2e-");
  const r = run(["init", "--dir", dir, "--json"]);
  expect(r.code).toBe(0);
  init = JSON.parse(r.stdout);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

test("a post due while the binary is down publishes once per account after the restart", async () => {
  const headers = { authorization: `Bearer ${init.apiKey}`, "content-type": "application/json" };
  let server = await serve(init.configPath);
  let postId: string;
  let accounts: { id: string; platform: string }[];
  try {
    accounts = ((await (await fetch(`${server.url}/api/public/v1/social/accounts`, { headers })).json()) as any).data;
    expect(accounts.map((a) => a.platform).sort()).toEqual(["facebook", "instagram", "tiktok", "x"]);
    const tiktok = accounts.find((a) => a.platform === "tiktok")!.id;
    const res = await fetch(`${server.url}/api/public/v1/social/posts`, {
      method: "POST",
      headers,
      body: JSON.stringify({
        accountIds: accounts.map((a) => a.id),
        text: "Scheduled across a restart",
        media: [{ url: "https://cdn.example.com/a.jpg" }],
        overrides: { [tiktok]: { media: [{ url: "https://cdn.example.com/v.mp4" }] } },
        scheduledAt: new Date(Date.now() + 2000).toISOString(),
      }),
    });
    expect(res.status).toBe(201);
    const body = (await res.json()) as any;
    expect(body.data.status).toBe("scheduled");
    postId = body.data.id;
  } finally {
    expect(await server.stop("SIGTERM")).toBe(0);
  }
  await Bun.sleep(2500); // due while nothing runs

  server = await serve(init.configPath);
  try {
    let post: any;
    for (let i = 0; i < 100; i++) {
      post = ((await (await fetch(`${server.url}/api/public/v1/social/posts/${postId}`, { headers })).json()) as any).data;
      if (post.status !== "scheduled" && post.status !== "publishing") break;
      await Bun.sleep(100);
    }
    expect(post.status).toBe("published");
    expect(post.targets).toHaveLength(4);
    for (const t of post.targets) expect(t).toMatchObject({ status: "published", attempts: 1, externalId: expect.stringMatching(/^sbx_/) });
    expect(new Set(post.targets.map((t: any) => t.externalId)).size).toBe(4);
  } finally {
    expect(await server.stop("SIGTERM")).toBe(0);
  }
});

test("the binary never posts twice when X's answer is lost: the retry finds the post on X", async () => {
  const x = XFake.start({ userId: "1000000001" });
  const accountId = "0193a4b2-0000-7000-8000-0000000000f1";
  appendFileSync(
    init.configPath,
    `\n[[social_accounts]]\nid = "${accountId}"\ncompany = "default"\nplatform = "x"\nprovider = "x"\nname = "X on the fake"\n[social_accounts.settings]\nuser_id = "1000000001"\naccess_token = "env:SB_E2E_X_TOKEN"\nbase_url = "${x.url}"\n`,
  );
  const headers = { authorization: `Bearer ${init.apiKey}`, "content-type": "application/json" };
  const server = await serve(init.configPath, { SB_E2E_X_TOKEN: "x-user-token" });
  try {
    x.dropAfterCreate();
    const res = await fetch(`${server.url}/api/public/v1/social/posts`, {
      method: "POST",
      headers,
      body: JSON.stringify({ accountIds: [accountId], text: "Exactly once", publishNow: true }),
    });
    expect(res.status).toBe(201);
    const id = ((await res.json()) as any).data.id;
    let post: any;
    for (let i = 0; i < 100; i++) {
      post = ((await (await fetch(`${server.url}/api/public/v1/social/posts/${id}`, { headers })).json()) as any).data;
      if (post.status === "published" || post.status === "failed") break;
      await Bun.sleep(100);
    }
    expect(post.status).toBe("published");
    expect(post.targets[0]).toMatchObject({ status: "published", attempts: 2, externalId: x.tweets[0]!.id });
    expect(x.tweets.filter((t) => t.text === "Exactly once")).toHaveLength(1);
    expect(x.requests.filter((r) => r.method === "POST" && r.path === "/2/tweets")).toHaveLength(1);
    expect(x.requests.every((r) => r.headers.authorization === "Bearer x-user-token")).toBe(true);
  } finally {
    expect(await server.stop("SIGTERM")).toBe(0);
    await x.stop();
  }
});
