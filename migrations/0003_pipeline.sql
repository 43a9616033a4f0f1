CREATE TABLE `pipeline_record_history` (
	`id` text PRIMARY KEY NOT NULL,
	`record_id` text NOT NULL,
	`from_stage_id` text,
	`to_stage_id` text NOT NULL,
	`at` integer NOT NULL,
	`by` text,
	`reason` text,
	FOREIGN KEY (`record_id`) REFERENCES `pipeline_records`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `pipeline_record_history_record_idx` ON `pipeline_record_history` (`record_id`,`id`);--> statement-breakpoint
CREATE TABLE `pipeline_records` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`title` text NOT NULL,
	`contact_id` text NOT NULL,
	`conversation_id` text,
	`stage_id` text NOT NULL,
	`status` text NOT NULL,
	`value_micros` integer,
	`owner_id` text,
	`expected_close_date` text,
	`custom_fields` text NOT NULL,
	`stage_entered_at` integer NOT NULL,
	`won_at` integer,
	`lost_at` integer,
	`contact_deleted_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `pipeline_records_company_idx` ON `pipeline_records` (`company_id`,`id`);--> statement-breakpoint
CREATE INDEX `pipeline_records_stage_idx` ON `pipeline_records` (`company_id`,`stage_id`,`id`);--> statement-breakpoint
CREATE INDEX `pipeline_records_status_idx` ON `pipeline_records` (`company_id`,`status`,`id`);--> statement-breakpoint
CREATE INDEX `pipeline_records_contact_idx` ON `pipeline_records` (`company_id`,`contact_id`,`id`);--> statement-breakpoint
CREATE INDEX `pipeline_records_owner_idx` ON `pipeline_records` (`company_id`,`owner_id`,`id`);--> statement-breakpoint
CREATE TABLE `pipeline_tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`company_id` text NOT NULL,
	`title` text NOT NULL,
	`notes` text,
	`due_at` integer,
	`remind_at` integer,
	`status` text NOT NULL,
	`completed_at` integer,
	`record_id` text,
	`contact_id` text,
	`assignee_id` text,
	`reminder_job_id` text,
	`reminded_at` integer,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `pipeline_tasks_company_idx` ON `pipeline_tasks` (`company_id`,`id`);--> statement-breakpoint
CREATE INDEX `pipeline_tasks_record_idx` ON `pipeline_tasks` (`record_id`,`id`);--> statement-breakpoint
CREATE INDEX `pipeline_tasks_contact_idx` ON `pipeline_tasks` (`company_id`,`contact_id`,`id`);