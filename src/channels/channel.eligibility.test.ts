/** The send-eligibility verdict: a table per channel × reason, and the precedence of reasons. */
import { describe, expect, test } from "bun:test";
import { eligibility, windowCutoff, windowState, type EligibilityFacts, type Verdict } from "./channel.eligibility";
import { CHANNEL_RULES, type MessageType } from "./channel.rules";
import type { Channel } from "./channel.types";

const NOW = Date.parse("2026-06-01T12:00:00Z");
const H = 3_600_000;

function verdict(channel: Channel, over: Partial<Omit<EligibilityFacts, "rule">> = {}): Verdict {
  return eligibility({
    rule: CHANNEL_RULES[channel],
    identity: { status: "verified" },
    blocked: false,
    consent: "opted_in",
    lastInboundAt: NOW - 1 * H,
    messageType: "template",
    purpose: "campaign",
    now: NOW,
    ...over,
  });
}

const ok: Verdict = { ok: true };
const no = (reason: string) => ({ ok: false as const, reason });

type Row = [string, Channel, Partial<Omit<EligibilityFacts, "rule">>, Verdict | { ok: false; reason: string }];

const rows: Row[] = [];
const CHANNELS = Object.keys(CHANNEL_RULES) as Channel[];
// Reasons every channel shares.
for (const ch of CHANNELS) {
  rows.push([`${ch}: all facts good → ok`, ch, {}, ok]);
  rows.push([`${ch}: no identity → noIdentity`, ch, { identity: null }, no("noIdentity")]);
  rows.push([`${ch}: campaign to a pending identity → noIdentity`, ch, { identity: { status: "pending" } }, no("noIdentity")]);
  rows.push([`${ch}: blocked → blocked`, ch, { blocked: true }, no("blocked")]);
  rows.push([`${ch}: campaign without opt-in → noConsent`, ch, { consent: "unknown" }, no("noConsent")]);
  rows.push([`${ch}: campaign after opt-out → noConsent`, ch, { consent: "opted_out" }, no("noConsent")]);
  rows.push([`${ch}: direct send with unknown consent → ok`, ch, { consent: "unknown", purpose: "direct" }, ok]);
  rows.push([`${ch}: direct send after opt-out → noConsent`, ch, { consent: "opted_out", purpose: "direct" }, no("noConsent")]);
}
// Windows, per the seed's channel rules.
const windows: Row[] = [
  ["whatsapp: template 25 h after the last inbound → ok (templates open the window)", "whatsapp", { lastInboundAt: NOW - 25 * H }, ok],
  ["whatsapp: template to a contact who never wrote → ok", "whatsapp", { lastInboundAt: null }, ok],
  ["whatsapp: text 23 h after → ok", "whatsapp", { messageType: "text", purpose: "direct", lastInboundAt: NOW - 23 * H }, ok],
  ["whatsapp: text 25 h after → outsideWindow", "whatsapp", { messageType: "text", purpose: "direct", lastInboundAt: NOW - 25 * H }, no("outsideWindow")],
  ["whatsapp: text, never wrote → outsideWindow", "whatsapp", { messageType: "text", purpose: "direct", lastInboundAt: null }, no("outsideWindow")],
  ["instagram: template 23 h after → ok", "instagram", { lastInboundAt: NOW - 23 * H }, ok],
  ["instagram: template 25 h after → outsideWindow (window applies to templates)", "instagram", { lastInboundAt: NOW - 25 * H }, no("outsideWindow")],
  ["instagram: never wrote → outsideWindow", "instagram", { lastInboundAt: null }, no("outsideWindow")],
  ["messenger: template 25 h after → outsideWindow", "messenger", { lastInboundAt: NOW - 25 * H }, no("outsideWindow")],
  ["messenger: template exactly at 24 h → outsideWindow (the window has closed)", "messenger", { lastInboundAt: NOW - 24 * H }, no("outsideWindow")],
  ["tiktok: 47 h after → ok", "tiktok", { lastInboundAt: NOW - 47 * H }, ok],
  ["tiktok: 49 h after → outsideWindow", "tiktok", { lastInboundAt: NOW - 49 * H }, no("outsideWindow")],
  ["tiktok: never wrote → noPriorConversation", "tiktok", { lastInboundAt: null }, no("noPriorConversation")],
  ["x: a month after a DM → ok (no timed window)", "x", { lastInboundAt: NOW - 720 * H }, ok],
  ["x: never wrote → noPriorConversation", "x", { lastInboundAt: null }, no("noPriorConversation")],
  ["telegram: a month after → ok", "telegram", { lastInboundAt: NOW - 720 * H }, ok],
  ["telegram: never wrote → noPriorConversation", "telegram", { lastInboundAt: null }, no("noPriorConversation")],
  ["email: never wrote → ok (no window)", "email", { lastInboundAt: null }, ok],
];
// Precedence: each row combines a reason with every lower one; the highest wins.
const precedence: Row[] = [
  [
    "noIdentity beats blocked, noConsent, noPriorConversation",
    "x",
    { identity: null, blocked: true, consent: "unknown", lastInboundAt: null },
    no("noIdentity"),
  ],
  ["blocked beats noConsent and outsideWindow", "instagram", { blocked: true, consent: "opted_out", lastInboundAt: NOW - 30 * H }, no("blocked")],
  ["noConsent beats noPriorConversation", "telegram", { consent: "unknown", lastInboundAt: null }, no("noConsent")],
  ["noConsent beats outsideWindow", "messenger", { consent: "unknown", lastInboundAt: NOW - 30 * H }, no("noConsent")],
];

