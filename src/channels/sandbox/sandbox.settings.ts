import { Type as t } from "@sinclair/typebox";

export const SandboxSettings = t.Object(
  {
    sent_after_ms: t.Integer({ minimum: 0, default: 50, description: "delay before a send is reported sent" }),
    delivered_after_ms: t.Integer({ minimum: 0, default: 200, description: "delay after sent before delivered" }),
    read_after_ms: t.Integer({ minimum: 0, default: 500, description: "delay after delivered before read" }),
    daily_dm_limit: t.Integer({ minimum: 0, default: 1000, description: "X only: DMs per UTC day (as the x provider)" }),
  },
  { additionalProperties: false },
);
