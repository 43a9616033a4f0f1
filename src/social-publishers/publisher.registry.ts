/**
 * Social provider registry: `[[social_accounts]] provider` → its definition (settings check + factory).
 * Adding a provider touches its own file and one line here; a wrong name fails at start-up.
 */
import { facebookPublisher } from "./facebook.publisher";
import { instagramPublisher } from "./instagram.publisher";
import type { PublisherDefinition, SocialProvider } from "./publisher.types";
import { sandboxPublisher } from "./sandbox.publisher";
import { tiktokPublisher } from "./tiktok.publisher";
import { xPublisher } from "./x.publisher";

export const publishers = {
  sandbox: sandboxPublisher,
  instagram: instagramPublisher,
  facebook: facebookPublisher,
  x: xPublisher,
  tiktok: tiktokPublisher,
} as const satisfies Record<SocialProvider, PublisherDefinition>;

export function publisherDefinition(name: string): PublisherDefinition | undefined {
  return (publishers as Record<string, PublisherDefinition>)[name];
}
