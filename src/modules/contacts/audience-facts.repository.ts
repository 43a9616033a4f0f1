/**
 * The send facts of an audience member (channels/channel.eligibility.ts decides on them): ONE definition of
 * each fact — its values and its SQL — that the audience store's page (each member's facts, for the fan-out's
 * verdict per recipient) and count (each member's facts reduced to one code, for the estimate over a million
 * contacts) both read (audience.repository.ts). A new fact is one entry in MEMBER_FACTS and its SQL in
 * memberFactsSql; the codes, their number and their decoding (factGroups) follow from the list.
 *
 * The single send (POST /messages) reads the same facts of its one contact through point lookups of its own
 * (messages.verdict.ts sendVerdict: contacts.service contactSendFacts, conversations' channelState), and the
 * three are judged by the one pure `eligibility`.
 *
 * Kept free of app imports like the audience store (the audience-count worker thread loads it).
 */

/**
 * Each fact's values, in code order. `identityStatus`: the best identity on the channel (`verified` before any
 * other), or none; `consent` on the channel (no row: unknown); `lastInbound`: the last inbound message on the
 * account — never, before the window's cut-off, or since it.
 */
export const MEMBER_FACTS = {
  identityStatus: ["verified", "pending", null],
  blocked: [false, true],
  consent: ["opted_in", "opted_out", "unknown"],
  lastInbound: ["never", "before", "since"],
} as const;
export type MemberFact = keyof typeof MEMBER_FACTS;
const FACTS = Object.keys(MEMBER_FACTS) as MemberFact[];

/** Send facts of a group of audience members, and how many they are. */
export type AudienceFactGroup = { -readonly [F in MemberFact]: (typeof MEMBER_FACTS)[F][number] } & { n: number };

/** A code's place value of each fact (mixed radix in MEMBER_FACTS' order: identity × 18 + blocked × 9 + consent × 3 + last inbound). */
export const FACT_WEIGHT = Object.fromEntries(FACTS.map((f, k) => [f, FACTS.slice(k + 1).reduce((w, g) => w * MEMBER_FACTS[g].length, 1)])) as Record<
  MemberFact,
  number
>;
/** How many fact combinations (codes) there are: 54. */
export const FACT_CODES = FACTS.reduce((n, f) => n * MEMBER_FACTS[f].length, 1);

/** The groups of members counted per code (zero counts left out). */
export function factGroups(n: number[]): AudienceFactGroup[] {
  const groups: AudienceFactGroup[] = [];
  n.forEach((count, code) => {
    if (!count) return;
    const group = { n: count } as Record<string, unknown>;
    for (const f of FACTS) group[f] = MEMBER_FACTS[f][Math.floor(code / FACT_WEIGHT[f]) % MEMBER_FACTS[f].length];
    groups.push(group as AudienceFactGroup);
  });
  return groups;
}

/** SQL of a fact in one statement, and the join it reads through (if any). */
export interface FactSql {
  sql: string;
  join?: string;
}

/**
 * Each fact's SQL over the member whose contact id is `id` (`contact`: the alias of a row carrying its
 * `blocked` column, or null when the statement has none at hand). `channel`, `account`, `since` are the
 * statement's placeholders for the channel, the channel account and the window's cut-off (null: the window does
 * not apply, every member counts `never`). `value`: the fact as a page row carries it; `code`: its index in
 * MEMBER_FACTS (null: not at hand, counted as code 0).
 */
export function memberFactsSql(
  { id, contact }: { id: string; contact: string | null },
  p: { channel: string; account: string; since: string | null },
): Record<MemberFact, { value: FactSql | null; code: FactSql | null }> {
  const identities = `FROM contact_identities i WHERE i.contact_id = ${id} AND i.channel = ${p.channel}`;
  const consent = `LEFT JOIN contact_consents cc ON cc.contact_id = ${id} AND cc.channel = ${p.channel}`;
  const blocked = contact ? { sql: `${contact}.blocked` } : null;
  return {
    identityStatus: {
      // A page reads the identity's value too (the address), as `status:value`.
      value: { sql: `(SELECT i.status || ':' || i.value ${identities} ORDER BY i.status = 'pending', i.created_at, i.value LIMIT 1)` },
      code: { sql: `coalesce((SELECT min(CASE i.status WHEN 'verified' THEN 0 ELSE 1 END) ${identities}), 2)` },
    },
    blocked: { value: blocked, code: blocked },
    consent: {
      value: { sql: "cc.status", join: consent },
      code: { sql: "coalesce(CASE cc.status WHEN 'opted_in' THEN 0 WHEN 'opted_out' THEN 1 ELSE 2 END, 2)", join: consent },
    },
    lastInbound: {
      value: { sql: "s.last_inbound_at", join: `LEFT JOIN contact_channel_state s ON s.contact_id = ${id} AND s.channel_account_id = ${p.account}` },
      code: {
        sql:
          p.since === null
            ? "0"
            : `coalesce((SELECT CASE WHEN s.last_inbound_at > ${p.since} THEN 2 ELSE 1 END FROM contact_channel_state s WHERE s.contact_id = ${id} AND s.channel_account_id = ${p.account}), 0)`,
      },
    },
  };
}

/** The joins of these facts' SQL, each once, in order. */
export function factJoins(facts: (FactSql | null)[]): string {
  return [...new Set(facts.flatMap((f) => (f?.join ? [f.join] : [])))].join("\n       ");
}

/** One member's code: the facts' codes at their place values (those not at hand count 0). */
export function factCodeSql(facts: ReturnType<typeof memberFactsSql>): { sql: string; joins: string } {
  const terms = FACTS.flatMap((f) => {
    const c = facts[f].code;
    return c ? [FACT_WEIGHT[f] === 1 ? c.sql : `${c.sql} * ${FACT_WEIGHT[f]}`] : [];
  });
  return { sql: terms.join("\n       + "), joins: factJoins(FACTS.map((f) => facts[f].code)) };
}
