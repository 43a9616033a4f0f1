/**
 * Preloaded by bun test (bunfig.toml). NB! bun 1.4's `[test] timeout` key in bunfig is not applied; the
 * default 5 s is too short for tests that start servers or the compiled binary on a loaded 2-core machine.
 * NB! bun 1.4.5 applies this to the first test file of a run only: the Makefile passes `--timeout 30000` too.
 */
import { afterAll, setDefaultTimeout } from "bun:test";
import { stopPostgresServer } from "./helpers/postgres";

setDefaultTimeout(30_000);
// A hook of the preload runs once, after every file of the run: the throwaway PostgreSQL (if one was started).
afterAll(stopPostgresServer);
