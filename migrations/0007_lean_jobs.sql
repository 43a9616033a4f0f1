DROP INDEX `jobs_lease_idx`;--> statement-breakpoint
DROP INDEX `jobs_due_idx`;--> statement-breakpoint
-- A running job's run_at is now its lease expiry (the claim index finds expired leases).
UPDATE `jobs` SET `run_at` = `lease_until` WHERE `status` = 'running' AND `lease_until` IS NOT NULL;