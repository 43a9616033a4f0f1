/**
 * The checks every Meta adapter's webhook must pass (WhatsApp Cloud, Messenger, Instagram): a POST whose
 * `X-Hub-Signature-256` is wrong, missing, or right for a body altered afterwards by one byte is refused with
 * 401 and yields no event; the GET handshake echoes the challenge only for the verify token.
 */
import { expect } from "bun:test";
import type { TestHookServer } from "../../src/channels/meta/test-hook-server";
import type { GraphFake } from "../fakes/graph.fake";

export async function expectForgedSignaturesRefused({
  fake,
  hooks,
  payload,
  appSecret,
}: {
  fake: GraphFake;
  hooks: TestHookServer;
  payload: object;
  appSecret: string;
}): Promise<void> {
  for (const signature of ["wrong", "missing"] as const) expect((await fake.pushWebhook({ url: hooks.url, payload, appSecret, signature })).status).toBe(401);
  const altered = await fake.pushWebhook({
    url: hooks.url,
    payload,
    appSecret,
    // One byte of the body changed after it was signed.
    mutate: (b) => Object.assign(b.slice(), { [b.length - 3]: b[b.length - 3]! ^ 1 }),
  });
  expect(altered.status).toBe(401);
  expect(hooks.events()).toEqual([]);
}

export async function expectHandshake({ hooks, verifyToken, challenge }: { hooks: TestHookServer; verifyToken: string; challenge: string }): Promise<void> {
  const ok = await fetch(`${hooks.url}?hub.mode=subscribe&hub.verify_token=${verifyToken}&hub.challenge=${challenge}`);
  expect([ok.status, await ok.text()]).toEqual([200, challenge]);
  const bad = await fetch(`${hooks.url}?hub.mode=subscribe&hub.verify_token=guess&hub.challenge=${challenge}`);
  expect(bad.status).toBe(403);
  expect(await bad.text()).not.toContain(challenge);
}
