-- contact_consents becomes its own primary-key index (WITHOUT ROWID; drizzle cannot declare it): a consent
-- read by (contact_id, channel) is one b-tree probe instead of the key's index and then the table, and a
-- write touches two b-trees instead of three. The campaign estimate probes it once per member.
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_contact_consents` (
	`contact_id` text NOT NULL,
	`channel` text NOT NULL,
	`company_id` text NOT NULL,
	`status` text NOT NULL,
	`source` text NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`contact_id`, `channel`),
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE no action
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_contact_consents`("contact_id", "channel", "company_id", "status", "source", "updated_at") SELECT "contact_id", "channel", "company_id", "status", "source", "updated_at" FROM `contact_consents`;--> statement-breakpoint
DROP TABLE `contact_consents`;--> statement-breakpoint
ALTER TABLE `__new_contact_consents` RENAME TO `contact_consents`;--> statement-breakpoint
CREATE INDEX `contact_consents_filter_idx` ON `contact_consents` (`company_id`,`channel`,`status`);--> statement-breakpoint
PRAGMA foreign_keys=ON;
