/**
 * The template cache (templates.cache.ts) never serves a row the database does not hold: one cached inside
 * a unit of work that rolled back is gone with it; a write of another process is seen by the next lookup.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { createLocalTemplate, getTemplateById, resolveTemplateForSend } from "./templates.service";

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(() => app.close());

test("a template cached inside a transaction that then rolled back is not served afterwards", async () => {
  const { db, now } = app.deps;
  const account = app.deps.channels.all().find((r) => r.account.channel === "telegram")!.account;
  let ghost = "";
  const send = () => resolveTemplateForSend({ db, companyId: app.company.id, channelAccountId: account.id, ref: { name: "ghost", params: { "body.1": "x" } } });
  await expect(
    db.unit(async () => {
      ghost = (await createLocalTemplate({ db, now, companyId: app.company.id, account, input: { name: "ghost", language: "en", body: "Hi {{1}}" } })).id;
      // Both lookups cache the uncommitted row…
      expect((await getTemplateById({ db, id: ghost }))?.name).toBe("ghost");
      expect((await send()).id).toBe(ghost);
      throw new Error("a later step failed");
    }),
  ).rejects.toThrow("a later step failed");
  // …and the rollback took it away from the cache too.
  expect(await getTemplateById({ db, id: ghost })).toBeUndefined();
  await expect(send()).rejects.toThrow('No template named "ghost"');
});

test("a template another process changed is read again by the next lookup", async () => {
  const { db } = app.deps;
  const account = app.deps.channels.all().find((r) => r.account.channel === "whatsapp")!.account;
  const ref = { name: "hello_world", params: { "body.1": "Ann" } };
  const row = await resolveTemplateForSend({ db, companyId: app.company.id, channelAccountId: account.id, ref });
  expect((await getTemplateById({ db, id: row.id }))?.status).toBe("approved");
  const other = app.openConnection();
  try {
    await app.externalCommit(() => other.sql("UPDATE templates SET status = 'paused' WHERE id = ?").run(row.id));
  } finally {
    other.close();
  }
  expect((await getTemplateById({ db, id: row.id }))?.status).toBe("paused");
  await expect(resolveTemplateForSend({ db, companyId: app.company.id, channelAccountId: account.id, ref })).rejects.toThrow("is paused, not approved");
});
