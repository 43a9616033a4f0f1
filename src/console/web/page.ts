/**
 * What a page of the console is (PageDef) and what the shell hands it (Ctx): the contract between main.ts and
 * pages/*, in a file of its own so that neither imports the other back.
 */
import type { Me } from "./types";

export interface Ctx {
  me: Me;
  /** Does the key hold `scope` (or `*`)? */
  can(scope: string): boolean;
  /** "Needs the scope x" — the text shown beside a disabled control. */
  needs(scope: string): string;
  /** Runs `fn` every `ms` while this page is shown (polling a running campaign, a thread). */
  every(ms: number, fn: () => unknown): void;
  /** A message in the page's status line. */
  flash(text: string, kind?: "ok" | "error"): void;
  /** The page's own sub-path: #/campaigns/<id> → "<id>". */
  arg: string;
  go(hash: string): void;
}

export interface PageDef {
  id: string;
  title: string;
  /** The scope needed to open the page; null: any valid key. */
  scope: string | null;
  render(root: HTMLElement, ctx: Ctx): void | Promise<void>;
}
