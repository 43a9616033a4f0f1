/**
 * Inbound by IMAP (`imap_host`): watch one mailbox with IDLE (imapflow), hand every new message to
 * `ctx.onInbound`, and persist the last handed-over UID (with the mailbox's UIDVALIDITY) in `ctx.state`
 * — after onInbound resolved — so a restart neither loses nor repeats mail.
 *
 * First start (or a changed UIDVALIDITY) begins at the mailbox's current end: the appliance takes
 * replies from now on, it does not import years of an existing inbox.
 */
import { ImapFlow } from "imapflow";
import { simpleParser } from "mailparser";
import type { AdapterContext } from "../channel.types";
import { emailToEvent } from "./smtp.inbound";
import type { SmtpSettings } from "./smtp.settings";

export const IMAP_UID_KEY = "imap.last_uid";
export const IMAP_UIDVALIDITY_KEY = "imap.uid_validity";
/** Safety net besides IDLE: some servers drop EXISTS notifications after long idles. */
const RESCAN_MS = 5 * 60 * 1000;

export interface ImapPoller {
  stop(): Promise<void>;
}

export function startImapPoller(opts: { ctx: AdapterContext; settings: SmtpSettings }): ImapPoller {
  const { ctx, settings } = opts;
  const stopping = new AbortController();
  let client: ImapFlow | undefined;

  const session = async () => {
    client = new ImapFlow({
      host: settings.imap_host,
      port: settings.imap_port,
      secure: settings.imap_secure,
      auth: { user: settings.imap_username, pass: settings.imap_password },
      tls: { rejectUnauthorized: settings.tls_reject_unauthorized },
      logger: false,
      // IDLE again 1 s after our last command (imapflow's default is 15 s, during which new mail waits).
      autoIdleDelay: 1000,
    });
    const c = client;
    await c.connect();
    // NB! The mailbox is opened, not locked, for the session: imapflow starts IDLE only while no lock is
    // held, so a session-long lock would leave new mail to the periodic rescan. Each fetch takes the lock.
    const mailbox = await c.mailboxOpen(settings.imap_mailbox);
    const validity = String(mailbox.uidValidity);
    if ((await ctx.state.read(IMAP_UIDVALIDITY_KEY)) !== validity) {
      await ctx.state.write(IMAP_UIDVALIDITY_KEY, validity);
      await ctx.state.write(IMAP_UID_KEY, String(Math.max(0, Number(mailbox.uidNext) - 1)));
    }
    let chain = Promise.resolve();
    const scan = () => {
      chain = chain.then(() => fetchNew(c)).catch((err) => ctx.log.error({ err, accountId: ctx.account.id }, "imap: fetching new mail failed"));
    };
    c.on("exists", scan);
    scan();
    const timer = setInterval(scan, RESCAN_MS);
    await new Promise<void>((resolve) => {
      c.once("close", resolve);
      stopping.signal.addEventListener("abort", () => resolve(), { once: true });
    });
    clearInterval(timer);
    await chain;
  };

  const fetchNew = async (c: ImapFlow) => {
    const last = Number((await ctx.state.read(IMAP_UID_KEY)) ?? "0");
    // NB! Collect first: imapflow forbids other commands while a fetch is being iterated.
    const found: { uid: number; source: Buffer }[] = [];
    const lock = await c.getMailboxLock(settings.imap_mailbox);
    try {
      for await (const message of c.fetch(`${last + 1}:*`, { uid: true, source: true }, { uid: true })) {
        // "n:*" always matches the newest message, even when its UID is below n.
        if (message.uid > last && message.source) found.push({ uid: message.uid, source: message.source });
      }
    } finally {
      lock.release();
    }
    for (const { uid, source } of found.sort((a, b) => a.uid - b.uid)) {
      const parsed = await simpleParser(source);
      const event = emailToEvent({ parsed, raw: source, now: ctx.now() });
      if (event) await ctx.onInbound([event]); // throws → UID not advanced → fetched again next scan
      await ctx.state.write(IMAP_UID_KEY, String(uid));
    }
  };

  const loop = async () => {
    let backoffMs = 1000;
    while (!stopping.signal.aborted) {
      try {
        await session();
        backoffMs = 1000;
      } catch (err) {
        ctx.log.error({ err, accountId: ctx.account.id, waitMs: backoffMs }, "imap: session failed");
      }
      await client?.logout().catch(() => client?.close());
      if (stopping.signal.aborted) break;
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, backoffMs);
        stopping.signal.addEventListener("abort", () => (clearTimeout(t), resolve()), { once: true });
      });
      backoffMs = Math.min(backoffMs * 2, 5 * 60 * 1000);
    }
  };
  const done = loop();

  return {
    async stop() {
      stopping.abort();
      await done;
    },
  };
}
