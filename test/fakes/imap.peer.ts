/**
 * A real IMAP server for tests: hoodiecrow-imap (a scriptable in-memory IMAP4rev1 server by the author of
 * imapflow) with IDLE, on a free loopback port. `append` delivers a message the way a mail server does:
 * stored with the next UID and announced to selected (and idling) clients with an untagged EXISTS.
 */
// @ts-expect-error hoodiecrow-imap ships no types
import hoodiecrow from "hoodiecrow-imap";

export interface ImapPeer {
  port: number;
  /** Stores a message in the mailbox (RFC 5322 source) and notifies clients. */
  append(raw: string, mailbox?: string): void;
  close(): Promise<void>;
}

export async function startImapPeer(opts: { user: string; password: string; messages?: string[]; mailbox?: string }): Promise<ImapPeer> {
  const mailbox = opts.mailbox ?? "INBOX";
  const server = hoodiecrow({
    plugins: ["IDLE", "UIDPLUS", "ENABLE", "ID"],
    users: { [opts.user]: { password: opts.password } },
    storage: { [mailbox]: { messages: (opts.messages ?? []).map((raw) => ({ raw, flags: [] })) } },
  });
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  return {
    port,
    append: (raw, box = mailbox) => void server.appendMessage(box, [], false, raw),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
