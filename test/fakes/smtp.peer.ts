/**
 * A real SMTP peer on loopback (smtp-server + mailparser) standing in for the company's mail relay:
 * records every accepted message (envelope, parsed mail, raw bytes), can require AUTH, and can
 * refuse chosen recipients with 550 (permanent) or 451 (temporary). Also delivers mail to another
 * SMTP listener (`SmtpPeer.deliver`) for inbound tests.
 */
import { simpleParser, type ParsedMail } from "mailparser";
import nodemailer from "nodemailer";
import type Mail from "nodemailer/lib/mailer";
import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  envelope: { from: string | false; to: string[] };
  parsed: ParsedMail;
  raw: Buffer;
  authUser?: string;
}

export class SmtpPeer {
  readonly messages: ReceivedMail[] = [];
  private rejections = new Map<string, { code: number; message: string }>();
  private waiters: (() => void)[] = [];

  private constructor(
    private server: SMTPServer,
    readonly host: string,
    readonly port: number,
  ) {}

  /** With `username`/`password`, AUTH is required and anything else gets 535. */
  static async start(opts: { username?: string; password?: string; host?: string; port?: number } = {}): Promise<SmtpPeer> {
    let peer: SmtpPeer | undefined;
    const server = new SMTPServer({
      secure: false,
      disabledCommands: ["STARTTLS"],
      authOptional: !opts.username,
      allowInsecureAuth: true,
      logger: false,
      onAuth(auth, _session, callback) {
        if (opts.username && auth.username === opts.username && auth.password === opts.password) return callback(null, { user: auth.username });
        callback(Object.assign(new Error("Authentication credentials invalid"), { responseCode: 535 }));
      },
      onRcptTo(address, _session, callback) {
        const rejection = peer!.rejections.get(address.address.toLowerCase());
        if (rejection) return callback(Object.assign(new Error(rejection.message), { responseCode: rejection.code }));
        callback();
      },
      onData(stream, session, callback) {
        const chunks: Buffer[] = [];
        stream.on("data", (c: Buffer) => chunks.push(c));
        simpleParser(stream)
          .then((parsed) => {
            peer!.messages.push({
              envelope: { from: session.envelope.mailFrom ? session.envelope.mailFrom.address : false, to: session.envelope.rcptTo.map((r) => r.address) },
              parsed,
              raw: Buffer.concat(chunks),
              authUser: session.user as string | undefined,
            });
            for (const wake of peer!.waiters.splice(0)) wake();
            callback();
          })
          .catch((err) => callback(err));
      },
    });
    const host = opts.host ?? "127.0.0.1";
    await new Promise<void>((resolve) => server.listen(opts.port ?? 0, host, resolve));
    const port = (server as unknown as { server: { address(): { port: number } } }).server.address().port;
    peer = new SmtpPeer(server, host, port);
    return peer;
  }

  /** Refuse RCPT TO for this address: 550 (mailbox unavailable, permanent) or 451 (try later). */
  rejectRecipient(address: string, code: 550 | 551 | 553 | 451 | 452, message?: string): void {
    this.rejections.set(address.toLowerCase(), { code, message: message ?? (code >= 500 ? "Mailbox unavailable" : "Temporary local problem, try later") });
  }

  clearRejections(): void {
    this.rejections.clear();
  }

  async waitForMessages(count: number, timeoutMs = 5000): Promise<ReceivedMail[]> {
    const end = Date.now() + timeoutMs;
    while (this.messages.length < count) {
      if (Date.now() > end) throw new Error(`smtp peer: expected ${count} messages, got ${this.messages.length}`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return this.messages;
  }

  stop(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  /** Send one mail to an SMTP listener (e.g. the appliance's inbound_smtp_listen), plain, no AUTH. */
  static async deliver(opts: { host?: string; port: number; mail: Mail.Options }): Promise<{ messageId: string; response: string }> {
    const transport = nodemailer.createTransport({ host: opts.host ?? "127.0.0.1", port: opts.port, secure: false, ignoreTLS: true });
    try {
      const info = await transport.sendMail(opts.mail);
      return { messageId: info.messageId, response: info.response };
    } finally {
      transport.close();
    }
  }
}