describe("eligibility", () => {
  for (const [name, ch, facts, want] of [...rows, ...windows, ...precedence]) test(name, () => expect(verdict(ch, facts)).toEqual(want as Verdict));

  test("message types outside the window's scope are not bound by it", () => {
    for (const type of ["text", "media", "template"] as MessageType[])
      expect(verdict("whatsapp", { messageType: type, purpose: "direct", lastInboundAt: NOW - 30 * H }).ok).toBe(type === "template");
  });
});

describe("windowState", () => {
  test("since_last_inbound: open until the provider timestamp + hours", () => {
    expect(windowState({ rule: CHANNEL_RULES.whatsapp, lastInboundAt: NOW - H, now: NOW })).toEqual({ open: true, expiresAt: new Date(NOW + 23 * H) });
    expect(windowState({ rule: CHANNEL_RULES.tiktok, lastInboundAt: NOW - 49 * H, now: NOW })).toEqual({ open: false, expiresAt: new Date(NOW - H) });
  });
  test("contact_wrote_first: open once the contact wrote, never expires", () => {
    expect(windowState({ rule: CHANNEL_RULES.telegram, lastInboundAt: null, now: NOW })).toEqual({ open: false, expiresAt: null });
    expect(windowState({ rule: CHANNEL_RULES.x, lastInboundAt: 0, now: NOW })).toEqual({ open: true, expiresAt: null });
  });
  test("none: always open", () => expect(windowState({ rule: CHANNEL_RULES.email, lastInboundAt: null, now: NOW })).toEqual({ open: true, expiresAt: null }));
});

describe("windowCutoff (the estimate's bulk form of the window)", () => {
  const lasts = [null, NOW - H, NOW - 24 * H, NOW - 24 * H + 1, NOW - 30 * H, NOW - 49 * H, 0];
  for (const channel of CHANNELS)
    test(`${channel}: open ⇔ last inbound after the cut-off, null ⇔ the window does not apply`, () => {
      const rule = CHANNEL_RULES[channel];
      for (const type of ["text", "media", "template"] as MessageType[]) {
        const cutoff = windowCutoff(rule, type, NOW);
        const applies = rule.window.kind !== "none" && rule.window.appliesTo.includes(type);
        expect(cutoff === null).toBe(!applies);
        if (cutoff !== null) for (const last of lasts) expect(last !== null && last > cutoff).toBe(windowState({ rule, lastInboundAt: last, now: NOW }).open);
      }
    });
});
