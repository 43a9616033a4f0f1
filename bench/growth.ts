/**
 * Growth (issue 42, item 3): the soak's request mix (bench/soak.ts: sends, contact upserts, tag lists,
 * inbound hooks, conversation lists, /me; 16 clients) against an empty appliance and against one whose
 * database was pre-filled with 1M contacts (identity, consent, one of the tags t0–t6 the mix lists),
 * 1M conversations and 10M messages (10 per conversation, a year old and older), written straight into the
 * SQLite file before `serve` as bench/campaigns.bench.ts does. Same run, both servers up, rounds alternating
 * (`--seconds` per database in all, split in `--rounds`); reported: idle CPU of each, p50/p99 per route class
 * and filled ÷ empty (goal: p99 ≤ 1.5× for every class).
 * Run: `./node_modules/.bin/bun bench/growth.ts [--scale 1] [--seconds 60] [--rounds 2] [--skip tagList,…]` (`--scale 0.1`: 100k contacts,
 * 1M messages, 100k conversations).
 */
import { Database } from "bun:sqlite";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { cpuSeconds, fmt } from "./lib";
import { type MixAppliance, type Quantiles, quantiles, ROUTE_CLASSES, type RouteClass, runMix, startMixAppliance } from "./soak";

const { values } = parseArgs({
  options: {
    scale: { type: "string", default: "1" },
    seconds: { type: "string", default: "60" },
    rounds: { type: "string", default: "2" },
    // route classes left out of the mix, e.g. `--skip tagList` (to see what grows besides it)
    skip: { type: "string", default: "" },
  },
});
const SCALE = Number(values.scale);
const SECONDS = Number(values.seconds);
const ROUNDS = Number(values.rounds);
const SKIP = new Set(values.skip.split(",").filter(Boolean) as RouteClass[]);
const CONTACTS = Math.round(1_000_000 * SCALE);
const PER_CONVERSATION = 10; // 1M conversations, 10M messages at scale 1

/** Writes the contacts, conversations and messages into the appliance's SQLite file (no server open on it). */
function fill(init: { configPath: string; dataDir: string; companyId: string }): void {
  const t0 = performance.now();
  const config = Bun.TOML.parse(readFileSync(init.configPath, "utf8")) as { channels: { id: string; channel: string }[] };
  const account = config.channels.find((c) => c.channel === "whatsapp")!.id;
  const company = init.companyId;
  const db = new Database(join(init.dataDir, "switchboard.db"));
  db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF; PRAGMA cache_size = -1000000");
  const tags = Array.from({ length: 7 }, (_, t) => {
    const id = Bun.randomUUIDv7();
    db.query("INSERT INTO tags (id, company_id, name, created_at) VALUES (?, ?, ?, ?)").run(id, company, `t${t}`, Date.now());
    return id;
  });
  const contact = db.prepare(
    "INSERT INTO contacts (id, company_id, first_name, custom_fields, blocked, created_at, updated_at) VALUES (?, ?, ?, '{}', 0, ?, ?)",
  );
  const identity = db.prepare(
    "INSERT INTO contact_identities (company_id, contact_id, channel, value, status, created_at) VALUES (?, ?, 'whatsapp', ?, 'verified', ?)",
  );
  const consent = db.prepare(
    "INSERT INTO contact_consents (contact_id, channel, company_id, status, source, updated_at) VALUES (?, 'whatsapp', ?, 'opted_in', 'import', ?)",
  );
  const tag = db.prepare("INSERT INTO contact_tags (contact_id, tag_id, created_at) VALUES (?, ?, ?)");
  const state = db.prepare(
    "INSERT INTO contact_channel_state (contact_id, channel_account_id, company_id, last_inbound_at, updated_at) VALUES (?, ?, ?, ?, ?)",
  );
  const conversation = db.prepare(
    `INSERT INTO conversations (id, company_id, contact_id, channel, channel_account_id, status, last_message_at, last_message_id, closed_at, created_at, updated_at, unread_count)
     VALUES (?, ?, ?, 'whatsapp', ?, ?, ?, ?, ?, ?, ?, 0)`,
  );
  const message = db.prepare(
    `INSERT INTO messages (id, company_id, conversation_id, contact_id, channel, channel_account_id, direction, type, content, address, status,
       price_type, unit_price, charged, refunded, metadata, provider_message_id, sent_at, delivered_at, read_at, created_at, updated_at)
     VALUES (?, ?, ?, ?, 'whatsapp', ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, '{}', ?, ?, ?, ?, ?, ?)`,
  );
  // Timestamps from two years ago to one year ago, in order: every live row sorts after the filled ones.
  const from = Date.now() - 2 * 365 * 86_400_000;
  const stepMs = (365 * 86_400_000) / (CONTACTS * PER_CONVERSATION);
  const hello = JSON.stringify({ template: { name: "hello_world", language: "en", params: { "body.1": "A" } } });
  for (let done = 0; done < CONTACTS; ) {
    const n = Math.min(20_000, CONTACTS - done);
    db.transaction(() => {
      for (let j = done; j < done + n; j++) {
        const at = Math.floor(from + j * PER_CONVERSATION * stepMs);
        const id = Bun.randomUUIDv7("hex", at);
        const phone = `+1${2_000_000_000 + j}`;
        contact.run(id, company, `C${j}`, at, at);
        identity.run(company, id, phone, at);
        consent.run(id, company, at);
        tag.run(id, tags[j % 7]!, at);
        const conv = Bun.randomUUIDv7("hex", at);
        let last = "";
        let lastAt = at;
        const ids: [string, number][] = [];
        for (let m = 0; m < PER_CONVERSATION; m++) {
          lastAt = Math.floor(at + m * stepMs);
          last = Bun.randomUUIDv7("hex", lastAt);
          ids.push([last, lastAt]);
        }
        const open = j % 10 === 0;
        conversation.run(conv, company, id, account, open ? "open" : "closed", lastAt, last, open ? null : lastAt, at, lastAt);
        state.run(id, account, company, lastAt, lastAt);
        for (let m = 0; m < PER_CONVERSATION; m++) {
          const [mid, mat] = ids[m]!;
          if (m % 2 === 0)
            message.run(
              mid,
              company,
              conv,
              id,
              account,
              "inbound",
              "text",
              `{"text":"hi ${m}"}`,
              phone,
              "received",
              "free",
              0,
              0,
              `sandbox.in.${mid}`,
              null,
              null,
              null,
              mat,
              mat,
            );
          else
            message.run(
              mid,
              company,
              conv,
              id,
              account,
              "outbound",
              "template",
              hello,
              phone,
              "read",
              "wa_template_text",
              50_000,
              1,
              `sandbox.${mid}`,
              mat,
              mat,
              mat,
              mat,
              mat,
            );
        }
      }
    })();
    done += n;
  }
  // No ANALYZE: the appliance never runs one, so a grown database has no sqlite_stat1 either.
  db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  db.close();
  console.log(
    `filled ${fmt(CONTACTS)} contacts, ${fmt(CONTACTS)} conversations, ${fmt(CONTACTS * PER_CONVERSATION)} messages in ${fmt((performance.now() - t0) / 1000, 1)} s`,
  );
}

