DROP INDEX `ledger_message_idx`;--> statement-breakpoint
DROP INDEX `messages_provider_id_uq`;--> statement-breakpoint
CREATE UNIQUE INDEX `messages_provider_id_uq` ON `messages` (`channel_account_id`,`provider_message_id`) WHERE provider_message_id IS NOT NULL;