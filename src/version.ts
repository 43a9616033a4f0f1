/** Replaced at build time by `--define` (Makefile); "dev" values when running from source. */
declare const SWITCHBOARD_VERSION: string | undefined;
declare const SWITCHBOARD_COMMIT: string | undefined;
declare const SWITCHBOARD_BUILD_TIME: string | undefined;
export const VERSION: string = typeof SWITCHBOARD_VERSION === "string" ? SWITCHBOARD_VERSION : "0.1.0-dev";
export const COMMIT: string = typeof SWITCHBOARD_COMMIT === "string" ? SWITCHBOARD_COMMIT : "unknown";
export const BUILD_TIME: string | null = typeof SWITCHBOARD_BUILD_TIME === "string" ? SWITCHBOARD_BUILD_TIME : null;
