CREATE INDEX `messages_company_created_idx` ON `messages` (`company_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `messages_company_status_idx` ON `messages` (`company_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `messages_company_channel_idx` ON `messages` (`company_id`,`channel`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `messages_contact_created_idx` ON `messages` (`contact_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `messages_campaign_created_idx` ON `messages` (`campaign_id`,`created_at`,`id`) WHERE campaign_id IS NOT NULL;