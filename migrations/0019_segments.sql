CREATE TABLE `segments` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`name` text NOT NULL,
	`filter` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `segments_company_name_uq` ON `segments` (`company_id`,`name`);--> statement-breakpoint
CREATE INDEX `segments_company_idx` ON `segments` (`company_id`,`id`);