ALTER TABLE "conversations" ADD COLUMN "unread_count" bigint DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX "conversations_unread_idx" ON "conversations" USING btree ("company_id","id") WHERE unread_count > 0;--> statement-breakpoint
CREATE INDEX "messages_company_created_idx" ON "messages" USING btree ("company_id","created_at","id");--> statement-breakpoint
CREATE INDEX "messages_company_failed_idx" ON "messages" USING btree ("company_id","created_at","id") WHERE status = 'failed';