/** API key scopes (DESIGN §4): `<area>:read|write` per area, plus `messages:send`; `*` grants all. */
export const SCOPE_AREAS = ["messages", "contacts", "conversations", "campaigns", "social", "pipeline", "sources", "webhooks", "media", "billing"] as const;

export const SCOPES = [...SCOPE_AREAS.flatMap((a) => [`${a}:read`, `${a}:write`] as const), "messages:send"] as const;
export type Scope = (typeof SCOPES)[number];

export function isScope(s: string): s is Scope {
  return (SCOPES as readonly string[]).includes(s);
}

export function hasScope(granted: readonly string[], needed: Scope): boolean {
  return granted.includes("*") || granted.includes(needed);
}
