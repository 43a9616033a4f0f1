/**
 * Settings reading shared by the Meta adapters: apply the schema defaults and check the result, so an
 * adapter built from raw config still sees every key (and a missing credential names itself).
 */
import type { Static, TSchema } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";

export function readSettings<S extends TSchema>({ schema, settings, provider }: { schema: S; settings: Record<string, unknown>; provider: string }): Static<S> {
  const withDefaults = Value.Default(schema, structuredClone(settings)) as unknown;
  const first = Value.Errors(schema, withDefaults).First();
  if (first) throw new Error(`${provider} settings: ${first.path || "/"} ${first.message}`);
  return withDefaults as Static<S>;
}
