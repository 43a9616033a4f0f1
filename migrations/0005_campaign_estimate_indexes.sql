DROP INDEX `contact_identities_contact_idx`;--> statement-breakpoint
CREATE INDEX `contact_identities_contact_idx` ON `contact_identities` (`contact_id`,`channel`,`status`);--> statement-breakpoint
CREATE INDEX `contacts_blocked_idx` ON `contacts` (`company_id`,`id`) WHERE blocked = 1;