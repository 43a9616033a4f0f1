ALTER TABLE `templates` ADD `rejected_reason` text;--> statement-breakpoint
ALTER TABLE `templates` ADD `quality` text;