-- Templates are cached per instance too (templates.service.ts): another instance's template write (a sync,
-- POST /templates) bumps the data version, as a company or key change does (0002, 0004).
CREATE TRIGGER "templates_data_version" AFTER INSERT OR UPDATE OR DELETE ON "templates" FOR EACH STATEMENT EXECUTE FUNCTION "switchboard_bump_data_version"();
