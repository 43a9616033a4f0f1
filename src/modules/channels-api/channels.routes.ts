import { Elysia, t } from "elysia";
import type { Deps } from "../../deps";
import { data, errors } from "../../platform/http/envelope";
import { accountsFor } from "../messages/messages.service";
import { named } from "../../platform/http/schemas";

const ChannelAccount = named("ChannelAccount", t.Object({
  id: t.String(),
  channel: t.String(),
  provider: t.String(),
  name: t.String(),
  default: t.Boolean(),
  status: t.String({ description: "active | auth_failed | error" }),
  webhookUrl: t.String({ description: "the inbound webhook URL to give the provider" }),
}));

export const channelsRoutes = (deps: Deps) =>
  new Elysia({ tags: ["Meta"] }).use(deps.guard).get(
    "/channels",
    ({ auth }) => ({
      data: accountsFor(deps, auth.companyId)
        .toSorted((a, b) => a.account.channel.localeCompare(b.account.channel) || Number(b.account.isDefault) - Number(a.account.isDefault))
        .map((r) => ({
          id: r.account.id,
          channel: r.account.channel,
          provider: r.account.provider,
          name: r.account.name,
          default: r.account.isDefault,
          status: r.status,
          webhookUrl: `${deps.config.server.public_url.replace(/\/$/, "")}/hooks/${r.account.id}`,
        })),
    }),
    { scope: "any", response: { 200: data(t.Array(ChannelAccount)), ...errors() }, detail: { summary: "Connected channel accounts", operationId: "listChannels" } },
  );
