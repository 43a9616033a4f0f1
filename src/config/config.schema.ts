/**
 * The appliance configuration. Every key carries a description and a default, so a config that names
 * only `[storage]` and its `[[channels]]` is valid. config.example.toml documents the same keys; a test
 * keeps the two in step.
 */
import { join } from "node:path";
import { Type as t, type Static } from "@sinclair/typebox";
import { CHANNELS, PROVIDERS } from "../channels/channel.types";

const ListenAddress = t.String({ pattern: "^(\\[[0-9a-fA-F:.]+\\]|[A-Za-z0-9.-]+):\\d{1,5}$", description: "host:port to listen on" });
const PriceText = t.String({ pattern: "^\\d{1,12}(\\.\\d{1,6})?$", description: "decimal amount, up to 6 places" });
// A pattern, not format: "uuid" — TypeBox formats exist only once Elysia registered them, and config loads before.
const Uuid = t.String({ pattern: "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$", description: "UUID" });

export const SOCIAL_PLATFORMS = ["instagram", "facebook", "x", "tiktok"] as const;

export const ServerConfig = t.Object(
  {
    listen: t.String({
      ...ListenAddress,
      default: "127.0.0.1:8080",
      description: "host:port to listen on; loopback by default: open it to the network (0.0.0.0) behind TLS",
    }),
    public_url: t.String({ default: "http://localhost:8080", description: "URL the appliance is reached at; used to print provider webhook URLs" }),
    trusted_proxies: t.Array(t.String(), { default: [], description: "CIDRs whose X-Forwarded-For is honoured" }),
    shutdown_timeout_ms: t.Integer({ minimum: 0, default: 10000, description: "how long SIGTERM waits for in-flight requests" }),
    tls_cert_file: t.String({
      default: "",
      description: "PEM certificate (chain) to serve HTTPS with; with tls_key_file. Empty: plain HTTP. Re-read on SIGHUP",
    }),
    tls_key_file: t.String({ default: "", description: "PEM private key of tls_cert_file" }),
  },
  { default: {}, additionalProperties: false },
);

export const StorageConfig = t.Object(
  {
    data_dir: t.String({ default: "./data", description: "database, media files, backups" }),
    media_quota_mb: t.Integer({ minimum: 0, default: 1024, description: "total size of uploaded media per company" }),
    backups_keep: t.Integer({ minimum: 1, maximum: 100, default: 5, description: "automatic backups before upgrades kept in <data_dir>/backups (the newest)" }),
    driver: t.Union([t.Literal("sqlite"), t.Literal("postgres")], {
      default: "sqlite",
      description: "database engine: the embedded SQLite file, or a PostgreSQL shared by several instances",
    }),
    url: t.Optional(t.String({ pattern: "^postgres(ql)?://", description: 'PostgreSQL connection URL (driver = "postgres"); env:NAME / file:/path allowed' })),
    pool_size: t.Integer({ minimum: 2, maximum: 200, default: 10, description: "PostgreSQL: connections this instance keeps open" }),
    connect_timeout_ms: t.Integer({
      minimum: 100,
      maximum: 600_000,
      default: 5000,
      description: "PostgreSQL: how long a request waits for a connection before it is answered 503 STORAGE_UNAVAILABLE",
    }),
    statement_timeout_ms: t.Integer({
      minimum: 100,
      maximum: 3_600_000,
      default: 30000,
      description: "PostgreSQL: the longest a statement may run (or wait for a lock) before its request is answered 503",
    }),
  },
  { default: {}, additionalProperties: false },
);

export const BillingConfig = t.Object(
  {
    currency: t.String({ pattern: "^[A-Z]{3}$", default: "USD", description: "ISO 4217 currency of balances and prices" }),
    prices: t.Object(
      {
        wa_template_text: t.String({ ...PriceText, default: "0.050000" }),
        x_dm_campaign: t.String({ ...PriceText, default: "0.010000" }),
        email_campaign: t.String({ ...PriceText, default: "0.001000" }),
        tg_text: t.String({ ...PriceText, default: "0.002000" }),
        tg_media: t.String({ ...PriceText, default: "0.004000" }),
      },
      { default: {}, additionalProperties: false, description: "priceType -> decimal price per message" },
    ),
  },
  { default: {}, additionalProperties: false },
);

