/** The contract the messaging engine uses: findStoredMedia, rememberProviderMediaId + the provider media id cache. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { newId } from "../../platform/ids";
import { deleteMediaRow, findStoredMedia, forgetProviderMediaId, insertMedia, rememberProviderMediaId } from "./media.service";

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
    quotaBytes: 1 << 30,
  });
  return id;
}

describe("provider media id cache", () => {
  test("resolve without a cached id, cache, resolve again, replace on conflict, per account", async () => {
    const db = app.deps.db;
    const mediaId = await seed();
    const base = { db, companyId: app.company.id, mediaId };
    expect(await findStoredMedia({ ...base, channelAccountId: "wa1" })).toEqual({
      id: mediaId,
      path: `/tmp/${mediaId}`,
      mimeType: "image/png",
      filename: "a.png",
      size: 3,
    });

    await rememberProviderMediaId({ db, now: app.deps.now, mediaId, channelAccountId: "wa1", providerMediaId: "P1" });
    expect((await findStoredMedia({ ...base, channelAccountId: "wa1" }))?.providerMediaId).toBe("P1");
    expect((await findStoredMedia({ ...base, channelAccountId: "wa2" }))?.providerMediaId).toBeUndefined();

    await rememberProviderMediaId({ db, now: app.deps.now, mediaId, channelAccountId: "wa1", providerMediaId: "P2" });
    expect((await findStoredMedia({ ...base, channelAccountId: "wa1" }))?.providerMediaId).toBe("P2");

    await forgetProviderMediaId({ db, mediaId, channelAccountId: "wa1" });
    expect((await findStoredMedia({ ...base, channelAccountId: "wa1" }))?.providerMediaId).toBeUndefined();
  });

  test("another company's media does not resolve", async () => {
    const mediaId = await seed("other-company");
    expect(await findStoredMedia({ db: app.deps.db, companyId: app.company.id, mediaId, channelAccountId: "wa1" })).toBeUndefined();
  });

  test("caching for deleted media is a no-op; deleting media drops its cached ids", async () => {
    const db = app.deps.db;
    const mediaId = await seed();
    await rememberProviderMediaId({ db, now: app.deps.now, mediaId, channelAccountId: "wa1", providerMediaId: "P1" });
    await deleteMediaRow({ db, companyId: app.company.id, id: mediaId });
    const left = (await db.sql("SELECT count(*) AS n FROM media_provider_ids WHERE media_id = ?").get(mediaId)) as { n: number };
    expect(left.n).toBe(0);
    expect(rememberProviderMediaId({ db, now: app.deps.now, mediaId, channelAccountId: "wa1", providerMediaId: "P9" })).resolves.toBeUndefined();
    expect(await findStoredMedia({ db, companyId: app.company.id, mediaId })).toBeUndefined();
  });
});
