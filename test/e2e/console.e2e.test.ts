/**
 * The console (/console, DESIGN §22) in a real browser: Debian's Chromium driven by playwright-core against the
 * compiled binary on loopback, from a fresh `init`. Signs in with the admin key and sees the balance; answers
 * a simulated inbound message from the inbox and watches the reply reach `read`; imports contacts with a
 * progress bar; creates a campaign through the wizard after seeing its estimate and exclusion reasons, and
 * watches its funnel fill; sends a webhook test and redelivers it; signs out (sessionStorage emptied). A key
 * without `campaigns:read` sees the campaigns page disabled with the reason, one without `campaigns:write`
 * the New campaign button disabled; a wrong key is refused. The inbox shows unread counts first and marks
 * what it opens read; the overview charts messages by status and the backlog; channels show their health;
 * the messages page filters. Throughout: the CSP header is sent, the page asks
 * nothing of another origin, and the browser logs no console error. Screenshots of each page go to
 * $CONSOLE_SCREENSHOTS (default /tmp/switchboard-console), never into git.
 *
 * The test code has no DOM types (tsconfig lib): code run in the page is typed by hand or passed as a string.
 *
 * Skips, saying so, when /usr/bin/chromium is absent (`apt-get install chromium`; .ci/run installs it).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { run, serve, tempDir, until, type RunningServer } from "./binary";

const CHROMIUM = "/usr/bin/chromium";
const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`note: ${CHROMIUM} is absent (Debian's chromium package): the console's browser test is skipped`);

const SHOTS = process.env.CONSOLE_SCREENSHOTS ?? "/tmp/switchboard-console";

let dir: string;
let init: { configPath: string; apiKey: string };
let limitedKey: string;
let viewerKey: string;
let server: RunningServer;
let browser: Browser;
let context: BrowserContext;
let page: Page;
/** Every URL the admin's page asked for, and every console error it logged. */
const requests: string[] = [];
const consoleErrors: string[] = [];

