/** The service contract the messaging engine builds on (synchronous, usable inside an outer db.tx). */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createTestApp, type TestApp } from "../../../test/helpers/test-app";
import { AppError } from "../../platform/errors";
import { findContactByIdentity, findOrCreateContactByIdentity, getContact, identityOf, normaliseIdentity } from "./contacts.service";
import { getConsent, setConsent } from "./contacts.consent";
import { upsertContact } from "./contacts.upsert";

let app: TestApp;
let w: { db: TestApp["deps"]["db"]; events: TestApp["deps"]["events"]; now: () => Date; companyId: string };
beforeAll(async () => {
  app = await createTestApp();
  w = { db: app.deps.db, events: app.deps.events, now: app.deps.now, companyId: app.company.id };
});
afterAll(() => app.close());

const eventTypes = () => app.emitted.map((e) => e.type);

describe("normaliseIdentity", () => {
  test.each([
    ["whatsapp", "+1 (415) 555-0123", "+14155550123", "verified"],
    ["whatsapp", "4915112345678", "+4915112345678", "verified"],
    ["email", "  Ann@Example.COM ", "ann@example.com", "verified"],
    ["instagram", "@Ann.B", "@ann.b", "pending"],
    ["telegram", "123456789", "123456789", "verified"],
    ["messenger", "6789012345", "6789012345", "verified"],
  ])("%s %s → %s (%s)", (channel, value, norm, status) => {
    expect(normaliseIdentity({ channel, value })).toEqual({ value: norm, status: status as "verified" });
  });
  test("invalid values throw 422 with the caller's pointer", () => {
    for (const [channel, value] of [
      ["whatsapp", "+1 555"],
      ["email", "nope"],
      ["x", "has space"],
      ["messenger", "@user"],
      ["fax", "1"],
    ]) {
      try {
        normaliseIdentity({ channel: channel!, value: value!, pointer: "/to" });
        throw new Error("no throw");
      } catch (e) {
        expect(e).toBeInstanceOf(AppError);
        expect((e as AppError).code).toBe("VALIDATION_FAILED");
        expect((e as AppError).details[0]!.pointer).toStartWith("/to/");
      }
    }
  });
});

describe("find / create by identity", async () => {
  test("creates once, then finds (also with a differently formatted value)", async () => {
    const a = (await findOrCreateContactByIdentity({ ...w, channel: "whatsapp", value: "+4915111111111", displayName: "Ann Lee", create: true }))!;
    expect(a.created).toBe(true);
    expect(a.contact.firstName).toBe("Ann");
    expect(a.contact.lastName).toBe("Lee");
    const b = (await findOrCreateContactByIdentity({ ...w, channel: "whatsapp", value: "49 151 11111111", create: true }))!;
    expect(b.created).toBe(false);
    expect(b.contact.id).toBe(a.contact.id);
    expect((await findContactByIdentity({ ...w, channel: "whatsapp", value: "004915111111111".replace(/^00/, "+") }))?.id).toBe(a.contact.id);
    expect((await identityOf({ ...w, contactId: a.contact.id, channel: "whatsapp" }))?.value).toBe("+4915111111111");
  });
  test("create=false returns null for an unknown identity", async () => {
    expect(await findOrCreateContactByIdentity({ ...w, channel: "email", value: "nobody@example.com", create: false })).toBeNull();
  });
  test("an inbound sender with a username resolves the pending @username identity", async () => {
    const { contact } = await upsertContact({ ...w, input: { identities: [{ channel: "instagram", value: "@Carla" }], firstName: "Carla" } });
    expect(contact.identities[0]).toEqual({ channel: "instagram", value: "@carla", status: "pending" });
    expect((await findContactByIdentity({ ...w, channel: "instagram", value: "@carla" }))?.id).toBe(contact.id);
    const r = (await findOrCreateContactByIdentity({ ...w, channel: "instagram", value: "17841400000000001", username: "carla", create: true }))!;
    expect(r.created).toBe(false);
    expect(r.contact.id).toBe(contact.id);
    expect(r.identity).toMatchObject({ value: "17841400000000001", status: "verified" });
    expect((await getContact({ ...w, id: contact.id })).identities).toEqual([{ channel: "instagram", value: "17841400000000001", status: "verified" }]);
  });
  test("usable inside an outer transaction that rolls back", async () => {
    await expect(
      w.db.unit(async () => {
        await findOrCreateContactByIdentity({ ...w, channel: "telegram", value: "999", create: true });
        throw new Error("outer failure");
      }),
    ).rejects.toThrow("outer failure");
    expect(await findContactByIdentity({ ...w, channel: "telegram", value: "999" })).toBeUndefined();
  });
  test("getContact of an unknown id is 404", async () => {
    await expect(getContact({ ...w, id: "00000000-0000-7000-8000-000000000000" })).rejects.toThrow("Contact not found");
  });
});

describe("consent", async () => {
  test("unknown → opted_in → opted_out with history and events; repeats are no-ops", async () => {
    const { contact } = await upsertContact({ ...w, input: { identities: [{ channel: "telegram", value: "4242" }] } });
    expect(await getConsent({ ...w, contactId: contact.id, channel: "telegram" })).toBe("unknown");
    const before = eventTypes().length;
    await setConsent({ ...w, contactId: contact.id, channels: ["telegram"], status: "opted_in", source: "api" });
    await setConsent({ ...w, contactId: contact.id, channels: ["telegram"], status: "opted_in", source: "api" });
    await setConsent({ ...w, contactId: contact.id, channels: ["telegram"], status: "opted_out", source: "provider" });
    expect(await getConsent({ ...w, contactId: contact.id, channel: "telegram" })).toBe("opted_out");
    expect(eventTypes().slice(before)).toEqual(["contact.opted_in", "contact.opted_out"]);
    const history = await app.deps.db.sql("SELECT status, source FROM consent_history WHERE contact_id = ? ORDER BY id").all(contact.id);
    expect(history).toEqual([
      { status: "opted_in", source: "api" },
      { status: "opted_out", source: "provider" },
    ]);
    const ev = { data: JSON.stringify(app.emitted.findLast((e) => e.type === "contact.opted_out")!.data) };
    expect(JSON.parse(ev.data)).toMatchObject({
      channel: "telegram",
      source: "provider",
      contact: { id: contact.id, consent: { telegram: { status: "opted_out" } } },
    });
  });
});
