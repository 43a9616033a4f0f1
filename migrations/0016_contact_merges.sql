CREATE TABLE `contact_merges` (
	`merged_contact_id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`merged_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `contact_merges_contact_idx` ON `contact_merges` (`contact_id`);