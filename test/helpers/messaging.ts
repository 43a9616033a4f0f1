/** Helpers for messaging tests: simulate inbound messages through the sandbox hooks, read events. */
import { ACCOUNTS, type TestApp } from "./test-app";

export type ChannelName = keyof typeof ACCOUNTS;

/** A contact writes in on `channel` (through the real /hooks path), `agoMs` before the app's clock. */
export async function inbound(
  app: TestApp,
  channel: ChannelName,
  from: { phone?: string; email?: string; handle?: string; name?: string; username?: string },
  text = "hi",
  agoMs = 60_000,
  id?: string,
) {
  const res = await app.request("POST", `/hooks/${ACCOUNTS[channel]}`, {
    body: { from, text, timestamp: new Date(app.clock.now().getTime() - agoMs).toISOString(), ...(id ? { id } : {}) },
  });
  if (res.status !== 202) throw new Error(`inbound failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res;
}

/** The committed events (of `type`), in emit order, with `data` as JSON as a webhook receiver sees it. */
export function eventsOf(app: TestApp, type?: string): { type: string; data: any }[] {
  return app.emitted.filter((e) => !type || e.type === type).map((e) => ({ type: e.type, data: JSON.parse(JSON.stringify(e.data)) }));
}

export async function balanceOf(app: TestApp): Promise<string> {
  return (await app.request("GET", "/me")).body.data.company.balance.amount;
}
