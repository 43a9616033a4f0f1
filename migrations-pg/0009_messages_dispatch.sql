ALTER TABLE "messages" ADD COLUMN "lease_until" bigint;--> statement-breakpoint
ALTER TABLE "messages" ADD COLUMN "lease_token" text;--> statement-breakpoint
CREATE INDEX "messages_dispatch_idx" ON "messages" USING btree ("channel_account_id","lease_token","lease_until") WHERE status = 'queued' AND lease_until IS NOT NULL AND campaign_id IS NULL;--> statement-breakpoint
CREATE INDEX "messages_bulk_dispatch_idx" ON "messages" USING btree ("channel_account_id","lease_token","lease_until") WHERE status = 'queued' AND lease_until IS NOT NULL AND campaign_id IS NOT NULL;