# Switchboard — see README.md. Bun comes from node_modules (npm ci), so only Node and npm are needed.
BUN := ./node_modules/.bin/bun
VERSION := $(shell node -p "require('./package.json').version")
BUILD_FLAGS := --compile --minify --bytecode --format=esm --sourcemap=none --define SWITCHBOARD_VERSION='"$(VERSION)"'

.PHONY: install build release run dev test typecheck migrations bench clean

# A stamp, not node_modules/.bin/bun: that symlink's target keeps the package's old mtime.
node_modules/.installed: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

install: node_modules/.installed

## dist/switchboard: the single executable (migrations, OpenAPI, docs UI inside).
build: install
	$(BUN) build src/main.ts src/db/checkpointer.worker.ts src/modules/contacts/import.worker.ts src/modules/contacts/audience-count.worker.ts $(BUILD_FLAGS) --outfile dist/switchboard

## The vendor build: embeds the vendor's license public key (base64 SPKI DER) instead of the development key.
release: install
	@test -n "$(LICENSE_PUBLIC_KEY)" || (echo "usage: make release LICENSE_PUBLIC_KEY=<base64 SPKI DER>" && exit 1)
	$(BUN) build src/main.ts src/db/checkpointer.worker.ts src/modules/contacts/import.worker.ts src/modules/contacts/audience-count.worker.ts $(BUILD_FLAGS) --define SWITCHBOARD_LICENSE_PUBLIC_KEY='"$(LICENSE_PUBLIC_KEY)"' --outfile dist/switchboard

## Install, build, create ./data with a sandbox config on first run, and serve.
run: build
	@test -f config.toml || ./dist/switchboard init --dir .
	./dist/switchboard serve --config config.toml

## Serve from source with pretty logs.
dev: install
	@test -f config.toml || $(BUN) src/main.ts init --dir .
	SWITCHBOARD_LOG_PRETTY=1 $(BUN) --watch src/main.ts serve --config config.toml

## Unit, API and end-to-end tests (e2e uses dist/switchboard, built first).
test: build
	$(BUN) test

typecheck: install
	./node_modules/.bin/tsc --noEmit -p .

## Append a migration for schema changes in *.table.ts, and embed it in the binary. Migrations are
## append-only since 0.1.0 (0000_init is what every installed appliance has applied): never edit one.
migrations: install
	./node_modules/.bin/drizzle-kit generate
	$(BUN) scripts/embed-migrations.ts

bench: build
	$(BUN) bench/run.ts

clean:
	rm -rf dist
