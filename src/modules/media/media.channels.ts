/**
 * Per-channel media rules for POST /media's optional `channel` field: the adapters' `capabilities.media`
 * (mime type → max bytes). `channel` names a channel (`whatsapp`: the company's default account of that
 * channel, else its first) or a channel account id.
 */
import type { ChannelAccount, ChannelCapabilities } from "../../channels/channel.types";
import type { DetailCollector } from "../../platform/errors";

/** The part of the channel runtime (deps.channels) this module reads. */
export interface ChannelsView {
  all(): { account: ChannelAccount; adapter: { capabilities: Pick<ChannelCapabilities, "media"> } }[];
}

export interface MediaRules {
  /** For messages: `whatsapp (WA Main)`. */
  label: string;
  media: Record<string, number>;
}

/** The media rules `channel` selects for the company, or a `/channel` detail. */
export function mediaRulesFor({
  channels,
  companySlug,
  channel,
  errors,
}: {
  channels: ChannelsView | undefined;
  companySlug: string;
  channel: string;
  errors: DetailCollector;
}): MediaRules | undefined {
  const mine = (channels?.all() ?? []).filter((r) => r.account.company === companySlug);
  const byId = mine.find((r) => r.account.id === channel);
  const ofChannel = mine.filter((r) => r.account.channel === channel);
  const pick = byId ?? ofChannel.find((r) => r.account.isDefault) ?? ofChannel[0];
  if (!pick) {
    errors.add("/channel", `no channel account "${channel}" is configured for this company (give a channel name such as whatsapp, or an account id)`);
    return undefined;
  }
  return { label: `${pick.account.channel} (${pick.account.name})`, media: pick.adapter.capabilities.media };
}

const mb = (n: number) => (n >= 1 << 20 ? `${+(n / (1 << 20)).toFixed(1)} MB` : `${Math.ceil(n / 1024)} KB`);

/** Checks a file's type and size against a channel's rules; adds `/file` details. */
export function checkMediaAgainst({ rules, mimeType, size, errors }: { rules: MediaRules; mimeType: string; size: number; errors: DetailCollector }): void {
  const max = rules.media[mimeType];
  if (max === undefined) {
    const accepted = Object.keys(rules.media);
    errors.add(
      "/file",
      `${mimeType} is not accepted on ${rules.label}` + (accepted.length ? ` (accepted: ${accepted.join(", ")})` : " (it accepts no uploaded media)"),
    );
  } else if (size > max) {
    errors.add("/file", `${mb(size)} is over the ${mb(max)} limit for ${mimeType} on ${rules.label}`);
  }
}
