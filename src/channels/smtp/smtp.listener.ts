/**
 * Inbound SMTP (`inbound_smtp_listen`): the appliance accepts mail itself, parses it with mailparser and
 * hands a message event to `ctx.onInbound`. The DATA reply waits for onInbound: "250 OK" only once the
 * message is stored, a 451 otherwise, so the sending MTA keeps it queued and retries — no mail is lost.
 */
import { simpleParser } from "mailparser";
import { SMTPServer } from "smtp-server";
import type { AdapterContext } from "../channel.types";
import { emailToEvent } from "./smtp.inbound";

const MAX_MESSAGE_BYTES = 25 * 1024 * 1024;

export interface InboundSmtpListener {
  port: number;
  stop(): Promise<void>;
}

export function parseListen(listen: string): { host: string; port: number } {
  const match = listen.trim().match(/^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/);
  if (!match) throw new Error(`inbound_smtp_listen must be "host:port", got "${listen}"`);
  return { host: match[1] ?? (match[2] || "0.0.0.0"), port: Number(match[3]) };
}

export async function startInboundSmtp(opts: { ctx: AdapterContext; listen: string }): Promise<InboundSmtpListener> {
  const { ctx } = opts;
  const { host, port } = parseListen(opts.listen);
  const server = new SMTPServer({
    // NB! Plain, unauthenticated SMTP: meant to sit behind the company MTA on a private network.
    secure: false,
    authOptional: true,
    disabledCommands: ["AUTH", "STARTTLS"],
    size: MAX_MESSAGE_BYTES,
    banner: "Switchboard inbound",
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (chunk: Buffer) => chunks.push(chunk));
      simpleParser(stream)
        .then(async (parsed) => {
          if ((stream as unknown as { sizeExceeded?: boolean }).sizeExceeded) {
            return callback(Object.assign(new Error("Message too large"), { responseCode: 552 }));
          }
          const event = emailToEvent({ parsed, raw: Buffer.concat(chunks), now: ctx.now() });
          if (event) await ctx.onInbound([event]);
          else ctx.log.warn({ accountId: ctx.account.id, envelopeFrom: session.envelope.mailFrom }, "smtp: inbound mail without From ignored");
          callback();
        })
        .catch((err) => {
          ctx.log.error({ err, accountId: ctx.account.id }, "smtp: storing an inbound mail failed; sender will retry");
          callback(Object.assign(new Error("Temporary failure, try again later"), { responseCode: 451 }));
        });
    },
  });
  server.on("error", (err) => ctx.log.error({ err, accountId: ctx.account.id }, "smtp: inbound listener error"));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = (server as unknown as { server: { address(): { port: number } } }).server.address();
  ctx.log.info({ accountId: ctx.account.id, host, port: address.port }, "smtp: inbound listener started");
  return {
    port: address.port,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
