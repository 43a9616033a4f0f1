/** Inbound by IMAP against a real IMAP server (test/fakes/imap.peer.ts): IDLE, UID bookkeeping, restarts, failures. */
import { afterEach, describe, expect, test } from "bun:test";
import type { InboundEvent } from "../channel.types";
import { createTestContext } from "../../../test/fakes/adapter-context";
import { IMAP_SKIP_REASON, imapAvailable, startImapPeer, type ImapPeer } from "../../../test/fakes/imap.peer";
import { IMAP_UID_KEY, IMAP_UIDVALIDITY_KEY, startImapPoller, type ImapPoller } from "./smtp.imap";
import type { SmtpSettings } from "./smtp.settings";

const mail = (n: number) =>
  [
    `From: Customer ${n} <c${n}@example.com>`,
    "To: sales@example.com",
    `Subject: Question ${n}`,
    `Message-ID: <q${n}@example.com>`,
    "Date: Sat, 21 Nov 2026 10:00:00 +0000",
    "",
    `Body ${n}`,
  ].join("\r\n");

const settings = (port: number, password = "pw"): SmtpSettings =>
  ({
    imap_host: "127.0.0.1",
    imap_port: port,
    imap_secure: false,
    imap_username: "sales",
    imap_password: password,
    imap_mailbox: "INBOX",
    tls_reject_unauthorized: false,
  }) as SmtpSettings;

async function until<T>(what: () => T | undefined, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = what();
    if (v) return v;
    if (Date.now() > end) throw new Error("timed out");
    await Bun.sleep(20);
  }
}

const subjects = (batches: InboundEvent[][]) =>
  batches.flat().map((e) => (e.kind === "message" && e.content.type === "email" ? e.content.email.subject : e.kind));

let peer: ImapPeer | undefined;
const pollers: ImapPoller[] = [];
afterEach(async () => {
  for (const p of pollers.splice(0)) await p.stop();
  await peer?.close();
  peer = undefined;
});

describe.skipIf(!imapAvailable())(`IMAP inbound${imapAvailable() ? "" : ` (skipped: ${IMAP_SKIP_REASON})`}`, () => {
  test("the first start begins at the mailbox's end; new mail arrives by IDLE, parsed, and the UID advances", async () => {
    peer = await startImapPeer({ user: "sales", password: "pw", messages: [mail(1), mail(2)] });
    const t = createTestContext({ provider: "smtp", channel: "email", settings: {} });
    pollers.push(startImapPoller({ ctx: t.ctx, settings: settings(peer.port) }));
    await until(() => t.state.get(IMAP_UID_KEY));
    expect(t.state.get(IMAP_UID_KEY)).toBe("2"); // existing mail is not imported
    expect(t.state.get(IMAP_UIDVALIDITY_KEY)).toBeDefined();

    await Bun.sleep(1500); // the client is idling now: the next message must arrive without a rescan
    peer.append(mail(3));
    await until(() => t.inbound.length > 0 && t.inbound);
    expect(t.inbound).toHaveLength(1);
    expect(t.inbound[0]![0]).toMatchObject({
      kind: "message",
      providerMessageId: "<q3@example.com>",
      from: { value: "c3@example.com", displayName: "Customer 3" },
      content: { type: "email", email: { subject: "Question 3", text: "Body 3" } },
    });
    await until(() => t.state.get(IMAP_UID_KEY) === "3");
  });

  test("mail that arrived while stopped is taken once after a restart, none repeated", async () => {
    peer = await startImapPeer({ user: "sales", password: "pw", messages: [mail(1)] });
    const state = new Map<string, string>();
    const first = createTestContext({ provider: "smtp", channel: "email", settings: {}, state });
    const p1 = startImapPoller({ ctx: first.ctx, settings: settings(peer.port) });
    await until(() => state.get(IMAP_UID_KEY));
    peer.append(mail(2));
    await until(() => first.inbound.length === 1 && first.inbound);
    await p1.stop();

    peer.append(mail(3));
    peer.append(mail(4));
    const second = createTestContext({ provider: "smtp", channel: "email", settings: {}, state });
    pollers.push(startImapPoller({ ctx: second.ctx, settings: settings(peer.port) }));
    await until(() => state.get(IMAP_UID_KEY) === "4");
    await Bun.sleep(300);
    expect(subjects(first.inbound)).toEqual(["Question 2"]);
    expect(subjects(second.inbound)).toEqual(["Question 3", "Question 4"]);
  });

  test("a failing hand-over does not advance the UID: the message comes again with the next scan", async () => {
    peer = await startImapPeer({ user: "sales", password: "pw" });
    let failures = 1;
    const t = createTestContext({
      provider: "smtp",
      channel: "email",
      settings: {},
      onInbound: async () => {
        if (failures-- > 0) throw new Error("database busy");
      },
    });
    pollers.push(startImapPoller({ ctx: t.ctx, settings: settings(peer.port) }));
    await until(() => t.state.get(IMAP_UID_KEY));
    peer.append(mail(5));
    await until(() => t.logs.some((l) => l.m === "imap: fetching new mail failed"));
    expect(t.state.get(IMAP_UID_KEY)).toBe("0");
    peer.append(mail(6)); // the next EXISTS triggers the next scan
    await until(() => t.state.get(IMAP_UID_KEY) === "2");
    expect(subjects(t.inbound)).toEqual(["Question 5", "Question 5", "Question 6"]);
  });

  test("a refused login is logged and retried, never thrown at the appliance", async () => {
    peer = await startImapPeer({ user: "sales", password: "pw" });
    const t = createTestContext({ provider: "smtp", channel: "email", settings: {} });
    pollers.push(startImapPoller({ ctx: t.ctx, settings: settings(peer.port, "wrong") }));
    await until(() => t.logs.find((l) => l.m === "imap: session failed"));
    expect(t.state.get(IMAP_UID_KEY)).toBeUndefined();
    expect(t.inbound).toEqual([]);
  });
});
