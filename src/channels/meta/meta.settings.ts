/**
 * Settings reading shared by the Meta adapters: apply the schema defaults and check the result, so an
 * adapter built from raw config still sees every key (and a missing credential names itself).
 */
import { Type, type Static, type TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

export function readSettings<S extends TSchema>({ schema, settings, provider }: { schema: S; settings: Record<string, unknown>; provider: string }): Static<S> {
  const withDefaults = Value.Default(schema, structuredClone(settings)) as unknown;
  const first = Value.Errors(schema, withDefaults).First();
  if (first) throw new Error(`${provider} settings: ${first.path || "/"} ${first.message}`);
  return withDefaults as Static<S>;
}

/**
 * The webhook and host keys every Meta provider's settings end with: the app secret that signs webhooks, the
 * verify token of the GET handshake, and the Graph host (`app` names whose secret it is in the description).
 */
export const metaWebhookKeys = ({ app, baseUrl, host }: { app: string; baseUrl: string; host: string }) => ({
  app_secret: Type.String({ minLength: 1, default: "", description: `${app} app secret; verifies X-Hub-Signature-256 on every webhook POST.` }),
  verify_token: Type.String({
    minLength: 1,
    default: "",
    description: "Token you type into the app's webhook settings; answered in the GET hub.challenge handshake.",
  }),
  base_url: Type.String({ default: baseUrl, description: `${host} host including the version; tests point it at a fake.` }),
});
