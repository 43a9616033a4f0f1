DROP INDEX `messages_company_status_idx`;--> statement-breakpoint
DROP INDEX `messages_company_channel_idx`;--> statement-breakpoint
DROP INDEX `messages_contact_created_idx`;--> statement-breakpoint
DROP INDEX `messages_campaign_created_idx`;--> statement-breakpoint
CREATE INDEX `messages_company_queued_idx` ON `messages` (`company_id`,`created_at`,`id`) WHERE status = 'queued';--> statement-breakpoint
CREATE INDEX `messages_company_failed_idx` ON `messages` (`company_id`,`created_at`,`id`) WHERE status = 'failed';