/**
 * The unsubscribe service (DESIGN §20): its tokens, signed with a secret kept in the database (claimed at first
 * use), the links put in mail, and the one-click opt-out.
 */
import { randomBytes } from "node:crypto";
import { claimAdapterValue } from "../../channels/adapter-state";
import type { Db } from "../../db/client";
import type { EventBus } from "../../events";
import type { RateLimiter } from "../../platform/http/rate-limit";
import { getCompany } from "../companies/companies.service";
import { survivingContactId } from "../contacts/contacts.merge";
import { setConsent } from "../contacts/contacts.consent";
import { getContact } from "../contacts/contacts.service";
import { createUnsubscribeTokens, deriveUnsubscribeKey, type UnsubscribeRef } from "./unsubscribe.tokens";

/** Path of the public routes (outside /api/public/v1, no API key): `{public_url}/u/{token}`. */
export const UNSUBSCRIBE_PATH = "/u";

/**
 * Token versions and where each one's secret lives (adapter_state, pseudo-account "unsubscribe"). To rotate:
 * add `2: "secret_v2"` and make CURRENT 2; drop 1 once mail carrying v1 tokens no longer matters.
 */
const SECRET_KEYS: Record<number, string> = { 1: "secret_v1" };
const CURRENT_VERSION = 1;

export type Unsubscribe = Awaited<ReturnType<typeof buildUnsubscribe>>;
export type UnsubscribeLinks = Pick<Unsubscribe, "url">;

/** What the module needs of the app. */
export interface UnsubscribeNeeds {
  db: Db;
  events: EventBus;
  now: () => Date;
  limiter: RateLimiter;
  config: { server: { public_url: string; trusted_proxies: string[] } };
}

export async function buildUnsubscribe({ db, events, now, config }: Pick<UnsubscribeNeeds, "db" | "events" | "now" | "config">) {
  // A random secret per appliance, generated at first use and kept (never a constant; survives restarts).
  const keys = new Map<number, ReturnType<typeof deriveUnsubscribeKey>>();
  for (const [version, key] of Object.entries(SECRET_KEYS))
    keys.set(
      Number(version),
      deriveUnsubscribeKey(await claimAdapterValue(db, "unsubscribe", key, () => randomBytes(32).toString("base64url")), Number(version)),
    );
  const tokens = createUnsubscribeTokens({ keys, current: CURRENT_VERSION });
  const base = config.server.public_url.replace(/\/+$/, "");
  return {
    tokens,
    /** `{public_url}/u/{token}` for this recipient, or undefined when no token can be made. */
    url(ref: UnsubscribeRef): string | undefined {
      const token = tokens.sign(ref);
      return token ? `${base}${UNSUBSCRIBE_PATH}/${token}` : undefined;
    },
    /** Whether the token's contact still exists (deleted: the link is dead; merged away: the one it went into). */
    async exists(ref: UnsubscribeRef): Promise<boolean> {
      const id = await survivingContactId({ db, companyId: ref.companyId, contactId: ref.contactId });
      try {
        await getContact({ db, companyId: ref.companyId, id });
        return true;
      } catch {
        return false;
      }
    },
    /** The company's display name for the page; undefined when the company is gone. */
    async companyName(ref: UnsubscribeRef): Promise<string | undefined> {
      try {
        return (await getCompany({ db, id: ref.companyId })).name;
      } catch {
        return undefined;
      }
    },
    /**
     * Opts the contact out of the token's channel (source campaign_unsubscribe). Idempotent: a contact already
     * opted out changes nothing and emits nothing. A contact merged into another opts that one out (the link was
     * mailed to the person, whichever record they are now). False when the contact no longer exists (deleted).
     */
    async optOut(ref: UnsubscribeRef): Promise<boolean> {
      try {
        // The lookup in the same unit as the write: a merge cannot slip in between.
        await db.unit(async () =>
          setConsent({
            db,
            events,
            now,
            companyId: ref.companyId,
            contactId: await survivingContactId({ db, companyId: ref.companyId, contactId: ref.contactId }),
            channels: [ref.channel],
            status: "opted_out",
            source: "campaign_unsubscribe",
          }),
        );
        return true;
      } catch (e) {
        if ((e as { code?: string }).code === "NOT_FOUND") return false;
        throw e;
      }
    },
  };
}
