/** The contract the messaging engine uses: resolveStoredMedia + the provider media id cache. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { newId } from "../../platform/ids";
import { cacheProviderMediaId, deleteMediaRow, forgetProviderMediaId, insertMedia, resolveStoredMedia } from "./media.service";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

async function seed(companyId = app.company.id) {
  const id = newId();
  await insertMedia({
    db: app.deps.db,
    row: { id, companyId, filename: "a.png", mimeType: "image/png", size: 3, sha256: "x", path: `/tmp/${id}`, createdAt: app.deps.now(), apiKeyId: null },
  });
  return id;
}

describe("provider media id cache", () => {
  test("resolve without a cached id, cache, resolve again, replace on conflict, per account", async () => {
    const db = app.deps.db;
    const mediaId = await seed();
    const base = { db, companyId: app.company.id, mediaId };
    expect(resolveStoredMedia({ ...base, channelAccountId: "wa1" })).toEqual({
      id: mediaId,
      path: `/tmp/${mediaId}`,
      mimeType: "image/png",
      filename: "a.png",
      size: 3,
    });

    cacheProviderMediaId({ db, now: app.deps.now, mediaId, channelAccountId: "wa1", providerMediaId: "P1" });
    expect(resolveStoredMedia({ ...base, channelAccountId: "wa1" })?.providerMediaId).toBe("P1");
    expect(resolveStoredMedia({ ...base, channelAccountId: "wa2" })?.providerMediaId).toBeUndefined();

    cacheProviderMediaId({ db, now: app.deps.now, mediaId, channelAccountId: "wa1", providerMediaId: "P2" });
    expect(resolveStoredMedia({ ...base, channelAccountId: "wa1" })?.providerMediaId).toBe("P2");

    await forgetProviderMediaId({ db, mediaId, channelAccountId: "wa1" });
    expect(resolveStoredMedia({ ...base, channelAccountId: "wa1" })?.providerMediaId).toBeUndefined();
  });

  test("another company's media does not resolve", async () => {
    const mediaId = await seed("other-company");
    expect(resolveStoredMedia({ db: app.deps.db, companyId: app.company.id, mediaId, channelAccountId: "wa1" })).toBeUndefined();
  });

  test("caching for deleted media is a no-op; deleting media drops its cached ids", async () => {
    const db = app.deps.db;
    const mediaId = await seed();
    cacheProviderMediaId({ db, now: app.deps.now, mediaId, channelAccountId: "wa1", providerMediaId: "P1" });
    await deleteMediaRow({ db, companyId: app.company.id, id: mediaId });
    const left = db.$client.query("SELECT count(*) AS n FROM media_provider_ids WHERE media_id = ?").get(mediaId) as { n: number };
    expect(left.n).toBe(0);
    expect(() => cacheProviderMediaId({ db, now: app.deps.now, mediaId, channelAccountId: "wa1", providerMediaId: "P9" })).not.toThrow();
    expect(resolveStoredMedia({ db, companyId: app.company.id, mediaId })).toBeUndefined();
  });
});
