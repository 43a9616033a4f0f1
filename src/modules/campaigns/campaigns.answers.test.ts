/**
 * Campaign answers as a first integrator reads them (issue 41, items 7–10): audience errors point at the field,
 * a past `scheduledAt` is refused as for social posts, `funnel` is cumulative beside the per-status `stats`,
 * a failed recipient's `reason` is the message's normalized one and `?reason=` filters by it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { runScenarios, type Scenario } from "../../../test/helpers/scenarios";
import { createTestApp, sandboxChannels, type TestApp } from "../../../test/helpers/test-app";

let app: TestApp;
let templateId = "";
beforeAll(async () => {
  // Reports at once: one drain takes every send to `read`.
  app = await createTestApp({ config: { channels: sandboxChannels({ sent_after_ms: 0, delivered_after_ms: 0, read_after_ms: 0 }) } });
  templateId = (await app.request("GET", "/templates?channel=whatsapp")).body.data.find((t: { name: string }) => t.name === "hello_world").id;
});
afterAll(() => app.close());

/** The app, with the sandbox's hello_world id put into each body (scenarios are written before it is known). */
const withTemplate = () =>
  ({ ...app, request: (m: string, u: string, o: any = {}) => app.request(m, u, o.body ? { ...o, body: { ...o.body, templateId } } : o) }) as TestApp;
const body = (o: Record<string, unknown>) => ({ name: "June", templateId, audience: { type: "tags", tags: ["vip"] }, askValues: { "body.1": "Sale" }, ...o });
const pointers = (...list: [string, string][]) => ({ error: { code: "VALIDATION_FAILED", details: list.map(([pointer, message]) => ({ pointer, message })) } });
const post = (name: string, o: Record<string, unknown>, contains: unknown, status = 422): Scenario[] =>
  ["/campaigns", "/campaigns/estimate"].map((url) => ({ name: `${url}: ${name}`, method: "POST", url, body: body(o), status, contains }));

describe("7. audience errors point where the mistake is", () => {
  runScenarios(withTemplate, [
    ...post(
      'match "none" → /audience/match',
      { audience: { type: "tags", tags: ["vip"], match: "none" } },
      pointers(["/audience/match", "must be one of: any, all"]),
    ),
    ...post("a tags audience without tags → /audience/tags", { audience: { type: "tags" } }, pointers(["/audience/tags", "is required"])),
    ...post("an empty tags list → /audience/tags", { audience: { type: "tags", tags: [] } }, pointers(["/audience/tags", "must have at least 1 item"])),
    ...post(
      "an unknown type says the allowed types",
      { audience: { type: "everyone" } },
      pointers(["/audience/type", "must be one of: tags, contacts, segment, filter"]),
    ),
    ...post("no type → /audience/type", { audience: { tags: ["vip"] } }, pointers(["/audience/type", "is required"])),
    ...post(
      "a bad contact id → /audience/contactIds/0",
      { audience: { type: "contacts", contactIds: ["nope"] } },
      pointers(["/audience/contactIds/0", "must be a UUID"]),
    ),
  ]);
});

describe("8. a scheduledAt in the past is 422 with a pointer, as for social posts", () => {
  runScenarios(withTemplate, [
    ...post(
      "an hour ago",
      { scheduledAt: new Date(Date.now() - 3_600_000).toISOString() },
      pointers(["/scheduledAt", "must be in the future (omit scheduledAt to start at once)"]),
    ),
  ]);
  test("nothing was created (social posts: social.api.test.ts has the same rule)", async () => {
    expect((await app.request("GET", "/campaigns")).body.data).toEqual([]);
  });
  test("a future scheduledAt is scheduled, and a tags audience reads back with its match", async () => {
    const at = new Date(app.clock.now().getTime() + 3_600_000).toISOString();
    await app.request("POST", "/tags", { body: { name: "later" } });
    const res = await app.request("POST", "/campaigns", { body: body({ name: "later", audience: { type: "tags", tags: ["later"] }, scheduledAt: at }) });
    expect({ status: res.status, error: res.body.error }).toEqual({ status: 201, error: undefined });
    expect(res.body.data).toMatchObject({ status: "scheduled", scheduledAt: at, audience: { type: "tags", tags: ["later"], match: "any" } });
    await app.request("POST", `/campaigns/${res.body.data.id}/cancel`, { body: {} });
  });
});

