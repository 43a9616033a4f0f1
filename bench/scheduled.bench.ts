/**
 * Scheduled one-to-one messages (issue 37, DESIGN §18): N messages scheduled for the same minute, drained when
 * it comes, against N messages sent at once — same process, same run, alternated so that outside load falls
 * on both. The due job (eligibility again, then the dispatch) should drain them at the send path's rate.
 *
 *   ./node_modules/.bin/bun bench/scheduled.bench.ts [--messages 100000] [--rounds 2]
 *
 * In process (test app, sandbox WhatsApp, manual clock, the WAL checkpointer on its worker as `serve` runs it):
 * acceptance in units of 1,000 sends, then `queue.drain()` timed until every message is `sent`.
 */
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startCheckpointer } from "../src/db/checkpointer";
import { sendMessage } from "../src/modules/messages/messages.service";
import { silentLogger } from "../src/platform/logger";
import { createTestApp, sandboxChannels } from "../test/helpers/test-app";
import { fmt } from "./lib";

const { values } = parseArgs({ options: { messages: { type: "string", default: "100000" }, rounds: { type: "string", default: "2" } } });
const N = Number(values.messages);
const ROUNDS = Number(values.rounds);
const MINUTE = 60_000;

/** Accepts N sends (scheduled one minute ahead when `scheduled`), then drains them: messages sent per second. */
async function run(scheduled: boolean): Promise<{ acceptS: number; drainS: number; rate: number }> {
  const app = await createTestApp({
    balance: "1000000",
    recordEvents: false,
    config: { channels: sandboxChannels({ sent_after_ms: 0, delivered_after_ms: 3_600_000, read_after_ms: 0 }) },
  });
  const checkpointer = startCheckpointer({ db: app.deps.db, path: join(app.dir, "switchboard.db"), log: silentLogger });
  try {
    const at = new Date(app.deps.now().getTime() + MINUTE).toISOString();
    const t0 = performance.now();
    for (let done = 0; done < N; done += 1000) {
      await app.deps.db.unit(async () => {
        for (let i = done; i < Math.min(N, done + 1000); i++)
          await sendMessage(app.deps, {
            companyId: app.company.id,
            apiKeyId: null,
            input: {
              channel: "whatsapp",
              to: { phone: `+1415${String(5_000_000 + (i % 5000)).padStart(7, "0")}` },
              type: "template",
              template: { name: "hello_world", params: { "body.1": "x" } },
              ...(scheduled ? { scheduledAt: at } : {}),
            },
          });
      });
    }
    const acceptS = (performance.now() - t0) / 1000;
    if (scheduled) app.clock.advance(MINUTE); // the minute comes: every one of them is due at once
    const t1 = performance.now();
    await app.deps.queue.drain({ timeoutMs: 1_800_000 });
    const drainS = (performance.now() - t1) / 1000;
    const sent = (app.deps.db.$client.query("SELECT count(*) AS n FROM messages WHERE status = 'sent'").get() as { n: number }).n;
    if (sent !== N) throw new Error(`${sent} of ${N} sent`);
    return { acceptS, drainS, rate: N / drainS };
  } finally {
    checkpointer.stop();
    await app.close();
  }
}

const ratios: number[] = [];
for (let round = 1; round <= ROUNDS; round++) {
  const now = await run(false);
  const later = await run(true);
  ratios.push(later.rate / now.rate);
  console.log(
    `round ${round}: at once ${fmt(now.rate)}/s (accepted in ${fmt(now.acceptS, 1)} s) · scheduled, due in one minute ${fmt(later.rate)}/s (accepted in ${fmt(later.acceptS, 1)} s) · ratio ${fmt(later.rate / now.rate, 2)}`,
  );
}
console.log(`${fmt(N)} scheduled for one minute drain at ${ratios.map((r) => fmt(r, 2)).join(", ")} × the rate of as many sent at once`);
