ALTER TABLE "templates" ADD COLUMN "rejected_reason" text;--> statement-breakpoint
ALTER TABLE "templates" ADD COLUMN "quality" text;