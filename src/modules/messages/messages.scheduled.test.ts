/**
 * Scheduled one-to-one messages (DESIGN §18): POST /messages with scheduledAt, POST /messages/{id}/cancel,
 * GET /messages?status=scheduled; the due job on the test clock, across a restart, refused at send time, and
 * raced by a cancel. Both engines (SWITCHBOARD_TEST_ENGINE).
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import { ACCOUNTS, BASE, createTestApp, sandboxChannels, type TestApp } from "../../../test/helpers/test-app";
import { rowsOf, runScenarios, type Scenario } from "../../../test/helpers/scenarios";
import { balanceOf, eventsOf, inbound } from "../../../test/helpers/messaging";
import { SCHEDULED_SEND_JOB } from "./messages.jobs";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const START = new Date("2026-06-01T12:00:00Z");
const hello = { name: "hello_world", params: { "body.1": "Ann" } };
/** A priced send (wa_template_text, 0.05): a template needs no window on WhatsApp. */
const reminder = (scheduledAt: string, phone = "+14155550101") => ({
  channel: "whatsapp",
  to: { phone },
  type: "template",
  template: hello,
  scheduledAt,
  metadata: { appointmentId: "AP-7" },
});
const at = (ms: number) => new Date(START.getTime() + ms).toISOString();

