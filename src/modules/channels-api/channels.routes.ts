import { Elysia, t } from "elysia";
import type { ChannelsApiNeeds } from "./channels.needs";
import { data, errors } from "../../platform/http/envelope";
import { accountsOf } from "./channel-accounts";
import { named } from "../../platform/http/schemas";
import { hasScope } from "../../platform/http/scopes";
import { channelHealth } from "../messages/messages.reads";

const count = t.Integer({ minimum: 0 });
const AccountHealth = t.Object(
  {
    status: t.Union([t.Literal("ok"), t.Literal("degraded"), t.Literal("failing"), t.Literal("unknown")], {
      description: "from the last hour's finished sends: failing when all failed, degraded when ≥ 10 % did, unknown without any",
    }),
    lastSentAt: t.Union([t.String({ format: "date-time" }), t.Null()], { description: "the last send of the last hour" }),
    lastFailedAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
    lastFailureReason: t.Union([t.String(), t.Null()], { description: "e.g. PROVIDER_REJECTED, USER_BLOCKED" }),
    recentSent: count,
    recentFailed: count,
  },
  { description: "null for a key without messages:read" },
);

const ChannelAccount = named(
  "ChannelAccount",
  t.Object({
    id: t.String(),
    channel: t.String(),
    provider: t.String(),
    name: t.String(),
    default: t.Boolean(),
    status: t.String({ description: "active | auth_failed | error" }),
    health: t.Union([AccountHealth, t.Null()]),
    webhookUrl: t.String({ description: "the inbound webhook URL to give the provider" }),
  }),
);

export const channelsRoutes = (deps: ChannelsApiNeeds) =>
  new Elysia({ tags: ["Meta"] }).use(deps.guard).get(
    "/channels",
    async ({ auth }) => {
      const runtimes = await accountsOf(deps, auth.companyId);
      // Health tells how the company's sends go: a messages:read matter, not what any key may see.
      const health = hasScope(auth.scopes, "messages:read")
        ? await channelHealth({
            db: deps.db,
            now: deps.now(),
            companyId: auth.companyId,
            accounts: runtimes.map((r) => ({ id: r.account.id, channel: r.account.channel })),
          })
        : null;
      return {
        data: runtimes
          .toSorted((a, b) => a.account.channel.localeCompare(b.account.channel) || Number(b.account.isDefault) - Number(a.account.isDefault))
          .map((r) => ({
            id: r.account.id,
            channel: r.account.channel,
            provider: r.account.provider,
            name: r.account.name,
            default: r.account.isDefault,
            status: r.status,
            webhookUrl: `${deps.config.server.public_url.replace(/\/$/, "")}/hooks/${r.account.id}`,
            health: health?.get(r.account.id) ?? null,
          })),
      };
    },
    {
      scope: "any",
      response: { 200: data(t.Array(ChannelAccount)), ...errors() },
      detail: { summary: "Connected channel accounts, each with its health from the last hour of sends", operationId: "listChannels" },
    },
  );
