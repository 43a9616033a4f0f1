CREATE TABLE `contact_source_history` (
	`id` text PRIMARY KEY NOT NULL,
	`contact_id` text NOT NULL,
	`from_source_id` text,
	`to_source_id` text,
	`via` text NOT NULL,
	`by` text,
	`at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `contact_source_history_contact_idx` ON `contact_source_history` (`contact_id`,`id`);--> statement-breakpoint
CREATE TABLE `contact_sources` (
	`contact_id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`source_id` text,
	`via` text NOT NULL,
	`referral` text,
	`attributed_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `contact_sources_source_idx` ON `contact_sources` (`source_id`,`attributed_at`);--> statement-breakpoint
CREATE TABLE `sources` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`name` text NOT NULL,
	`type` text NOT NULL,
	`channel` text NOT NULL,
	`channel_account_id` text NOT NULL,
	`code` text NOT NULL,
	`external_id` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sources_code_uq` ON `sources` (`company_id`,`code`);--> statement-breakpoint
CREATE INDEX `sources_company_idx` ON `sources` (`company_id`,`id`);--> statement-breakpoint
CREATE INDEX `sources_external_idx` ON `sources` (`company_id`,`external_id`);--> statement-breakpoint
CREATE INDEX `conversations_contact_idx` ON `conversations` (`contact_id`);