CREATE TABLE "adapter_state" (
	"account_id" text NOT NULL,
	"key" text NOT NULL,
	"value" text NOT NULL,
	CONSTRAINT "adapter_state_account_id_key_pk" PRIMARY KEY("account_id","key")
);
--> statement-breakpoint
CREATE TABLE "api_keys" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"name" text NOT NULL,
	"prefix" text NOT NULL,
	"hash" text NOT NULL,
	"scopes" text NOT NULL,
	"allowed_ips" text NOT NULL,
	"rate_limit" bigint,
	"expires_at" bigint,
	"revoked_at" bigint,
	"last_used_at" bigint,
	"created_at" bigint NOT NULL,
	CONSTRAINT "api_keys_hash_unique" UNIQUE("hash")
);
--> statement-breakpoint
CREATE TABLE "campaign_recipients" (
	"campaign_id" text NOT NULL,
	"contact_id" text NOT NULL,
	"status" text NOT NULL,
	"reason" text,
	"message_id" text,
	"replied_at" bigint,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "campaign_recipients_campaign_id_contact_id_pk" PRIMARY KEY("campaign_id","contact_id")
);
--> statement-breakpoint
CREATE TABLE "campaigns" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"name" text NOT NULL,
	"status" text NOT NULL,
	"channel" text NOT NULL,
	"channel_account_id" text NOT NULL,
	"template_id" text NOT NULL,
	"audience" text NOT NULL,
	"ask_values" text NOT NULL,
	"header_media_id" text,
	"price_type" text NOT NULL,
	"unit_price" bigint NOT NULL,
	"estimated_cost" bigint NOT NULL,
	"spent" bigint DEFAULT 0 NOT NULL,
	"pause_reason" text,
	"failure_reason" text,
	"resolved_at" bigint,
	"resolve_cursor" text,
	"recent_outcomes" text DEFAULT '' NOT NULL,
	"matched" bigint DEFAULT 0 NOT NULL,
	"n_pending" bigint DEFAULT 0 NOT NULL,
	"n_queued" bigint DEFAULT 0 NOT NULL,
	"n_sent" bigint DEFAULT 0 NOT NULL,
	"n_delivered" bigint DEFAULT 0 NOT NULL,
	"n_read" bigint DEFAULT 0 NOT NULL,
	"n_failed" bigint DEFAULT 0 NOT NULL,
	"n_canceled" bigint DEFAULT 0 NOT NULL,
	"n_replied" bigint DEFAULT 0 NOT NULL,
	"x_no_identity" bigint DEFAULT 0 NOT NULL,
	"x_no_consent" bigint DEFAULT 0 NOT NULL,
	"x_blocked" bigint DEFAULT 0 NOT NULL,
	"x_outside_window" bigint DEFAULT 0 NOT NULL,
	"x_no_prior_conversation" bigint DEFAULT 0 NOT NULL,
	"scheduled_at" bigint,
	"started_at" bigint,
	"completed_at" bigint,
	"canceled_at" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"api_key_id" text
);
--> statement-breakpoint
CREATE TABLE "companies" (
	"id" text PRIMARY KEY NOT NULL,
	"slug" text NOT NULL,
	"name" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "companies_slug_unique" UNIQUE("slug")
);
--> statement-breakpoint
CREATE TABLE "consent_history" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"contact_id" text NOT NULL,
	"channel" text NOT NULL,
	"status" text NOT NULL,
	"source" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "contact_channel_state" (
	"contact_id" text NOT NULL,
	"channel_account_id" text NOT NULL,
	"company_id" text NOT NULL,
	"last_inbound_at" bigint,
	"conversation_ref" text,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "contact_channel_state_contact_id_channel_account_id_pk" PRIMARY KEY("contact_id","channel_account_id")
);
--> statement-breakpoint
CREATE TABLE "contact_consents" (
	"contact_id" text NOT NULL,
	"channel" text NOT NULL,
	"company_id" text NOT NULL,
	"status" text NOT NULL,
	"source" text NOT NULL,
	"updated_at" bigint NOT NULL,
	CONSTRAINT "contact_consents_contact_id_channel_pk" PRIMARY KEY("contact_id","channel")
);
--> statement-breakpoint
CREATE TABLE "contact_identities" (
	"company_id" text NOT NULL,
	"contact_id" text NOT NULL,
	"channel" text NOT NULL,
	"value" text NOT NULL,
	"status" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "contact_identities_company_id_channel_value_pk" PRIMARY KEY("company_id","channel","value")
);
--> statement-breakpoint
CREATE TABLE "contact_import_errors" (
	"import_id" text NOT NULL,
	"row" bigint NOT NULL,
	"pointer" text NOT NULL,
	"message" text NOT NULL
);
--> statement-breakpoint
CREATE TABLE "contact_imports" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"format" text NOT NULL,
	"status" text NOT NULL,
	"file_path" text NOT NULL,
	"bytes" bigint NOT NULL,
	"processed" bigint DEFAULT 0 NOT NULL,
	"created" bigint DEFAULT 0 NOT NULL,
	"updated" bigint DEFAULT 0 NOT NULL,
	"failed" bigint DEFAULT 0 NOT NULL,
	"consent_kept" bigint DEFAULT 0 NOT NULL,
	"error" text,
	"created_at" bigint NOT NULL,
	"started_at" bigint,
	"finished_at" bigint
);
--> statement-breakpoint
CREATE TABLE "contact_source_history" (
	"id" text PRIMARY KEY NOT NULL,
	"contact_id" text NOT NULL,
	"from_source_id" text,
	"to_source_id" text,
	"via" text NOT NULL,
	"by" text,
	"at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "contact_sources" (
	"contact_id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"source_id" text,
	"via" text NOT NULL,
	"referral" text,
	"attributed_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "contact_tags" (
	"contact_id" text NOT NULL,
	"tag_id" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "contact_tags_contact_id_tag_id_pk" PRIMARY KEY("contact_id","tag_id")
);
--> statement-breakpoint
CREATE TABLE "contacts" (
	"seq" bigint PRIMARY KEY NOT NULL,
	"id" text NOT NULL,
	"company_id" text NOT NULL,
	"first_name" text,
	"last_name" text,
	"city" text,
	"country" text,
	"custom_fields" text DEFAULT '{}' NOT NULL,
	"blocked" bigint DEFAULT 0 NOT NULL,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"deleted_at" bigint,
	CONSTRAINT "contacts_id_unique" UNIQUE("id")
);
--> statement-breakpoint
CREATE TABLE "conversation_notes" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"conversation_id" text NOT NULL,
	"text" text NOT NULL,
	"author" text,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "conversations" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"contact_id" text NOT NULL,
	"channel" text NOT NULL,
	"channel_account_id" text NOT NULL,
	"status" text NOT NULL,
	"assignee_id" text,
	"assignee_name" text,
	"last_message_at" bigint,
	"last_message_id" text,
	"closed_at" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "custom_fields" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"key" text NOT NULL,
	"label" text NOT NULL,
	"type" text NOT NULL,
	"options" text,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "idempotency_keys" (
	"api_key_id" text NOT NULL,
	"key" text NOT NULL,
	"method" text NOT NULL,
	"path" text NOT NULL,
	"fingerprint" text NOT NULL,
	"status" bigint NOT NULL,
	"body" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "idempotency_keys_api_key_id_key_pk" PRIMARY KEY("api_key_id","key")
);
--> statement-breakpoint
CREATE TABLE "jobs" (
	"id" text PRIMARY KEY NOT NULL,
	"type" text NOT NULL,
	"payload" text NOT NULL,
	"status" text NOT NULL,
	"run_at" bigint NOT NULL,
	"attempts" bigint DEFAULT 0 NOT NULL,
	"max_attempts" bigint NOT NULL,
	"lease_until" bigint,
	"lease_token" text,
	"group_key" text,
	"last_error" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "ledger_entries" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"kind" text NOT NULL,
	"amount" bigint NOT NULL,
	"balance_after" bigint NOT NULL,
	"message_id" text,
	"description" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "media" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"filename" text NOT NULL,
	"mime_type" text NOT NULL,
	"size" bigint NOT NULL,
	"sha256" text NOT NULL,
	"path" text NOT NULL,
	"created_at" bigint NOT NULL,
	"api_key_id" text
);
--> statement-breakpoint
CREATE TABLE "media_provider_ids" (
	"media_id" text NOT NULL,
	"channel_account_id" text NOT NULL,
	"provider_media_id" text NOT NULL,
	"created_at" bigint NOT NULL,
	CONSTRAINT "media_provider_ids_media_id_channel_account_id_pk" PRIMARY KEY("media_id","channel_account_id")
);
--> statement-breakpoint
CREATE TABLE "messages" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"conversation_id" text NOT NULL,
	"contact_id" text NOT NULL,
	"channel" text NOT NULL,
	"channel_account_id" text NOT NULL,
	"direction" text NOT NULL,
	"type" text NOT NULL,
	"content" text NOT NULL,
	"address" text NOT NULL,
	"status" text NOT NULL,
	"price_type" text NOT NULL,
	"unit_price" bigint NOT NULL,
	"charged" bigint NOT NULL,
	"refunded" bigint DEFAULT 0 NOT NULL,
	"metadata" text NOT NULL,
	"template_id" text,
	"reply_to_message_id" text,
	"provider_message_id" text,
	"error_code" text,
	"error_reason" text,
	"error_message" text,
	"provider_timestamp" bigint,
	"sent_at" bigint,
	"delivered_at" bigint,
	"read_at" bigint,
	"failed_at" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL,
	"api_key_id" text,
	"campaign_id" text
);
--> statement-breakpoint
CREATE TABLE "pipeline_record_history" (
	"id" text PRIMARY KEY NOT NULL,
	"record_id" text NOT NULL,
	"from_stage_id" text,
	"to_stage_id" text NOT NULL,
	"at" bigint NOT NULL,
	"by" text,
	"reason" text
);
--> statement-breakpoint
CREATE TABLE "pipeline_records" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"title" text NOT NULL,
	"contact_id" text NOT NULL,
	"conversation_id" text,
	"stage_id" text NOT NULL,
	"status" text NOT NULL,
	"value_micros" bigint,
	"owner_id" text,
	"expected_close_date" text,
	"custom_fields" text NOT NULL,
	"stage_entered_at" bigint NOT NULL,
	"won_at" bigint,
	"lost_at" bigint,
	"contact_deleted_at" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "pipeline_tasks" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"title" text NOT NULL,
	"notes" text,
	"due_at" bigint,
	"remind_at" bigint,
	"status" text NOT NULL,
	"completed_at" bigint,
	"record_id" text,
	"contact_id" text,
	"assignee_id" text,
	"reminder_job_id" text,
	"reminded_at" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "social_account_days" (
	"account_id" text NOT NULL,
	"company_id" text NOT NULL,
	"platform" text NOT NULL,
	"date" text NOT NULL,
	"followers" bigint NOT NULL,
	"views" bigint NOT NULL,
	"reach" bigint NOT NULL,
	"engagements" bigint NOT NULL,
	"synced_at" bigint NOT NULL,
	CONSTRAINT "social_account_days_account_id_date_pk" PRIMARY KEY("account_id","date")
);
--> statement-breakpoint
CREATE TABLE "social_platform_media" (
	"account_id" text NOT NULL,
	"external_id" text NOT NULL,
	"company_id" text NOT NULL,
	"platform" text NOT NULL,
	"post_id" text,
	"text" text NOT NULL,
	"media_type" text NOT NULL,
	"url" text,
	"published_at" bigint NOT NULL,
	"views" bigint NOT NULL,
	"reach" bigint NOT NULL,
	"likes" bigint NOT NULL,
	"comments" bigint NOT NULL,
	"shares" bigint NOT NULL,
	"engagements" bigint NOT NULL,
	"synced_at" bigint NOT NULL,
	CONSTRAINT "social_platform_media_account_id_external_id_pk" PRIMARY KEY("account_id","external_id")
);
--> statement-breakpoint
CREATE TABLE "social_post_targets" (
	"id" text PRIMARY KEY NOT NULL,
	"post_id" text NOT NULL,
	"company_id" text NOT NULL,
	"account_id" text NOT NULL,
	"platform" text NOT NULL,
	"status" text NOT NULL,
	"external_id" text,
	"url" text,
	"error_code" text,
	"error_message" text,
	"attempts" bigint DEFAULT 0 NOT NULL,
	"progress" text NOT NULL,
	"first_attempt_at" bigint,
	"published_at" bigint,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "social_posts" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"status" text NOT NULL,
	"text" text NOT NULL,
	"media" text NOT NULL,
	"overrides" text NOT NULL,
	"scheduled_at" bigint,
	"published_at" bigint,
	"requires_approval" bigint NOT NULL,
	"approved_at" bigint,
	"run_token" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "sources" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"name" text NOT NULL,
	"type" text NOT NULL,
	"channel" text NOT NULL,
	"channel_account_id" text NOT NULL,
	"code" text NOT NULL,
	"external_id" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "tags" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"name" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "templates" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"channel_account_id" text NOT NULL,
	"channel" text NOT NULL,
	"name" text NOT NULL,
	"language" text NOT NULL,
	"category" text NOT NULL,
	"status" text NOT NULL,
	"components" text NOT NULL,
	"params" text NOT NULL,
	"source" text NOT NULL,
	"provider_template_id" text,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_attempts" (
	"id" text PRIMARY KEY NOT NULL,
	"delivery_id" text NOT NULL,
	"trigger" text NOT NULL,
	"attempted_at" bigint NOT NULL,
	"status_code" bigint,
	"duration_ms" bigint NOT NULL,
	"response_excerpt" text,
	"error" text
);
--> statement-breakpoint
CREATE TABLE "webhook_deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"endpoint_id" text NOT NULL,
	"message_id" text NOT NULL,
	"event_type" text NOT NULL,
	"status" text NOT NULL,
	"attempts" bigint DEFAULT 0 NOT NULL,
	"next_attempt_at" bigint,
	"last_status_code" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_endpoints" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"url" text NOT NULL,
	"description" text,
	"events" text NOT NULL,
	"enabled" bigint NOT NULL,
	"disabled_reason" text,
	"secret" text NOT NULL,
	"previous_secret" text,
	"previous_secret_expires_at" bigint,
	"failing_since" bigint,
	"created_at" bigint NOT NULL,
	"updated_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "webhook_messages" (
	"id" text PRIMARY KEY NOT NULL,
	"company_id" text NOT NULL,
	"event_type" text NOT NULL,
	"body" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
