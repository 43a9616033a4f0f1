CREATE TABLE `campaign_recipients` (
	`campaign_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`status` text NOT NULL,
	`reason` text,
	`message_id` text,
	`replied_at` integer,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`campaign_id`, `contact_id`)
);
--> statement-breakpoint
CREATE INDEX `campaign_recipients_todo_idx` ON `campaign_recipients` (`campaign_id`,`contact_id`) WHERE status = 'pending' AND message_id IS NULL;--> statement-breakpoint
CREATE INDEX `campaign_recipients_contact_idx` ON `campaign_recipients` (`contact_id`) WHERE message_id IS NOT NULL AND replied_at IS NULL;--> statement-breakpoint
CREATE INDEX `campaign_recipients_status_idx` ON `campaign_recipients` (`campaign_id`,`status`,`contact_id`);--> statement-breakpoint
CREATE TABLE `campaigns` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`name` text NOT NULL,
	`status` text NOT NULL,
	`channel` text NOT NULL,
	`channel_account_id` text NOT NULL,
	`template_id` text NOT NULL,
	`audience` text NOT NULL,
	`ask_values` text NOT NULL,
	`header_media_id` text,
	`price_type` text NOT NULL,
	`unit_price` integer NOT NULL,
	`estimated_cost` integer NOT NULL,
	`spent` integer DEFAULT 0 NOT NULL,
	`pause_reason` text,
	`failure_reason` text,
	`resolved_at` integer,
	`resolve_cursor` text,
	`recent_outcomes` text DEFAULT '' NOT NULL,
	`matched` integer DEFAULT 0 NOT NULL,
	`n_pending` integer DEFAULT 0 NOT NULL,
	`n_queued` integer DEFAULT 0 NOT NULL,
	`n_sent` integer DEFAULT 0 NOT NULL,
	`n_delivered` integer DEFAULT 0 NOT NULL,
	`n_read` integer DEFAULT 0 NOT NULL,
	`n_failed` integer DEFAULT 0 NOT NULL,
	`n_canceled` integer DEFAULT 0 NOT NULL,
	`n_replied` integer DEFAULT 0 NOT NULL,
	`x_no_identity` integer DEFAULT 0 NOT NULL,
	`x_no_consent` integer DEFAULT 0 NOT NULL,
	`x_blocked` integer DEFAULT 0 NOT NULL,
	`x_outside_window` integer DEFAULT 0 NOT NULL,
	`x_no_prior_conversation` integer DEFAULT 0 NOT NULL,
	`scheduled_at` integer,
	`started_at` integer,
	`completed_at` integer,
	`canceled_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`api_key_id` text
);
--> statement-breakpoint
CREATE INDEX `campaigns_company_idx` ON `campaigns` (`company_id`,`id`);--> statement-breakpoint
CREATE INDEX `campaigns_due_idx` ON `campaigns` (`status`,`scheduled_at`);--> statement-breakpoint
ALTER TABLE `messages` ADD `campaign_id` text;