/**
 * A test app whose e-mail account sends over SMTP to a real peer (test/fakes/smtp.peer.ts), beside the sandbox's
 * other channels, and the mail that peer received.
 */
import { SmtpPeer } from "../fakes/smtp.peer";
import { createTestApp, sandboxChannels } from "./test-app";

export async function smtpTestApp({ accountId, publicUrl }: { accountId: string; publicUrl?: string }) {
  const peer = await SmtpPeer.start();
  const app = await createTestApp({
    config: {
      ...(publicUrl ? { server: { public_url: publicUrl } } : {}),
      channels: [
        ...sandboxChannels().filter((c) => c.channel !== "email"),
        {
          id: accountId,
          channel: "email",
          provider: "smtp",
          name: "Mail",
          default: true,
          settings: { host: "127.0.0.1", port: peer.port, secure: false, from: "Shop <shop@shop.example>" },
        },
      ],
    },
  });
  /** The `nth` mail to `to`, once the queue has dispatched what is due (waits up to 10 s for the peer to have it). */
  const received = async (to: string, nth = 1) => {
    await app.deps.queue.drain();
    const deadline = Date.now() + 10_000;
    for (;;) {
      const mails = peer.messages.filter((m) => m.envelope.to.includes(to));
      if (mails.length >= nth) return mails[nth - 1]!;
      if (Date.now() > deadline) throw new Error(`no mail ${nth} to ${to}`);
      await Bun.sleep(20);
    }
  };
  return {
    app,
    peer,
    received,
    close: async () => {
      await app.close();
      await peer.stop();
    },
  };
}
