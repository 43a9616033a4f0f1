ALTER TABLE `conversations` ADD `unread_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `conversations_unread_idx` ON `conversations` (`company_id`,`id`) WHERE unread_count > 0;--> statement-breakpoint
CREATE INDEX `messages_company_created_idx` ON `messages` (`company_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `messages_company_failed_idx` ON `messages` (`company_id`,`created_at`,`id`) WHERE status = 'failed';