async function schedule(app: TestApp, body: unknown, headers: Record<string, string> = {}) {
  const res = await app.request("POST", "/messages", { body, headers });
  if (res.status !== 202) throw new Error(`schedule failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data as { id: string; status: string };
}
const messageOf = async (app: TestApp, id: string) => (await app.request("GET", `/messages/${id}`)).body.data;
/** Jobs rows of the due job still in the queue (pending or dead). */
const dueJobs = async (app: TestApp) => [
  ...(await app.deps.queue.listJobs({ type: SCHEDULED_SEND_JOB })),
  ...(await app.deps.queue.listJobs({ type: SCHEDULED_SEND_JOB, dead: true })),
];

describe("scheduled messages: the routes", () => {
  let app: TestApp;
  const ids: Record<string, string> = {};
  beforeAll(async () => {
    app = await createTestApp({ start: START });
    await inbound(app, "whatsapp", { phone: "+14155550101" }, "hi", HOUR);
    ids.scheduled = (await schedule(app, reminder("2026-06-02T10:00:00+03:00"))).id;
    ids.toCancel = (await schedule(app, reminder(at(DAY)))).id;
    ids.now = (
      await app.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "template", template: hello } })
    ).body.data.id;
  });
  afterAll(() => app.close());

  const bad = (name: string, scheduledAt: string, message: RegExp) => ({
    name: `scheduledAt ${name}: 422 naming /scheduledAt`,
    method: "POST",
    url: "/messages",
    body: reminder(scheduledAt),
    status: 422,
    contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/scheduledAt" }] } },
    check: (r: { body: any }) => expect(r.body.error.details[0].message).toMatch(message),
  });

  const scenarios: Scenario[] = [
    {
      name: "scheduled template: 202 scheduled, the seed's fields, priced and charged now",
      method: "POST",
      url: "/messages",
      body: reminder("2026-06-03T09:30:00Z"),
      status: 202,
      contains: { data: { status: "scheduled", priceType: "wa_template_text", unitPrice: "0.050000", charged: true, metadata: { appointmentId: "AP-7" } } },
      check: (r) =>
        expect(Object.keys(r.body.data).sort()).toEqual([
          "channel",
          "charged",
          "contactId",
          "conversationId",
          "id",
          "metadata",
          "priceType",
          "status",
          "unitPrice",
        ]),
    },
    {
      name: "exactly 30 days ahead is allowed",
      method: "POST",
      url: "/messages",
      body: reminder(at(30 * DAY)),
      status: 202,
      contains: { data: { status: "scheduled" } },
    },
    bad("in the past", at(-60_000), /in the past/),
    bad("now", at(0), /in the past/),
    bad("more than 30 days ahead", at(30 * DAY + 1000), /more than 30 days ahead/),
    bad("without an offset", "2026-06-02T10:00:00", /RFC 3339/),
    bad("as a date only", "2026-06-02", /RFC 3339/),
    bad("as words", "tomorrow at 10", /RFC 3339/),
    bad("out of range", "2026-13-45T10:00:00Z", /RFC 3339/),
    ...rowsOf("POST", "/messages", [
      {
        name: "the other rules still apply at acceptance: text outside the window is 422 MESSAGING_WINDOW_CLOSED",
        body: { channel: "whatsapp", to: { phone: "+14155550177" }, type: "text", text: "see you", scheduledAt: at(HOUR) },
        status: 422,
        contains: { error: { code: "MESSAGING_WINDOW_CLOSED" } },
      },
      {
        name: "a bad scheduledAt and a bad body field are reported together",
        body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "text", scheduledAt: "soon" },
        status: 422,
        check: (r) => expect(r.body.error.details.map((d: { pointer: string }) => d.pointer).sort()).toEqual(["/scheduledAt", "/text"]),
      },
      {
        name: "interactive messages can be scheduled (inside the window now)",
        body: {
          channel: "whatsapp",
          to: { phone: "+14155550101" },
          type: "interactive",
          interactive: { kind: "buttons", body: { text: "Keep your table?" }, buttons: [{ id: "keep", title: "Keep it" }] },
          scheduledAt: at(2 * HOUR),
        },
        status: 202,
        contains: { data: { status: "scheduled", priceType: "free", charged: false } },
      },
      {
        name: "media messages can be scheduled, validated as now (a bad URL is refused)",
        body: { channel: "whatsapp", to: { phone: "+14155550101" }, type: "media", media: { url: "http://127.0.0.1/x.png" }, scheduledAt: at(HOUR) },
        status: 422,
        contains: { error: { code: "VALIDATION_FAILED", details: [{ pointer: "/media/url" }] } },
      },
    ]),
    {
      name: "GET /messages/{id} shows scheduledAt (UTC) and no queuedAt yet",
      method: "GET",
      url: "/messages/ID",
      status: 200,
      setup: () => {},
      check: async () => {
        const m = await messageOf(app, ids.scheduled!);
        expect(m).toMatchObject({ status: "scheduled", scheduledAt: "2026-06-02T07:00:00.000Z", refunded: false, error: null });
        expect(m.statusTimes.queuedAt).toBeNull();
      },
    },
    {
      name: "cancel: 200 canceled, refunded, message.canceled",
      method: "POST",
      url: "/messages/TO_CANCEL/cancel",
      status: 200,
      contains: { data: { status: "canceled", refunded: true, charged: true } },
      check: (r) => {
        const events = eventsOf(app, "message.canceled");
        expect(events.map((e) => e.data.message.id)).toEqual([r.body.data.id]);
        expect(events[0]!.data.message.status).toBe("canceled");
      },
    },
    {
      name: "cancel twice: 409 CONFLICT",
      method: "POST",
      url: "/messages/TO_CANCEL/cancel",
      status: 409,
      contains: { error: { code: "CONFLICT", details: [{ pointer: "path:id", message: "the message is canceled" }] } },
    },
    {
      name: "cancel a message sent at once: 409 CONFLICT",
      method: "POST",
      url: "/messages/NOW/cancel",
      status: 409,
      contains: { error: { code: "CONFLICT" } },
    },
    {
      name: "cancel an unknown message: 404",
      method: "POST",
      url: "/messages/01970f2a-7c00-7d1e-8f2a-000000000000/cancel",
      status: 404,
      contains: { error: { code: "NOT_FOUND" } },
    },
    {
      name: "cancel needs messages:send",
      method: "POST",
      url: "/messages/SCHEDULED/cancel",
      key: "READ_ONLY",
      status: 403,
      contains: { error: { code: "API_SCOPE_MISSING" } },
    },
    {
      name: "GET /messages?status=scheduled lists the scheduled ones only",
      method: "GET",
      url: "/messages?status=scheduled",
      status: 200,
      check: (r) => {
        expect(r.body.data.length).toBe(4);
        expect(r.body.data.every((m: { status: string }) => m.status === "scheduled")).toBe(true);
        expect(r.body.data.map((m: { id: string }) => m.id)).toContain(ids.scheduled);
      },
    },
    {
      name: "GET /messages?status=canceled lists the canceled one",
      method: "GET",
      url: "/messages?status=canceled",
      status: 200,
      check: (r) => expect(r.body.data.map((m: { id: string }) => m.id)).toEqual([ids.toCancel]),
    },
  ];
  let readOnlyKey: string | undefined;
  runScenarios(
    () => app,
    scenarios.map((s) => ({
      ...s,
      // The ids exist once beforeAll has run: read when the scenario runs.
      get url() {
        return s.url
          .replace("TO_CANCEL", () => ids.toCancel!)
          .replace("NOW", () => ids.now!)
          .replace("SCHEDULED", () => ids.scheduled!)
          .replace("/ID", () => `/${ids.scheduled}`);
      },
      // A read-only key is made when its scenario runs (setup), and read by the getter after it.
      setup: async (a: TestApp) => {
        await s.setup?.(a);
        if (s.key === "READ_ONLY") readOnlyKey = (await a.newKey({ name: "reader", scopes: ["messages:read"] })).key;
      },
      get key() {
        return s.key === "READ_ONLY" ? readOnlyKey : s.key;
      },
    })),
  );

  test("the ledger: a debit at acceptance, a refund at cancel", async () => {
    const before = await balanceOf(app);
    const { id } = await schedule(app, reminder(at(3 * HOUR)));
    expect(await balanceOf(app)).toBe((Number(before) - 0.05).toFixed(6));
    expect((await app.request("POST", `/messages/${id}/cancel`)).status).toBe(200);
    expect(await balanceOf(app)).toBe(before);
  });

  test("Idempotency-Key: a replayed schedule is the same message; a replayed cancel answers the same", async () => {
    const headers = { "Idempotency-Key": "remind-ap-8" };
    const first = await app.request("POST", "/messages", { body: reminder(at(5 * HOUR)), headers });
    const again = await app.request("POST", "/messages", { body: reminder(at(5 * HOUR)), headers });
    expect(again.status).toBe(202);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.data.id).toBe(first.body.data.id);
    const other = await app.request("POST", "/messages", { body: reminder(at(6 * HOUR)), headers });
    expect(other.status).toBe(409);
    expect(other.body.error.code).toBe("IDEMPOTENCY_CONFLICT");

    const balance = await balanceOf(app);
    const cancelHeaders = { "Idempotency-Key": "cancel-ap-8" };
    const c1 = await app.request("POST", `/messages/${first.body.data.id}/cancel`, { headers: cancelHeaders });
    const c2 = await app.request("POST", `/messages/${first.body.data.id}/cancel`, { headers: cancelHeaders });
    expect([c1.status, c2.status]).toEqual([200, 200]);
    expect(c2.headers.get("idempotent-replayed")).toBe("true");
    expect(c2.body.data.status).toBe("canceled");
    // Refunded once.
    expect(await balanceOf(app)).toBe((Number(balance) + 0.05).toFixed(6));
  });
});

describe("scheduled messages: the due job", () => {
  let app: TestApp;
  afterEach(() => app?.close());

  test("sent on time: nothing before it is due, sent once when the clock reaches it", async () => {
    app = await createTestApp({ start: START });
    const { id } = await schedule(app, reminder(at(HOUR)));
    await app.deps.queue.drain();
    expect((await messageOf(app, id)).status).toBe("scheduled");
    app.clock.advance(HOUR - 1000);
    await app.deps.queue.drain();
    expect((await messageOf(app, id)).status).toBe("scheduled");
    app.clock.advance(1000);
    await app.deps.queue.drain();
    const m = await messageOf(app, id);
    expect(m).toMatchObject({ status: "sent", charged: true, refunded: false, scheduledAt: at(HOUR) });
    expect(m.statusTimes.queuedAt).toBe(at(HOUR));
    expect(m.statusTimes.sentAt).toBe(at(HOUR));
    expect(m.providerMessageId).toBeString();
    expect(eventsOf(app, "message.sent").map((e) => e.data.message.id)).toEqual([id]);
    expect(await dueJobs(app)).toEqual([]);
    // Canceling it now is too late.
    expect((await app.request("POST", `/messages/${id}/cancel`)).status).toBe(409);
  });

  test("due while the appliance was down: sent once at start-up", async () => {
    app = await createTestApp({ start: START });
    const { id } = await schedule(app, reminder(at(HOUR)));
    const balance = await balanceOf(app);
    const dir = app.dir;
    await app.close({ keepData: true });
    // Back two hours later: it fell due in the downtime.
    app = await createTestApp({ dataDir: dir, start: new Date(START.getTime() + 2 * HOUR) });
    expect((await messageOf(app, id)).status).toBe("scheduled");
    await app.deps.queue.drain();
    await app.deps.queue.drain();
    const m = await messageOf(app, id);
    expect(m.status).toBe("sent");
    expect(m.statusTimes.sentAt).toBe(at(2 * HOUR));
    expect(eventsOf(app, "message.sent").map((e) => e.data.message.id)).toEqual([id]);
    expect(await dueJobs(app)).toEqual([]);
    expect(await balanceOf(app)).toBe(balance);
  });

  test("the window closed meanwhile: failed with MESSAGING_WINDOW_CLOSED (the send's own code), message.failed", async () => {
    app = await createTestApp({ start: START });
    await inbound(app, "whatsapp", { phone: "+14155550102" }, "hi", 23 * HOUR);
    const { id } = await schedule(app, { channel: "whatsapp", to: { phone: "+14155550102" }, type: "text", text: "see you at 10", scheduledAt: at(2 * HOUR) });
    app.clock.advance(2 * HOUR);
    await app.deps.queue.drain();
    const m = await messageOf(app, id);
    expect(m.status).toBe("failed");
    expect(m.error.code).toBe("MESSAGING_WINDOW_CLOSED");
    expect(m.error.reason).toBe("MESSAGING_WINDOW_CLOSED");
    expect(m.error.message).toContain("window closed at 2026-06-01T13:00:00.000Z");
    expect(m.statusTimes.failedAt).toBe(at(2 * HOUR));
    expect(eventsOf(app, "message.failed").map((e) => e.data.message.id)).toEqual([id]);
    expect(eventsOf(app, "message.sent")).toEqual([]);
    // The direct send at the same moment answers the same code.
    const direct = await app.request("POST", "/messages", { body: { channel: "whatsapp", to: { phone: "+14155550102" }, type: "text", text: "x" } });
    expect(direct.body.error.code).toBe("MESSAGING_WINDOW_CLOSED");
  });

  test("blocked meanwhile: failed with CONTACT_BLOCKED and refunded by a ledger entry", async () => {
    app = await createTestApp({ start: START });
    const balance = await balanceOf(app);
    const accepted = await schedule(app, reminder(at(HOUR), "+14155550155"));
    expect(await balanceOf(app)).toBe((Number(balance) - 0.05).toFixed(6));
    const contact = await app.request("PATCH", `/contacts/${(await messageOf(app, accepted.id)).contactId}`, { body: { blocked: true } });
    expect(contact.status).toBe(200);
    app.clock.advance(HOUR);
    await app.deps.queue.drain();
    const m = await messageOf(app, accepted.id);
    expect(m).toMatchObject({ status: "failed", refunded: true, error: { code: "CONTACT_BLOCKED", reason: "CONTACT_BLOCKED" } });
    expect(await balanceOf(app)).toBe(balance);
    const ledger = (await app.request("GET", "/billing/ledger")).body;
    if (ledger?.data)
      expect(
        ledger.data
          .filter((e: { messageId: string }) => e.messageId === accepted.id)
          .map((e: { kind: string }) => e.kind)
          .sort(),
      ).toEqual(["debit", "refund"]);
    expect(eventsOf(app, "message.failed").map((e) => e.data.message.id)).toEqual([accepted.id]);
  });

  test("a scheduled media message keeps its stored file: DELETE /media/{id} is 409 MEDIA_IN_USE until it is canceled", async () => {
    app = await createTestApp({ start: START });
    await inbound(app, "whatsapp", { phone: "+14155550101" }, "hi", 60_000);
    const jpeg = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, ...new Array(200).fill(0), 0xff, 0xd9]);
    const form = new FormData();
    form.append("file", new File([jpeg], "card.jpg", { type: "image/jpeg" }));
    form.append("channel", "whatsapp");
    const up = await app.app.handle(new Request(`${BASE}/media`, { method: "POST", headers: { authorization: `Bearer ${app.key}` }, body: form }));
    expect(up.status).toBe(201);
    const mediaId = ((await up.json()) as { data: { id: string } }).data.id;
    const { id } = await schedule(app, { channel: "whatsapp", to: { phone: "+14155550101" }, type: "media", media: { mediaId }, scheduledAt: at(HOUR) });
    const busy = await app.request("DELETE", `/media/${mediaId}`);
    expect([busy.status, busy.body.error.code]).toEqual([409, "MEDIA_IN_USE"]);
    expect(busy.body.error.message).toContain(id);
    expect((await app.request("POST", `/messages/${id}/cancel`)).status).toBe(200);
    expect((await app.request("DELETE", `/media/${mediaId}`)).status).toBe(200);
  });

  test("GET /channels's health does not count scheduled or canceled messages as sent", async () => {
    app = await createTestApp({ start: START });
    const { id } = await schedule(app, reminder(at(HOUR)));
    await schedule(app, reminder(at(2 * HOUR)));
    expect((await app.request("POST", `/messages/${id}/cancel`)).status).toBe(200);
    const health = (await app.request("GET", "/channels")).body.data.find((a: { channel: string }) => a.channel === "whatsapp").health;
    expect(health).toMatchObject({ status: "unknown", recentSent: 0, recentFailed: 0, lastSentAt: null });
  });

  test("outbox: the due job is written with the message (a jobs row due at scheduledAt), and not at all when the send is refused", async () => {
    app = await createTestApp({ start: START, balance: "0.070000" });
    const { id } = await schedule(app, reminder(at(HOUR)));
    expect((await dueJobs(app)).map((j) => [j.payload.messageId, Date.parse(j.runAt)])).toEqual([[id, START.getTime() + HOUR]]);
    const refused = await app.request("POST", "/messages", { body: reminder(at(2 * HOUR)) });
    expect([refused.status, refused.body.error.code]).toEqual([402, "INSUFFICIENT_BALANCE"]);
    expect((await dueJobs(app)).length).toBe(1);
    expect((await app.request("GET", "/messages?status=scheduled")).body.data.length).toBe(1);
  });

  test("a canceled message's due job does nothing", async () => {
    app = await createTestApp({ start: START });
    const { id } = await schedule(app, reminder(at(HOUR)));
    expect((await app.request("POST", `/messages/${id}/cancel`)).status).toBe(200);
    app.clock.advance(HOUR);
    await app.deps.queue.drain();
    expect((await messageOf(app, id)).status).toBe("canceled");
    expect(eventsOf(app, "message.sent")).toEqual([]);
    expect(await dueJobs(app)).toEqual([]);
  });

  test("scheduled messages do not take the account's send rate until they go out", async () => {
    app = await createTestApp({
      start: START,
      config: { channels: sandboxChannels().map((c) => (c.channel === "whatsapp" ? { ...c, max_per_second: 1000 } : c)) },
    });
    const rate = app.deps.throttle.reserveSlot.bind(app.deps.throttle);
    const reserved: string[] = [];
    app.deps.throttle.reserveSlot = (account, perSecond, ahead) => (reserved.push(account), rate(account, perSecond, ahead));
    for (let i = 0; i < 5; i++) await schedule(app, reminder(at(HOUR + i)));
    await app.deps.queue.drain();
    expect(reserved).toEqual([]);
    app.clock.advance(HOUR + 5);
    await app.deps.queue.drain();
    expect(reserved).toEqual(Array(5).fill(ACCOUNTS.whatsapp));
  });

  test("cancel raced by the due job: exactly one wins, the balance is exact", async () => {
    app = await createTestApp({ start: START });
    const balance = Number(await balanceOf(app));
    // The due job's claim of the message (the store's claimDue: its conditional UPDATE to `queued`) calls
    // `claimed` once it has run, while the job's unit is still open.
    let claimed: (() => void) | null = null;
    const statement = app.deps.db.sql.bind(app.deps.db);
    app.deps.db.sql = (text: string) => {
      const st = statement(text);
      if (!/^UPDATE messages SET status = 'queued'/.test(text.trim())) return st;
      return {
        ...st,
        run: async (...args) => {
          const done = await st.run(...args);
          claimed?.();
          return done;
        },
      };
    };
    const ids: string[] = [];
    const outcomes: number[] = [];
    // Round by round: a message falls due, and a cancel and a drain of the queue race for it — in odd rounds
    // both start in the same turn, the cancel first; in even ones the cancel starts once the due job has
    // claimed the message, 0 to 5 turns of the event loop later. NB! Not by event-loop turns from the start:
    // on PostgreSQL the units run side by side and the drain's unit reaches the claim after a few dozen
    // statements of its own, so a cancel started in the same turn always got there first and one way was
    // never taken. Here, on PostgreSQL, the cancel's UPDATE waits for the row the due job's open unit holds
    // and then finds it moved; on SQLite the job's unit commits before the cancel's begins.
    for (let i = 0; i < 12; i++) {
      const { id } = await schedule(app, reminder(at((i + 1) * HOUR), `+1415555${String(300 + i).padStart(4, "0")}`));
      ids.push(id);
      app.clock.set(new Date(START.getTime() + (i + 1) * HOUR));
      const cancel = () => app.request("POST", `/messages/${id}/cancel`).then((r) => r.status);
      const drain = () => app.deps.queue.drain().then(() => 0);
      if (i % 2) {
        const [status] = await Promise.all([cancel(), drain()]);
        outcomes.push(status);
        continue;
      }
      const afterClaim = new Promise<void>((resolve) => (claimed = resolve)).then(async () => {
        claimed = null;
        for (let n = 0; n < i / 2; n++) await new Promise((r) => setImmediate(r));
        return cancel();
      });
      const [, status] = await Promise.all([drain(), afterClaim]);
      outcomes.push(status);
    }
    await app.deps.queue.drain();
    let canceled = 0;
    for (const [i, id] of ids.entries()) {
      const m = await messageOf(app, id);
      if (outcomes[i] === 200) {
        canceled++;
        expect(m).toMatchObject({ status: "canceled", refunded: true, providerMessageId: null });
      } else {
        expect(outcomes[i]).toBe(409);
        // (the sandbox reports delivered and read an hour after the send: the later rounds move the clock past it)
        expect(["sent", "delivered", "read"]).toContain(m.status);
        expect(m.refunded).toBe(false);
      }
    }
    // Both ways were taken (else this proved only one order).
    expect(new Set(outcomes)).toEqual(new Set([200, 409]));
    // Each message went exactly one way, and each way is paid for exactly.
    expect(eventsOf(app, "message.sent").length + eventsOf(app, "message.canceled").length).toBe(ids.length);
    expect(eventsOf(app, "message.canceled").length).toBe(canceled);
    expect(Number(await balanceOf(app))).toBeCloseTo(balance - (ids.length - canceled) * 0.05, 6);
    expect(await dueJobs(app)).toEqual([]);
  });
});