export const RateLimitConfig = t.Object(
  {
    requests_per_second: t.Number({ exclusiveMinimum: 0, default: 100, description: "sustained requests per second per API key" }),
    burst: t.Integer({ minimum: 1, default: 200, description: "bucket size: requests allowed at once" }),
  },
  { default: {}, additionalProperties: false },
);

export const LogConfig = t.Object(
  {
    level: t.Union([t.Literal("trace"), t.Literal("debug"), t.Literal("info"), t.Literal("warn"), t.Literal("error"), t.Literal("fatal")], {
      default: "info",
      description: "log level",
    }),
  },
  { default: {}, additionalProperties: false },
);

export const LicenseConfig = t.Object(
  { file: t.String({ default: "./license.json", description: "signed license file (company, modules, expiry)" }) },
  { default: {}, additionalProperties: false },
);

export const JobsConfig = t.Object(
  {
    workers: t.Integer({
      minimum: 1,
      maximum: 1024,
      default: 64,
      description: "concurrent job handlers per job type (message dispatch: this many per channel account, twice it in all)",
    }),
    max_attempts: t.Integer({ minimum: 1, default: 10, description: "attempts before a job is dead" }),
    lease_seconds: t.Integer({
      minimum: 5,
      default: 60,
      description: "how long a claimed job is held before it is reclaimed; each call to a channel provider may take a quarter of it",
    }),
  },
  { default: {}, additionalProperties: false },
);

export const WebhooksConfig = t.Object(
  {
    allow_private_networks: t.Boolean({ default: true, description: "allow endpoints on private/loopback addresses (on-prem receivers usually are)" }),
    allow: t.Array(t.String(), { default: [], description: "if non-empty, endpoint hosts or CIDRs that are allowed" }),
    deny: t.Array(t.String(), { default: [], description: "endpoint hosts or CIDRs that are refused" }),
    timeout_ms: t.Integer({ minimum: 100, maximum: 120000, default: 15000, description: "how long one delivery attempt waits for the receiver's response" }),
    concurrency: t.Integer({ minimum: 1, maximum: 1024, default: 64, description: "deliveries in flight at once, all endpoints together" }),
    concurrency_per_endpoint: t.Integer({
      minimum: 1,
      maximum: 256,
      default: 8,
      description: "deliveries in flight at once to one endpoint, so a slow receiver never holds up the others",
    }),
  },
  { default: {}, additionalProperties: false },
);

/** Requests to URLs a caller supplied (media, attachments): the guarded fetcher's address rules (DESIGN §23). */
export const OutboundConfig = t.Object(
  {
    allow_private_networks: t.Boolean({
      default: true,
      description: "allow media URLs on private networks (RFC 1918, ULA, CGNAT); loopback, link-local and metadata are always refused",
    }),
    deny: t.Array(t.String(), { default: [], description: "CIDRs media URLs may never reach" }),
    allow: t.Array(t.String(), { default: [], description: "CIDRs media URLs may reach even when another rule refuses them (e.g. 127.0.0.0/8 for tests)" }),
  },
  { default: {}, additionalProperties: false },
);

export const ChannelAccountConfig = t.Object(
  {
    id: t.String({ ...Uuid, description: "stable channelAccountId" }),
    company: t.String({ default: "default", description: "company slug" }),
    channel: t.Union(CHANNELS.map((c) => t.Literal(c))),
    provider: t.Union(
      PROVIDERS.map((p) => t.Literal(p)),
      { default: "sandbox" },
    ),
    name: t.String({ minLength: 1 }),
    default: t.Boolean({ default: false }),
    max_per_second: t.Optional(
      t.Number({
        minimum: 0,
        maximum: 100_000,
        description:
          "sends per second to the provider, shared by campaigns and POST /messages (default: WhatsApp 80, others 20, sandbox unlimited; 0 = unlimited)",
      }),
    ),
    chat_handle: t.Optional(
      t.String({
        pattern: "^[A-Za-z0-9._+-]{1,64}$",
        description:
          "who contacts write to, for click-to-chat links of sources: the WhatsApp number (digits, with country code), the Messenger Page username or id, the Instagram username, the Telegram bot username (default: the Messenger page_id)",
      }),
    ),
    settings: t.Record(t.String(), t.Unknown(), { default: {}, description: "provider-specific settings" }),
  },
  { additionalProperties: false },
);

