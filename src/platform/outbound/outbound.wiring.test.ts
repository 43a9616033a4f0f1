/**
 * The app's wiring of outbound requests (deps.ts): publishers and the guarded fetcher get the `[outbound]`
 * policy from the config, and every request carries `User-Agent: Switchboard/<version>` (DESIGN §23).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { XFake } from "../../../test/fakes/x.fake";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { VERSION } from "../../version";

const X_SOCIAL = "0193a4b2-0000-7000-8000-0000000000e1";
const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
let xf: XFake;
let app: TestApp;
const mediaAgents: string[] = [];
const media = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  fetch: (req) => (mediaAgents.push(req.headers.get("user-agent") ?? ""), new Response(PNG, { headers: { "content-type": "image/png" } })),
});

beforeAll(async () => {
  xf = XFake.start({ userId: "1000000001" });
  app = await createTestApp({
    config: {
      outbound: { allow: ["127.0.0.0/8"] },
      social_accounts: [
        { id: X_SOCIAL, platform: "x", provider: "x", name: "X", settings: { user_id: "1000000001", access_token: "x-token", base_url: xf.url } },
      ],
    },
  });
  xf.now = () => app.clock.now();
});
afterAll(async () => {
  await app.close();
  await xf.stop();
  media.stop(true);
});

test("an X post with a media URL: the media host and the platform both see our User-Agent; [outbound] allow lets loopback media through", async () => {
  const res = await app.request("POST", "/social/posts", {
    body: { accountIds: [X_SOCIAL], text: "UA check", media: [{ url: `http://127.0.0.1:${media.port}/a.png` }], publishNow: true },
  });
  expect(res.status).toBe(201);
  await app.deps.queue.drain();
  const post = (await app.request("GET", `/social/posts/${res.body.data.id}`)).body.data;
  expect(post.targets[0]).toMatchObject({ status: "published" });
  expect(mediaAgents).toEqual([`Switchboard/${VERSION}`]);
  expect(xf.requests.length).toBeGreaterThan(0);
  for (const r of xf.requests) expect(r.headers["user-agent"]).toBe(`Switchboard/${VERSION}`);
});

test("a bad [outbound] CIDR stops start-up naming the key", async () => {
  await expect(createTestApp({ config: { outbound: { deny: ["10.0.0.0/99"] } } })).rejects.toThrow('[outbound] deny: "10.0.0.0/99"');
});