describe("9 and 10. funnel, normalized reasons, ?reason=", () => {
  let campaign: any;
  beforeAll(async () => {
    for (const phone of ["+14155550111", "+14155550112", "+12025550101"])
      await app.request("POST", "/contacts", { body: { identities: [{ channel: "whatsapp", value: phone }], tags: ["f"], optIn: true } });
    await app.request("POST", "/contacts", { body: { identities: [{ channel: "whatsapp", value: "+14155550113" }], tags: ["f"], optIn: false } });
    campaign = (await app.request("POST", "/campaigns", { body: body({ name: "funnel", audience: { type: "tags", tags: ["f"] } }) })).body.data;
    await app.deps.queue.drain();
    await app.deps.queue.drain();
  });

  test("stats count each recipient at its furthest status; funnel counts it in every stage it reached", async () => {
    const c = (await app.request("GET", `/campaigns/${campaign.id}`)).body.data;
    expect(c.stats).toMatchObject({ matched: 4, sendable: 3, sent: 0, delivered: 0, read: 2, failed: 1, replied: 0 });
    expect(c.funnel).toEqual({ sent: 2, delivered: 2, read: 2, replied: 0 });
  });

  test("a failed recipient's reason is the message's normalized reason, not the provider's code", async () => {
    const rs = (await app.request("GET", `/campaigns/${campaign.id}/recipients?status=failed`)).body.data;
    expect(rs.map((r: { reason: string }) => r.reason)).toEqual(["USER_BLOCKED"]);
    const m = (await app.request("GET", `/messages/${rs[0].messageId}`)).body.data;
    expect(m.error).toMatchObject({ code: "sandbox_blocked", reason: "USER_BLOCKED" });
  });

  test("?reason= filters by it: a failure reason, an exclusion reason, one nobody has", async () => {
    const list = async (q: string) =>
      (await app.request("GET", `/campaigns/${campaign.id}/recipients?${q}`)).body.data.map((r: { status: string; reason: string }) => [r.status, r.reason]);
    expect(await list("reason=USER_BLOCKED")).toEqual([["failed", "USER_BLOCKED"]]);
    expect(await list("reason=noConsent")).toEqual([["excluded", "noConsent"]]);
    expect(await list("reason=RATE_LIMITED")).toEqual([]);
    expect(await list("status=read&reason=USER_BLOCKED")).toEqual([]);
  });

  test("a recipient failed before its message (PARAM_MISSING) is listed and filtered too", async () => {
    await app.request("POST", "/contacts", { body: { identities: [{ channel: "whatsapp", value: "+14155550114" }], tags: ["nameless"], optIn: true } });
    const c = (
      await app.request("POST", "/campaigns", {
        body: body({ name: "names", audience: { type: "tags", tags: ["nameless"] }, askValues: { "body.1": "{{contact.firstName}}" } }),
      })
    ).body.data;
    await app.deps.queue.drain();
    const res = await app.request("GET", `/campaigns/${c.id}/recipients?reason=PARAM_MISSING`);
    expect([res.status, res.body.data.map((r: { status: string; reason: string; messageId: string | null }) => [r.status, r.reason, r.messageId])]).toEqual([
      200,
      [["failed", "PARAM_MISSING", null]],
    ]);
  });

  runScenarios(
    () => app,
    [
      {
        name: "an unknown reason is 422 at query:reason",
        method: "GET",
        url: "/campaigns/00000000-0000-7000-8000-000000000000/recipients?reason=sandbox_blocked",
        status: 422,
        contains: { error: { details: [{ pointer: "query:reason" }] } },
      },
    ],
  );
});