async function api(method: string, path: string, body?: unknown) {
  const res = await fetch(`${server.url}${path.startsWith("/hooks") ? "" : "/api/public/v1"}${path}`, {
    method,
    headers: { authorization: `Bearer ${init.apiKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as any;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`);
  return json.data;
}

function watch(p: Page, errors: string[], urls: string[]) {
  p.on("request", (r) => urls.push(r.url()));
  p.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  p.on("pageerror", (e) => errors.push(String(e)));
}

const shot = (p: Page, name: string) => p.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

/** Signs in by keyboard: the key field has the focus when the page opens, and Enter submits. */
async function signIn(p: Page, key: string) {
  await p.goto(`${server.url}/console`);
  await p.waitForSelector("#api-key:focus");
  await p.keyboard.type(key);
  await p.keyboard.press("Enter");
}

describe.skipIf(!haveChromium)("the console in a browser", () => {
  let whatsapp: { id: string };

  beforeAll(async () => {
    mkdirSync(SHOTS, { recursive: true });
    dir = tempDir("sb-console-");
    const r = run(["init", "--dir", dir, "--json"]);
    expect(r.code).toBe(0);
    init = JSON.parse(r.stdout);
    const k = run(["keys", "create", "--company", "default", "--name", "agent", "--scopes", "conversations:read,contacts:read", "--json"], {
      env: { SWITCHBOARD_CONFIG: init.configPath },
    });
    expect(k.code).toBe(0);
    limitedKey = JSON.parse(k.stdout).key;
    const v = run(["keys", "create", "--company", "default", "--name", "viewer", "--scopes", "campaigns:read", "--json"], {
      env: { SWITCHBOARD_CONFIG: init.configPath },
    });
    expect(v.code).toBe(0);
    viewerKey = JSON.parse(v.stdout).key;
    server = await serve(init.configPath);

    // Facts for the pages: two tagged WhatsApp contacts, one opted in (the estimate excludes the other for
    // consent), a scheduled social post.
    whatsapp = ((await api("GET", "/channels")) as { id: string; channel: string }[]).find((c) => c.channel === "whatsapp")!;
    for (const [i, optIn] of [
      [1, true],
      [2, false],
    ] as const) {
      const { contact } = await api("POST", "/contacts", {
        firstName: `Reader${i}`,
        lastName: "Example",
        identities: [{ channel: "whatsapp", value: `+1415555010${i}` }],
        tags: ["newsletter"],
      });
      if (optIn) await api("POST", `/contacts/${contact.id}/opt-in`, { channels: ["whatsapp"] });
    }
    const accounts = (await api("GET", "/social/accounts")) as { id: string; platform: string }[];
    await api("POST", "/social/posts", {
      accountIds: [accounts.find((a) => a.platform === "x")!.id],
      text: "Winter sale starts tomorrow",
      scheduledAt: new Date(Date.now() + 3600_000).toISOString(),
    });

    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.setDefaultTimeout(10_000); // a failing step fails here, naming its selector, before the test times out
    watch(page, consoleErrors, requests);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("/console is served with a strict Content-Security-Policy", async () => {
    const res = await fetch(`${server.url}/console`);
    expect(res.status).toBe(200);
    const csp = res.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-eval");
    expect(csp).not.toContain("unsafe-inline");
    const html = await res.text();
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script: every script is a file
    for (const asset of ["/console/console.js", "/console/console.css"]) {
      const a = await fetch(`${server.url}${asset}`);
      expect(a.status).toBe(200);
      expect(a.headers.get("content-security-policy")).toBe(csp);
    }
  });

  test("sign in with the admin key and see the balance", async () => {
    await signIn(page, init.apiKey);
    await page.waitForSelector("#balance");
    expect(await page.textContent("#balance")).toContain("100.000000 USD");
    expect(await page.evaluate(() => sessionStorage.getItem("switchboard.apiKey"))).toBe(init.apiKey);
    expect(await page.evaluate(() => localStorage.length)).toBe(0);
    await page.waitForSelector("figure.chart");
    await shot(page, "overview");
  });

  test("channels show each account with its inbound webhook URL", async () => {
    await page.click("#nav-channels");
    await page.waitForSelector("input.url");
    const urls = await page.$$eval("input.url", (xs) => xs.map((x) => (x as unknown as { value: string }).value));
    expect(urls).toContain(`http://localhost:8080/hooks/${whatsapp.id}`);
    await shot(page, "channels");
  });

  test("an inbound message appears in the inbox; the reply reaches read", async () => {
    await api("POST", `/hooks/${whatsapp.id}`, { from: { phone: "+4915112345678", name: "Ada Lovelace" }, text: "Is my order on its way?" });
    await page.click("#nav-inbox");
    // Unread first, with its count; opening it marks it read.
    await page.waitForSelector("#conversations li:first-child a:has-text('Ada Lovelace') .unread[data-unread='1']");
    await page.click("#conversations a:has-text('Ada Lovelace')");
    await page.waitForSelector("#messages li:has-text('Is my order on its way?')");
    await page.waitForSelector("#conversations a:has-text('Ada Lovelace'):not(:has(.unread))");
    expect(((await api("GET", "/conversations?unread=true")) as unknown[]).length).toBe(0);
    await page.fill("#reply-text", "Yes, it ships today.");
    await page.click("#reply-send");
    await page.waitForSelector("#messages li.outbound:has-text('Yes, it ships today.') .badge.st-read", { timeout: 15_000 });
    await page.fill("#note-text", "Promised shipping today");
    await page.click("text=Add note");
    await page.waitForSelector(".notes li:has-text('Promised shipping today')");
    await page.fill("#assignee", "Sam");
    await page.click("button:has-text('Assign')");
    await until(
      "the assignment",
      async () =>
        ((await api("GET", "/conversations?status=open")) as { assignee: { name: string } | null }[]).some((c) => c.assignee?.name === "Sam") || undefined,
      { timeoutMs: 10_000 },
    );
    await shot(page, "inbox");
  });

  test("outside the window the inbox replies with a template; close", async () => {
    const twoDaysAgo = new Date(Date.now() - 48 * 3600_000).toISOString();
    await api("POST", `/hooks/${whatsapp.id}`, {
      from: { phone: "+4915112345679", name: "Charles Babbage" },
      text: "Hello from last week",
      timestamp: twoDaysAgo,
    });
    await page.click("#nav-overview"); // leave and come back: the list is read afresh
    await page.click("#nav-inbox");
    await page.click("#conversations a:has-text('Charles Babbage')");
    await page.waitForSelector("text=The messaging window is closed: only a template can be sent.");
    expect(await page.$("#reply-text")).toBeNull();
    await page.waitForSelector("#reply-template");
    await page.click("#reply-send");
    await page.waitForSelector("#messages li.outbound:has-text('[template hello_world] Charles')");
    await shot(page, "inbox-template");
    await page.click("#close-conversation");
    await page.waitForSelector(".conv-side .badge.st-closed");
  });

  test("contacts: search, detail, import with a progress bar", async () => {
    await page.click("#nav-contacts");
    await page.fill("#contact-search", "Ada");
    // By keyboard: a row is focusable and Enter opens it.
    await page.focus("tr.clickable:has-text('Ada Lovelace')");
    await page.keyboard.press("Enter");
    await page.waitForSelector("#contact-detail:has-text('+4915112345678')");
    await page.click("#contact-detail button:has-text('Opt in')");
    await page.waitForSelector("#contact-detail .badge.st-opted_in");
    const csv = "firstName,lastName,whatsapp,tags,optIn\nGrace,Hopper,+14155550111,newsletter,true\nAlan,Turing,+14155550112,newsletter,false\n";
    await page.setInputFiles("#import-file", { name: "contacts.csv", mimeType: "text/csv", buffer: Buffer.from(csv) });
    await page.click("#import-start");
    await page.waitForSelector("#import-status:has-text('completed: 2 created')");
    expect(await page.$eval("#import-progress", (p) => (p as unknown as { value: number }).value)).toBe(1);
    await shot(page, "contacts");
  });

  test("a campaign through the wizard: the estimate with its exclusion reasons before the button", async () => {
    await page.click("#nav-campaigns");
    await page.click("#new-campaign");
    await page.fill("#campaign-name", "Winter newsletter");
    const template = await page.$$eval("#campaign-template option", (os) => os.map((o) => [(o as unknown as { value: string }).value, o.textContent ?? ""]));
    await page.selectOption("#campaign-template", template.find(([, label]) => label.startsWith("whatsapp · hello_world"))![0]);
    await page.check("#campaign-tags input[value=newsletter]");
    // Reader1 and Grace opted in; Reader2 and Alan did not (the import's optIn: false).
    await page.waitForSelector("#estimate-sendable:has-text('2 of 4')");
    expect(await page.textContent("#estimate-excluded")).toContain("2 excluded: no opt-in on the channel");
    expect(await page.isEnabled("#campaign-create")).toBe(true);
    await shot(page, "campaign-wizard");
    await page.click("#campaign-create");
    await page.waitForURL(/#\/campaigns\/[0-9a-f-]{36}$/);
    await page.waitForSelector("h1:has-text('Winter newsletter')");
    await page.waitForSelector("figure.chart:has-text('Funnel')");
    await until("the funnel to show both reads", async () => ((await page.textContent("figure.chart"))?.includes("read2 (50%)") ? true : undefined), {
      timeoutMs: 20_000,
    });
    await shot(page, "campaign");
    await page.click("a:has-text('All campaigns')");
    await page.waitForSelector("tr:has-text('Winter newsletter') .badge.st-completed");
    await shot(page, "campaigns");
  });

  test("social calendar, webhooks (create, test event, redeliver) and templates", async () => {
    await page.click("#nav-social");
    await page.waitForSelector(".calendar .post:has-text('Winter sale starts tomorrow') .badge.st-scheduled");
    await shot(page, "social");

    await page.click("#nav-webhooks");
    await page.fill("#webhook-url", "http://127.0.0.1:9/switchboard"); // nothing listens: deliveries stay pending
    await page.fill("#webhook-description", "ERP (unreachable on purpose)");
    await page.click("#webhook-create");
    expect(await page.inputValue("#webhook-secret")).toStartWith("whsec_");
    await page.click("text=Open the endpoint");
    await page.click("#webhook-test");
    await page.waitForSelector("#deliveries tr:has-text('webhook.test')");
    await page.click("#deliveries tr:has-text('webhook.test') button:has-text('Redeliver')");
    await page.waitForSelector(".flash:has-text('Redelivery queued.')");
    // The log (polled by the page) shows the manual attempt once it has been made.
    await until("the manual attempt in the log", async () => ((await page.textContent("#deliveries"))?.includes(" manual: ") ? true : undefined), {
      timeoutMs: 15_000,
    });
    await shot(page, "webhooks");

    await page.click("#nav-templates");
    await page.waitForSelector("td:has-text('hello_world')");
    await shot(page, "templates");

    // Back on the overview, the charts hold what happened: messages this hour by status, the campaign's
    // recipients; the backlog is empty again.
    await page.click("#nav-overview");
    await page.waitForSelector("figure.chart:has-text('Campaign recipients by status') rect.bar");
    expect(await page.$$("figure.chart:has-text('Messages per hour') rect.bar")).not.toHaveLength(0);
    expect(await page.textContent("#backlog-queued")).toBe("0 queued");
    expect(await page.textContent("#backlog-failed")).toContain("0 failed in the last 24 h");
    expect(await page.textContent("#shell-balance")).not.toContain("100.000000");
    await shot(page, "overview-after");

    // The WhatsApp account's sends of the last hour went well.
    await page.click("#nav-channels");
    await page.waitForSelector("tr:has-text('whatsapp') .health .badge.st-ok");
    expect(await page.textContent("tr:has-text('whatsapp') .health")).toMatch(/[1-9]\d* sent, 0 failed/);
    await shot(page, "channels-health");
  });

  test("messages: the company's messages newest first, filtered by status and channel", async () => {
    await page.click("#nav-messages");
    await page.waitForSelector("#messages-list td:has-text('Yes, it ships today.')");
    await page.selectOption("#messages-status", "received");
    // The unfiltered list already shows the inbound message: wait for the filtered one to replace it.
    // (A function, not a string: the console's CSP refuses eval. `document` is the page's, typed loosely here.)
    await page.waitForFunction(() => !(globalThis as any).document.querySelector("#messages-list")?.textContent?.includes("Yes, it ships today."));
    expect(await page.textContent("#messages-list")).toContain("Is my order on its way?");
    // Answers out of order: the first filter's (read, any channel) is held until the second's (read, email) has
    // shown; when it comes, it must not replace the list on screen.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const first = /\/messages\?status=read&limit=/;
    await page.route(first, async (route) => {
      await held;
      await route.continue();
    });
    const late = page.waitForResponse(first);
    await page.selectOption("#messages-status", "read");
    await page.selectOption("#messages-channel", "email");
    await page.waitForSelector("#messages-list:has-text('No messages match.')");
    release();
    await late;
    await page.evaluate(() => new Promise((r) => setTimeout(r, 100)));
    expect(await page.textContent("#messages-list")).toContain("No messages match.");
    await page.unroute(first);
    await page.selectOption("#messages-channel", "whatsapp");
    await page.waitForSelector("#messages-list td:has-text('Yes, it ships today.')");
    await shot(page, "messages");
  });

  test("readable on a phone: no page is wider than 390 px (wide tables scroll inside their box)", async () => {
    await page.setViewportSize({ width: 390, height: 844 });
    for (const id of ["overview", "channels", "messages", "contacts", "campaigns", "social", "webhooks", "templates"]) {
      await page.click(`#nav-${id}`);
      await page.waitForSelector(`#nav-${id}.active`);
      await page.waitForSelector("#page h1");
      await page.waitForLoadState("networkidle");
      expect([id, await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth")]).toEqual([id, 0]);
      await shot(page, `${id}-phone`);
    }
    await page.click("#nav-inbox");
    await page.click("#conversations a:has-text('Ada Lovelace')");
    await page.waitForSelector("#messages li.outbound");
    expect(await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth")).toBe(0);
    await shot(page, "inbox-phone");
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  test("sign-out clears sessionStorage", async () => {
    await page.click("#sign-out");
    await page.waitForSelector("#api-key");
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
    await page.reload();
    await page.waitForSelector("#api-key"); // nothing kept: the page asks for a key again
  });

  test("the admin's page asked nothing of another origin and logged no console error", () => {
    expect(requests.length).toBeGreaterThan(10);
    const origin = new URL(server.url).origin;
    expect(requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith("data:"))).toEqual([]);
    expect(consoleErrors).toEqual([]);
  });

  test("a key without campaigns:read sees the campaigns page disabled with the reason", async () => {
    const p = await context.newPage();
    p.setDefaultTimeout(10_000);
    const errors: string[] = [];
    const urls: string[] = [];
    watch(p, errors, urls);
    await signIn(p, limitedKey);
    await p.waitForSelector("#balance");
    expect(await p.getAttribute("#nav-campaigns", "class")).toContain("disabled");
    expect(await p.textContent("#nav-campaigns")).toContain("needs campaigns:read");
    await p.click("#nav-campaigns");
    expect(await p.textContent("#disabled-reason")).toContain("Needs the scope campaigns:read");
    // The page did not even ask: the API would have answered 403.
    expect(urls.some((u) => u.includes("/api/public/v1/campaigns"))).toBe(false);
    await shot(p, "campaigns-disabled");
    expect(errors).toEqual([]);
    await p.close();
  });

  test("a key with campaigns:read but not campaigns:write sees the list and the New campaign button disabled", async () => {
    const p = await context.newPage();
    p.setDefaultTimeout(10_000);
    const errors: string[] = [];
    watch(p, errors, []);
    await signIn(p, viewerKey);
    await p.waitForSelector("#balance");
    await p.click("#nav-campaigns");
    await p.waitForSelector("tr:has-text('Winter newsletter')");
    expect(await p.getAttribute("#new-campaign", "aria-disabled")).toBe("true");
    expect(await p.getAttribute("#new-campaign", "href")).toBeNull();
    expect(await p.getAttribute("#new-campaign", "title")).toContain("campaigns:write");
    expect(errors).toEqual([]);
    await p.close();
  });

  test("a wrong key is refused", async () => {
    const p = await context.newPage();
    p.setDefaultTimeout(10_000);
    await signIn(p, "sb_live_not_a_real_key");
    await p.waitForSelector(".signin .error:has-text('refused')");
    expect(await p.evaluate(() => sessionStorage.length)).toBe(0);
    await p.close();
  });
});