export const SocialAccountConfig = t.Object(
  {
    id: t.String({ ...Uuid }),
    company: t.String({ default: "default" }),
    platform: t.Union(SOCIAL_PLATFORMS.map((p) => t.Literal(p))),
    provider: t.String({ default: "sandbox" }),
    name: t.String({ default: "" }),
    settings: t.Record(t.String(), t.Unknown(), { default: {} }),
  },
  { additionalProperties: false },
);

export const PIPELINE_TEMPLATES = ["sales", "recruiting", "admissions"] as const;

export const PipelineStageConfig = t.Object(
  {
    key: t.String({ pattern: "^[a-z][a-z0-9_]{0,39}$", description: "stable stage key (lower case, digits, _); the stage id is derived from it" }),
    name: t.String({ minLength: 1, maxLength: 100, description: "display name" }),
    kind: t.Union([t.Literal("open"), t.Literal("won"), t.Literal("lost")], { default: "open", description: "open | won | lost" }),
    probability: t.Optional(
      t.Integer({ minimum: 0, maximum: 100, description: "win probability in percent (default: won 100, lost 0, open stages spread evenly)" }),
    ),
  },
  { additionalProperties: false },
);

export const PipelineConfig = t.Object(
  {
    template: t.Union([...PIPELINE_TEMPLATES.map((n) => t.Literal(n)), t.Literal("custom")], {
      default: "sales",
      description: "built-in template (sales, recruiting, admissions) or custom ([[pipeline.stages]])",
    }),
    stages: t.Array(PipelineStageConfig, { default: [], description: 'custom stages in order; only with template = "custom"' }),
    terms: t.Record(t.String(), t.String({ minLength: 1, maxLength: 50 }), {
      default: {},
      description: "overrides of the terms record, records, stage, stages",
    }),
  },
  { default: {}, additionalProperties: false },
);

export const MetricsConfig = t.Object(
  {
    token: t.String({
      default: "",
      description: "bearer token GET /metrics requires (Authorization: Bearer <token>); empty: /metrics answers 401 to everyone",
    }),
  },
  { default: {}, additionalProperties: false },
);

export const SocialConfig = t.Object(
  {
    metrics_after_publish_seconds: t.Integer({
      minimum: 0,
      default: 60,
      description: "a published post's metrics are pulled once this long after it is published (then every 15 minutes with the rest)",
    }),
    refresh_interval_seconds: t.Integer({
      minimum: 1,
      default: 60,
      description: "a social account is pulled at most once per this many seconds (POST /social/analytics/refresh sooner: 429 with Retry-After)",
    }),
  },
  { default: {}, additionalProperties: false },
);

export const ConfigSchema = t.Object(
  {
    server: ServerConfig,
    storage: StorageConfig,
    billing: BillingConfig,
    rate_limit: RateLimitConfig,
    log: LogConfig,
    license: LicenseConfig,
    jobs: JobsConfig,
    webhooks: WebhooksConfig,
    outbound: OutboundConfig,
    metrics: MetricsConfig,
    channels: t.Array(ChannelAccountConfig, { default: [] }),
    social: SocialConfig,
    social_accounts: t.Array(SocialAccountConfig, { default: [] }),
    pipeline: PipelineConfig,
  },
  { additionalProperties: false },
);

export type Config = Static<typeof ConfigSchema>;
export type ChannelAccountEntry = Static<typeof ChannelAccountConfig>;

/** The SQLite database's file: `switchboard.db` in `[storage] data_dir`. */
export function databasePath(config: Pick<Config, "storage">): string {
  return join(config.storage.data_dir, "switchboard.db");
}
