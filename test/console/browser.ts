import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

/** Headless Debian chromium for the console tests: launch, screenshots, axe-core, CSP watch. */

export const CI = process.env.CI === 'true';
export const chromiumPath = spawnSync('sh', ['-c', 'command -v chromium']).stdout?.toString().trim() ?? '';
export const SHOTS = '/tmp/console-shots';

export const DESKTOP = { width: 1280, height: 860 };
export const PHONE = { width: 390, height: 844 };

type T = { teardown(fn: () => unknown): void; comment(...m: unknown[]): void; fail(m: string): void; passing?(): boolean };

/** The last lines each page logged (console, page errors, failed requests), for a failed test's report. */
const logs = new WeakMap<Page, string[]>();

/**
 * After a failed test, what each open page showed: its URL, its text and its last log lines, as
 * comments in the test's output (a CI log is all there is of a run on a clean machine), and a
 * screenshot `failed-N.png` in SHOTS.
 */
async function reportPages(browser: Browser, t: T) {
  let n = 0;
  for (const context of browser.contexts())
    for (const page of context.pages()) {
      n++;
      const text = await page.evaluate(() => document.body?.innerText ?? '').catch((e: Error) => `(unreadable: ${e.message})`);
      await page.screenshot({ path: join(SHOTS, `failed-${n}.png`) }).catch(() => {});
      t.comment(`page ${n} at ${page.url()} showed:\n${text.slice(0, 1500)}\nits last log lines:\n${(logs.get(page) ?? []).join('\n')}`);
    }
}

/** The browser, or null (with the reason printed) when chromium is missing outside CI. */
export async function launch(t: T): Promise<Browser | null> {
  if (!chromiumPath) {
    if (CI) t.fail('chromium is not installed: CI must drive the console in a browser (apt-get install chromium)');
    else t.comment('skipped: chromium is not installed (apt-get install chromium); CI=true makes this a failure');
    return null;
  }
  mkdirSync(SHOTS, { recursive: true });
  const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'] });
  t.teardown(async () => {
    if (t.passing && !t.passing()) await reportPages(browser, t);
    await browser.close();
  });
  return browser;
}

export interface Tab {
  context: BrowserContext;
  page: Page;
  /** Content Security Policy violations and page errors seen so far. */
  problems: string[];
}

export async function open(browser: Browser, url: string, opts: { viewport?: { width: number; height: number }; colorScheme?: 'light' | 'dark' } = {}): Promise<Tab> {
  const context = await browser.newContext({ viewport: opts.viewport ?? DESKTOP, colorScheme: opts.colorScheme ?? 'light', acceptDownloads: true });
  const page = await context.newPage();
  const problems: string[] = [];
  const log: string[] = [];
  logs.set(page, log);
  const keep = (line: string) => log.push(line) > 30 && log.shift();
  page.on('console', (m) => {
    keep(`console.${m.type()}: ${m.text()}`);
    if (/Content Security Policy|Refused to/i.test(m.text())) problems.push(m.text());
  });
  page.on('pageerror', (e) => {
    keep(`page error: ${e.message}`);
    problems.push(`page error: ${e.message}`);
  });
  page.on('requestfailed', (r) => keep(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText ?? ''}`));
  page.on('response', (r) => r.status() >= 400 && keep(`${r.status()} ${r.request().method()} ${r.url()}`));
  page.on('dialog', (d) => void d.accept());
  await page.goto(url);
  return { context, page, problems };
}

export async function shot(page: Page, name: string) {
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core's serious and critical findings on the page as it is, one line each. Evaluated through
 * the DevTools protocol, which the page's CSP does not govern (the console itself stays strict).
 */
export async function axe(page: Page): Promise<string[]> {
  if ((await page.evaluate('typeof window.axe')) !== 'object') await page.evaluate(axeSource);
  const result: any = await page.evaluate('window.axe.run(document, { resultTypes: ["violations"] })');
  return result.violations
    .filter((v: any) => v.impact === 'serious' || v.impact === 'critical')
    .map((v: any) => `${v.id}: ${v.help} (${v.nodes.map((n: any) => n.target.join(' ')).slice(0, 3).join('; ')})`);
}

/** Sign in on the sign-in page with `key` and wait for the shell. */
export async function signIn(page: Page, key: string) {
  await page.getByLabel('API key').fill(key);
  await page.getByLabel('API key').press('Enter');
  await page.getByRole('navigation', { name: 'Pages' }).waitFor();
}

/** Type `text` in the composer and press Enter. */
export async function sendMessage(page: Page, text: string) {
  await page.getByLabel('Message', { exact: true }).fill(text);
  await page.getByLabel('Message', { exact: true }).press('Enter');
}
