CREATE TABLE `social_account_days` (
	`account_id` text NOT NULL,
	`company_id` text NOT NULL,
	`platform` text NOT NULL,
	`date` text NOT NULL,
	`followers` integer NOT NULL,
	`views` integer NOT NULL,
	`reach` integer NOT NULL,
	`engagements` integer NOT NULL,
	`synced_at` integer NOT NULL,
	PRIMARY KEY(`account_id`, `date`)
);
--> statement-breakpoint
CREATE INDEX `social_account_days_company_idx` ON `social_account_days` (`company_id`,`platform`,`date`);--> statement-breakpoint
CREATE TABLE `social_platform_media` (
	`account_id` text NOT NULL,
	`external_id` text NOT NULL,
	`company_id` text NOT NULL,
	`platform` text NOT NULL,
	`post_id` text,
	`text` text NOT NULL,
	`media_type` text NOT NULL,
	`url` text,
	`published_at` integer NOT NULL,
	`views` integer NOT NULL,
	`reach` integer NOT NULL,
	`likes` integer NOT NULL,
	`comments` integer NOT NULL,
	`shares` integer NOT NULL,
	`engagements` integer NOT NULL,
	`synced_at` integer NOT NULL,
	PRIMARY KEY(`account_id`, `external_id`)
);
--> statement-breakpoint
CREATE INDEX `social_platform_media_account_idx` ON `social_platform_media` (`account_id`,`published_at`);--> statement-breakpoint
CREATE TABLE `social_post_targets` (
	`id` text PRIMARY KEY NOT NULL,
	`post_id` text NOT NULL,
	`company_id` text NOT NULL,
	`account_id` text NOT NULL,
	`platform` text NOT NULL,
	`status` text NOT NULL,
	`external_id` text,
	`url` text,
	`error_code` text,
	`error_message` text,
	`attempts` integer DEFAULT 0 NOT NULL,
	`progress` text NOT NULL,
	`first_attempt_at` integer,
	`published_at` integer,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`post_id`) REFERENCES `social_posts`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `social_post_targets_post_idx` ON `social_post_targets` (`post_id`);--> statement-breakpoint
CREATE INDEX `social_post_targets_account_idx` ON `social_post_targets` (`account_id`,`status`);--> statement-breakpoint
CREATE TABLE `social_posts` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`status` text NOT NULL,
	`text` text NOT NULL,
	`media` text NOT NULL,
	`overrides` text NOT NULL,
	`scheduled_at` integer,
	`published_at` integer,
	`requires_approval` integer NOT NULL,
	`approved_at` integer,
	`run_token` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `social_posts_company_idx` ON `social_posts` (`company_id`,`id`);--> statement-breakpoint
CREATE INDEX `social_posts_company_status_idx` ON `social_posts` (`company_id`,`status`,`id`);