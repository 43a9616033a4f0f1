/** Replaced at build time by `--define` (Makefile); "dev" when running from source. */
declare const SWITCHBOARD_VERSION: string | undefined;
export const VERSION: string = typeof SWITCHBOARD_VERSION === "string" ? SWITCHBOARD_VERSION : "0.1.0-dev";