ALTER TABLE "api_keys" ADD CONSTRAINT "api_keys_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "consent_history" ADD CONSTRAINT "consent_history_contact_id_contacts_id_fk" FOREIGN KEY ("contact_id") REFERENCES "public"."contacts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_consents" ADD CONSTRAINT "contact_consents_contact_id_contacts_id_fk" FOREIGN KEY ("contact_id") REFERENCES "public"."contacts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_identities" ADD CONSTRAINT "contact_identities_contact_id_contacts_id_fk" FOREIGN KEY ("contact_id") REFERENCES "public"."contacts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_import_errors" ADD CONSTRAINT "contact_import_errors_import_id_contact_imports_id_fk" FOREIGN KEY ("import_id") REFERENCES "public"."contact_imports"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_imports" ADD CONSTRAINT "contact_imports_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_tags" ADD CONSTRAINT "contact_tags_contact_id_contacts_id_fk" FOREIGN KEY ("contact_id") REFERENCES "public"."contacts"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contact_tags" ADD CONSTRAINT "contact_tags_tag_id_tags_id_fk" FOREIGN KEY ("tag_id") REFERENCES "public"."tags"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "contacts" ADD CONSTRAINT "contacts_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "custom_fields" ADD CONSTRAINT "custom_fields_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "ledger_entries" ADD CONSTRAINT "ledger_entries_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "media_provider_ids" ADD CONSTRAINT "media_provider_ids_media_id_media_id_fk" FOREIGN KEY ("media_id") REFERENCES "public"."media"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "pipeline_record_history" ADD CONSTRAINT "pipeline_record_history_record_id_pipeline_records_id_fk" FOREIGN KEY ("record_id") REFERENCES "public"."pipeline_records"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "social_post_targets" ADD CONSTRAINT "social_post_targets_post_id_social_posts_id_fk" FOREIGN KEY ("post_id") REFERENCES "public"."social_posts"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tags" ADD CONSTRAINT "tags_company_id_companies_id_fk" FOREIGN KEY ("company_id") REFERENCES "public"."companies"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_attempts" ADD CONSTRAINT "webhook_attempts_delivery_id_webhook_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."webhook_deliveries"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_endpoint_id_webhook_endpoints_id_fk" FOREIGN KEY ("endpoint_id") REFERENCES "public"."webhook_endpoints"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "webhook_deliveries_message_id_webhook_messages_id_fk" FOREIGN KEY ("message_id") REFERENCES "public"."webhook_messages"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "api_keys_company_idx" ON "api_keys" USING btree ("company_id");--> statement-breakpoint
CREATE INDEX "campaign_recipients_todo_idx" ON "campaign_recipients" USING btree ("campaign_id","contact_id") WHERE status = 'pending' AND message_id IS NULL;--> statement-breakpoint
CREATE INDEX "campaign_recipients_contact_idx" ON "campaign_recipients" USING btree ("contact_id") WHERE message_id IS NOT NULL AND replied_at IS NULL;--> statement-breakpoint
CREATE INDEX "campaign_recipients_status_idx" ON "campaign_recipients" USING btree ("campaign_id","status","contact_id");--> statement-breakpoint
CREATE INDEX "campaigns_company_idx" ON "campaigns" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "campaigns_due_idx" ON "campaigns" USING btree ("status","scheduled_at");--> statement-breakpoint
CREATE INDEX "consent_history_contact_idx" ON "consent_history" USING btree ("contact_id","id");--> statement-breakpoint
CREATE INDEX "contact_consents_filter_idx" ON "contact_consents" USING btree ("company_id","channel","status");--> statement-breakpoint
CREATE INDEX "contact_identities_contact_idx" ON "contact_identities" USING btree ("contact_id","channel","status");--> statement-breakpoint
CREATE INDEX "contact_import_errors_idx" ON "contact_import_errors" USING btree ("import_id","row");--> statement-breakpoint
CREATE INDEX "contact_imports_company_idx" ON "contact_imports" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "contact_source_history_contact_idx" ON "contact_source_history" USING btree ("contact_id","id");--> statement-breakpoint
CREATE INDEX "contact_sources_source_idx" ON "contact_sources" USING btree ("source_id","attributed_at");--> statement-breakpoint
CREATE INDEX "contact_tags_tag_idx" ON "contact_tags" USING btree ("tag_id","contact_id");--> statement-breakpoint
CREATE INDEX "contacts_company_idx" ON "contacts" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "contacts_company_updated_idx" ON "contacts" USING btree ("company_id","updated_at");--> statement-breakpoint
CREATE INDEX "contacts_blocked_idx" ON "contacts" USING btree ("company_id","id") WHERE blocked = 1;--> statement-breakpoint
CREATE INDEX "conversation_notes_conv_idx" ON "conversation_notes" USING btree ("conversation_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "conversations_one_open_uq" ON "conversations" USING btree ("contact_id","channel_account_id") WHERE status = 'open';--> statement-breakpoint
CREATE INDEX "conversations_company_idx" ON "conversations" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "conversations_contact_idx" ON "conversations" USING btree ("contact_id");--> statement-breakpoint
CREATE UNIQUE INDEX "custom_fields_company_key_uq" ON "custom_fields" USING btree ("company_id","key");--> statement-breakpoint
CREATE INDEX "jobs_claim_idx" ON "jobs" USING btree ("type","status","run_at");--> statement-breakpoint
CREATE INDEX "jobs_group_idx" ON "jobs" USING btree ("type","group_key","run_at") WHERE status = 'pending' AND group_key IS NOT NULL;--> statement-breakpoint
CREATE INDEX "ledger_company_idx" ON "ledger_entries" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "ledger_message_idx" ON "ledger_entries" USING btree ("message_id");--> statement-breakpoint
CREATE INDEX "media_company_idx" ON "media" USING btree ("company_id","id");--> statement-breakpoint
CREATE UNIQUE INDEX "messages_provider_id_uq" ON "messages" USING btree ("channel_account_id","provider_message_id");--> statement-breakpoint
CREATE INDEX "messages_conversation_idx" ON "messages" USING btree ("conversation_id","id");--> statement-breakpoint
CREATE INDEX "messages_company_idx" ON "messages" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "messages_account_direction_idx" ON "messages" USING btree ("channel_account_id","direction","created_at");--> statement-breakpoint
CREATE INDEX "pipeline_record_history_record_idx" ON "pipeline_record_history" USING btree ("record_id","id");--> statement-breakpoint
CREATE INDEX "pipeline_records_company_idx" ON "pipeline_records" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "pipeline_records_stage_idx" ON "pipeline_records" USING btree ("company_id","stage_id","id");--> statement-breakpoint
CREATE INDEX "pipeline_records_status_idx" ON "pipeline_records" USING btree ("company_id","status","id");--> statement-breakpoint
CREATE INDEX "pipeline_records_contact_idx" ON "pipeline_records" USING btree ("company_id","contact_id","id");--> statement-breakpoint
CREATE INDEX "pipeline_records_owner_idx" ON "pipeline_records" USING btree ("company_id","owner_id","id");--> statement-breakpoint
CREATE INDEX "pipeline_tasks_company_idx" ON "pipeline_tasks" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "pipeline_tasks_record_idx" ON "pipeline_tasks" USING btree ("record_id","id");--> statement-breakpoint
CREATE INDEX "pipeline_tasks_contact_idx" ON "pipeline_tasks" USING btree ("company_id","contact_id","id");--> statement-breakpoint
CREATE INDEX "social_account_days_company_idx" ON "social_account_days" USING btree ("company_id","platform","date");--> statement-breakpoint
CREATE INDEX "social_platform_media_account_idx" ON "social_platform_media" USING btree ("account_id","published_at");--> statement-breakpoint
CREATE INDEX "social_post_targets_post_idx" ON "social_post_targets" USING btree ("post_id");--> statement-breakpoint
CREATE INDEX "social_post_targets_account_idx" ON "social_post_targets" USING btree ("account_id","status");--> statement-breakpoint
CREATE INDEX "social_posts_company_idx" ON "social_posts" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "social_posts_company_status_idx" ON "social_posts" USING btree ("company_id","status","id");--> statement-breakpoint
CREATE UNIQUE INDEX "sources_code_uq" ON "sources" USING btree ("company_id","code");--> statement-breakpoint
CREATE INDEX "sources_company_idx" ON "sources" USING btree ("company_id","id");--> statement-breakpoint
CREATE INDEX "sources_external_idx" ON "sources" USING btree ("company_id","external_id");--> statement-breakpoint
CREATE UNIQUE INDEX "tags_company_name_uq" ON "tags" USING btree ("company_id","name");--> statement-breakpoint
CREATE UNIQUE INDEX "templates_account_name_lang_uq" ON "templates" USING btree ("channel_account_id","name","language");--> statement-breakpoint
CREATE INDEX "templates_company_idx" ON "templates" USING btree ("company_id","channel");--> statement-breakpoint
CREATE INDEX "webhook_attempts_delivery_idx" ON "webhook_attempts" USING btree ("delivery_id","id");--> statement-breakpoint
CREATE INDEX "webhook_deliveries_endpoint_idx" ON "webhook_deliveries" USING btree ("endpoint_id","id");--> statement-breakpoint
CREATE INDEX "webhook_endpoints_company_idx" ON "webhook_endpoints" USING btree ("company_id","id");