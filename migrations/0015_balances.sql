CREATE TABLE `balances` (
	`company_id` text PRIMARY KEY NOT NULL,
	`amount` integer NOT NULL,
	FOREIGN KEY (`company_id`) REFERENCES `companies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
-- Each company's balance as of its newest ledger entry (0 without one).
INSERT INTO `balances` (`company_id`, `amount`)
SELECT c.`id`, coalesce((SELECT l.`balance_after` FROM `ledger_entries` l WHERE l.`company_id` = c.`id` ORDER BY l.`id` DESC LIMIT 1), 0) FROM `companies` c;
