/**
 * Provider registry: the config names a provider, this table turns the name into its definition
 * (settings schema + factory). Adding a provider touches its own folder and one line here; a wrong
 * name fails at start-up (config validation), never at the first send.
 */
import type { ProviderDefinition, ProviderName } from "./channel.types";
import { instagramProvider } from "./instagram/instagram.adapter";
import { messengerProvider } from "./messenger/messenger.adapter";
import { sandboxProvider } from "./sandbox/sandbox.adapter";
import { smtpProvider } from "./smtp/smtp.adapter";
import { telegramProvider } from "./telegram/telegram.adapter";
import { tiktokProvider } from "./tiktok/tiktok.adapter";
import { whatsappCloudProvider } from "./whatsapp-cloud/whatsapp-cloud.adapter";
import { xProvider } from "./x/x.adapter";

export const providers: Partial<Record<ProviderName, ProviderDefinition>> = {
  sandbox: sandboxProvider,
  "whatsapp-cloud": whatsappCloudProvider,
  messenger: messengerProvider,
  instagram: instagramProvider,
  telegram: telegramProvider,
  x: xProvider,
  tiktok: tiktokProvider,
  smtp: smtpProvider,
};

export function providerDefinition(name: ProviderName): ProviderDefinition | undefined {
  return providers[name];
}
