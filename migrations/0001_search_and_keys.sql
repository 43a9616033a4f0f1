DROP TABLE `events`;--> statement-breakpoint
CREATE TABLE `__new_contact_identities` (
	`company_id` text NOT NULL,
	`contact_id` text NOT NULL,
	`channel` text NOT NULL,
	`value` text NOT NULL,
	`status` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`company_id`, `channel`, `value`),
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE no action
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_contact_identities`("company_id", "contact_id", "channel", "value", "status", "created_at") SELECT "company_id", "contact_id", "channel", "value", "status", "created_at" FROM `contact_identities`;--> statement-breakpoint
DROP TABLE `contact_identities`;--> statement-breakpoint
ALTER TABLE `__new_contact_identities` RENAME TO `contact_identities`;--> statement-breakpoint
CREATE INDEX `contact_identities_contact_idx` ON `contact_identities` (`contact_id`,`channel`);--> statement-breakpoint
CREATE TABLE `__new_contacts` (
	`seq` integer PRIMARY KEY NOT NULL,
	`id` text NOT NULL,
	`company_id` text NOT NULL,
	`first_name` text,
	`last_name` text,
	`city` text,
	`country` text,
	`custom_fields` text DEFAULT '{}' NOT NULL,
	`blocked` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`deleted_at` integer,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
INSERT INTO `__new_contacts`("seq", "id", "company_id", "first_name", "last_name", "city", "country", "custom_fields", "blocked", "created_at", "updated_at", "deleted_at") SELECT "rowid", "id", "company_id", "first_name", "last_name", "city", "country", "custom_fields", "blocked", "created_at", "updated_at", "deleted_at" FROM `contacts`;--> statement-breakpoint
DROP TABLE `contacts`;--> statement-breakpoint
ALTER TABLE `__new_contacts` RENAME TO `contacts`;--> statement-breakpoint
CREATE UNIQUE INDEX `contacts_id_unique` ON `contacts` (`id`);--> statement-breakpoint
CREATE INDEX `contacts_company_idx` ON `contacts` (`company_id`,`id`);--> statement-breakpoint
CREATE INDEX `contacts_company_updated_idx` ON `contacts` (`company_id`,`updated_at`);--> statement-breakpoint
CREATE TABLE `__new_contact_tags` (
	`contact_id` text NOT NULL,
	`tag_id` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`contact_id`, `tag_id`),
	FOREIGN KEY (`contact_id`) REFERENCES `contacts`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`tag_id`) REFERENCES `tags`(`id`) ON UPDATE no action ON DELETE no action
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_contact_tags`("contact_id", "tag_id", "created_at") SELECT "contact_id", "tag_id", "created_at" FROM `contact_tags`;--> statement-breakpoint
DROP TABLE `contact_tags`;--> statement-breakpoint
ALTER TABLE `__new_contact_tags` RENAME TO `contact_tags`;--> statement-breakpoint
CREATE INDEX `contact_tags_tag_idx` ON `contact_tags` (`tag_id`,`contact_id`);--> statement-breakpoint
CREATE VIRTUAL TABLE `contact_search` USING fts5(first_name, last_name, content='contacts', content_rowid='seq', columnsize=0, detail=none, tokenize='unicode61 remove_diacritics 2');--> statement-breakpoint
CREATE TABLE `contact_search_state` (
	`id` integer PRIMARY KEY CHECK (`id` = 1),
	`deferred_from` integer
);
--> statement-breakpoint
INSERT INTO `contact_search_state` (`id`, `deferred_from`) VALUES (1, NULL);--> statement-breakpoint
CREATE TRIGGER `contacts_search_insert` AFTER INSERT ON `contacts`
WHEN (SELECT deferred_from FROM contact_search_state) IS NULL BEGIN
	INSERT INTO `contact_search` (rowid, first_name, last_name) VALUES (new.seq, new.first_name, new.last_name);
END;--> statement-breakpoint
CREATE TRIGGER `contacts_search_update` AFTER UPDATE OF first_name, last_name ON `contacts`
WHEN (old.first_name IS NOT new.first_name OR old.last_name IS NOT new.last_name)
	AND coalesce(old.seq < (SELECT deferred_from FROM contact_search_state), 1) BEGIN
	INSERT INTO `contact_search` (contact_search, rowid, first_name, last_name) VALUES ('delete', old.seq, old.first_name, old.last_name);
	INSERT INTO `contact_search` (rowid, first_name, last_name) VALUES (new.seq, new.first_name, new.last_name);
END;--> statement-breakpoint
CREATE TRIGGER `contacts_search_delete` AFTER DELETE ON `contacts`
WHEN coalesce(old.seq < (SELECT deferred_from FROM contact_search_state), 1) BEGIN
	INSERT INTO `contact_search` (contact_search, rowid, first_name, last_name) VALUES ('delete', old.seq, old.first_name, old.last_name);
END;--> statement-breakpoint
INSERT INTO `contact_search` (contact_search) VALUES ('rebuild');
