/**
 * What a message costs: its price type by the channel rules' price table, and its unit price (micros) from the
 * config's `[billing.prices]`. The ledger (ledger.service.ts) debits and refunds it.
 */
import { CHANNEL_RULES, FREE_PRICE_TYPE, type MessageType } from "../../channels/channel.rules";
import type { Channel } from "../../channels/channel.types";
import type { PricesNeeds } from "./billing.needs";
import { parseMicros } from "../../platform/money";
import { hasMediaHeader } from "../templates/templates.render";
import type { TemplateRow } from "../templates/templates.service";

/** priceType and unit price (micros) of a message (billing by the channel rules' price table). */
export function priceOf(
  deps: PricesNeeds,
  channel: Channel,
  type: MessageType,
  template: TemplateRow | null,
  headerMedia: boolean,
): { priceType: string; unitPrice: number } {
  const price = CHANNEL_RULES[channel].price;
  const priceType =
    (type === "template" && (headerMedia || (template && hasMediaHeader(template))) ? price.templateWithMedia : undefined) ??
    price[type === "interactive" ? "text" : type];
  if (!priceType) return { priceType: FREE_PRICE_TYPE, unitPrice: 0 };
  return { priceType, unitPrice: pricesInMicros(deps.config.billing.prices as Record<string, string>).get(priceType) ?? 0 };
}

/** The config's price table in micros, parsed once per config (it was ~1 % of a POST /messages). */
const parsedPrices = new WeakMap<Record<string, string>, Map<string, number>>();
function pricesInMicros(prices: Record<string, string>): Map<string, number> {
  let parsed = parsedPrices.get(prices);
  if (!parsed) parsedPrices.set(prices, (parsed = new Map(Object.entries(prices).map(([k, text]) => [k, parseMicros(text) ?? 0]))));
  return parsed;
}
