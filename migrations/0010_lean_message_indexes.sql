DROP INDEX `messages_company_idx`;--> statement-breakpoint
DROP INDEX `messages_account_direction_idx`;--> statement-breakpoint
CREATE INDEX `messages_daily_limit_idx` ON `messages` (`channel_account_id`,`created_at`) WHERE direction = 'outbound' AND channel IN ('x');