type Samples = Record<RouteClass, number[]>;
const newSamples = () => Object.fromEntries(ROUTE_CLASSES.map((c) => [c, [] as number[]])) as Samples;

/** One round of the mix; the first 10 % of it is warm-up, not counted. */
async function measure(name: string, app: MixAppliance, seconds: number, samples: Samples): Promise<void> {
  const r = await runMix(app, seconds, (cls, ms, at) => at >= 0.1 && samples[cls].push(ms), SKIP);
  console.log(`  ${name}: ${fmt(r.requests)} requests (${fmt(r.requests / seconds)}/s), statuses ${JSON.stringify(r.statuses)}`);
}

/** CPU the server spends with no request (background work that follows the data), % of one core over 5 s. */
async function idleCpu(app: MixAppliance): Promise<number> {
  const a = cpuSeconds(app.pid);
  await Bun.sleep(5000);
  return (cpuSeconds(app.pid).process - a.process) * 20;
}

console.log(`growth: scale ${SCALE}, ${ROUNDS} rounds of ${fmt(SECONDS / ROUNDS, 1)} s of the soak's mix per database, alternating`);
const filled = await startMixAppliance(fill);
const empty = await startMixAppliance();
const samples = { empty: newSamples(), filled: newSamples() };
try {
  console.log(`idle CPU after start: empty ${fmt(await idleCpu(empty))} %, filled ${fmt(await idleCpu(filled))} %`);
  // Alternating rounds, so load from elsewhere on the machine falls on both alike.
  for (let round = 0; round < ROUNDS; round++) {
    await measure("empty ", empty, SECONDS / ROUNDS, samples.empty);
    await Bun.sleep(2000);
    await measure("filled", filled, SECONDS / ROUNDS, samples.filled);
    await Bun.sleep(2000);
  }
} finally {
  await Promise.all([empty.stop(), filled.stop()]);
}
const emptyQ = Object.fromEntries(ROUTE_CLASSES.map((c) => [c, quantiles(samples.empty[c])])) as Record<RouteClass, Quantiles>;
const filledQ = Object.fromEntries(ROUTE_CLASSES.map((c) => [c, quantiles(samples.filled[c])])) as Record<RouteClass, Quantiles>;
console.log(`${"route class".padEnd(17)} ${"empty p50/p99".padStart(14)} ${"filled p50/p99".padStart(15)}   filled ÷ empty p50, p99 (goal p99 ≤ 1.5×)`);
for (const c of ROUTE_CLASSES.filter((c) => !SKIP.has(c))) {
  const e = emptyQ[c];
  const f = filledQ[c];
  const ratio = f.p99 / e.p99;
  console.log(
    `${c.padEnd(17)} ${`${fmt(e.p50, 1)}/${fmt(e.p99, 1)}`.padStart(14)} ${`${fmt(f.p50, 1)}/${fmt(f.p99, 1)}`.padStart(15)}   ${fmt(f.p50 / e.p50, 2)}×, ${fmt(ratio, 2)}×${ratio > 1.5 ? "  (over the goal)" : ""}`,
  );
}
process.exit(0);
