import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import t from 'tap';
import { launch, open } from '../console/browser.js';
import { build } from '../helpers/app.js';
import { cleanEnv, runCli } from '../helpers/cli.js';
import { waitFor } from '../helpers/wait.js';
import { oidcEnv, startProvider } from './oidc.js';

/**
 * `agentsvc login` through a browser and a loopback redirect (docs/identity.md "The terminal"),
 * against a real oidc-provider whose discovery has no device_authorization_endpoint, the browser
 * step in headless Chromium: the fallback, PKCE S256, the credential at mode 0600 used by a client
 * command, and a wrong state, a refused consent, a timeout (no browser to open) and a taken --port
 * each ending with one line, nothing stored.
 */

t.setTimeout(120_000);

/** A terminal of its own: empty config and home, and `$BROWSER` a script noting the URL it was asked to open. */
function terminal(t: { teardown(fn: () => unknown): void }) {
  const dir = mkdtempSync(join(tmpdir(), 'agentsvc-login-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const opened = join(dir, 'opened');
  const opener = join(dir, 'open-browser');
  writeFileSync(opener, `#!/bin/sh\nprintf '%s' "$1" > '${opened}'\n`);
  chmodSync(opener, 0o755);
  mkdirSync(join(dir, 'home'));
  return {
    env: { ...cleanEnv(), XDG_CONFIG_HOME: join(dir, 'config'), AGENTSVC_HOME: join(dir, 'home'), BROWSER: opener },
    file: join(dir, 'config', 'agentsvc', 'credentials.json'),
    /** The URL the CLI opened the browser on. */
    opened: () => waitFor(() => existsSync(opened) && readFileSync(opened, 'utf8'), { what: 'the CLI to open a browser', timeoutMs: 20_000 }),
  };
}

/** The provider's login form as a person fills it. */
async function logIn(page: Page, login: string) {
  await page.locator('input[name="login"]').fill(login);
  await page.locator('input[name="password"]').fill('x');
  await page.getByRole('button', { name: 'Sign-in' }).click();
}

const lastLine = (s: string) => s.trim().split('\n').at(-1);

t.test('agentsvc login through a browser, at a provider without the device flow', async (t) => {
  const provider = await startProvider(t);
  const app = await build(t, oidcEnv(provider.issuer));
  await provider.setup(app.url, { deviceFlow: false, loopback: true });
  const browser = await launch(t);
  if (!browser) return;

  t.test('the service: no device flow here, and only a loopback redirect URI', async (t) => {
    const device = await app.api('/api/auth/device', { method: 'POST', key: null });
    t.equal(device.status, 409);
    t.equal((await device.json()).code, 'DEVICE_FLOW_UNAVAILABLE');
    const challenge = 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM';
    for (const redirect_uri of ['http://evil.example:8000/callback', 'https://127.0.0.1:8000/callback', 'http://127.0.0.1:8000/other', 'http://127.0.0.1/callback', 'http://localhost:8000/callback']) {
      const r = await app.api('/api/auth/loopback', { method: 'POST', key: null, json: { redirect_uri, code_challenge: challenge } });
      t.equal(r.status, 422, `${redirect_uri} is refused`);
    }
    const ok = await app.api('/api/auth/loopback', { method: 'POST', key: null, json: { redirect_uri: 'http://[::1]:8000/callback', code_challenge: challenge } });
    t.equal(ok.status, 200, 'IPv6 loopback is a loopback too');
    const plain = await app.api('/api/auth/loopback', { method: 'POST', key: null, json: { redirect_uri: 'http://127.0.0.1:8000/callback', code_challenge: 'plain' } });
    t.equal(plain.status, 422, 'only an S256 challenge');
  });

  t.test('falls back to the browser, stores the credential at 0600, a client command uses it', async (t) => {
    const term = terminal(t);
    const login = runCli(['login', '--url', app.url], term.env);
    const url = new URL(await term.opened());
    t.match(login.err(), /The provider offers no device code: signing in through a browser\./);
    t.ok(login.err().includes(url.href), 'the URL is printed too, for a terminal without a browser');
    t.equal(url.origin, provider.issuer);
    t.equal(url.searchParams.get('code_challenge_method'), 'S256');
    t.match(url.searchParams.get('code_challenge'), /^[A-Za-z0-9_-]{43}$/);
    t.ok(url.searchParams.get('state') && url.searchParams.get('nonce'), 'a state and a nonce');
    const redirect = url.searchParams.get('redirect_uri') ?? '';
    t.match(redirect, /^http:\/\/127\.0\.0\.1:\d+\/callback$/, 'an ephemeral loopback port');

    const { page } = await open(browser, url.href);
    await logIn(page, 'bob');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Signed in' }).waitFor();
    t.ok(page.url().startsWith(`${redirect}?`), 'the provider sent the browser back to the loopback listener');
    t.equal(await page.locator('#message').textContent(), `Signed in to ${app.url} as bob (member). You can close this tab.`);
    t.equal(await login.done, 0, `login exits 0 (${login.err()})`);
    t.match(login.out(), new RegExp(`signed in to ${app.url} as bob \\(member\\); credentials in ${term.file}`));

    t.equal(statSync(term.file).mode & 0o777, 0o600, 'the credential file is mode 0600');
    const stored = JSON.parse(readFileSync(term.file, 'utf8'))[app.url];
    t.match(stored, { token: /^sgt-/, username: 'bob' });
    const made = await (await app.api('/api/sessions', { method: 'POST', key: stored.token, json: { intent: 'from a browser login' } })).json();
    const list = runCli(['sessions', 'list', '--url', app.url, '--json'], term.env);
    t.equal(await list.done, 0, `sessions list exits 0 (${list.err()})`);
    t.ok(list.out().includes(made.session_id), 'sessions list runs as bob, with the stored credential');

    // The request was taken by the exchange: the same state again finds nothing; the listener is gone.
    const again = await app.api('/api/auth/loopback/token', { method: 'POST', key: null, json: { state: url.searchParams.get('state'), code_verifier: 'a'.repeat(43), code: 'x' } });
    t.equal(again.status, 400);
    t.equal((await again.json()).code, 'SIGNIN_EXPIRED');
    await t.rejects(fetch(redirect), 'the loopback listener is closed');
  });

  t.test('a wrong state: one line, exit 1, nothing stored', async (t) => {
    const term = terminal(t);
    const login = runCli(['login', '--browser', '--url', app.url], term.env);
    const redirect = new URL(await term.opened()).searchParams.get('redirect_uri');
    const forged = await fetch(`${redirect}?code=forged-code&state=not-the-state`);
    t.equal(forged.status, 400);
    t.match(await forged.text(), /wrong state/);
    t.equal(await login.done, 1);
    t.equal(lastLine(login.err()), 'agentsvc: the browser came back with a wrong state (not the sign-in this login started); nothing stored');
    t.notOk(existsSync(term.file), 'no credential file');
  });

  t.test('consent refused at the provider (access_denied): one line, exit 1, nothing stored, audited', async (t) => {
    const term = terminal(t);
    const login = runCli(['login', '--browser', '--url', app.url], term.env);
    const { page } = await open(browser, await term.opened());
    // alice has never consented: the provider asks, and she cancels.
    await logIn(page, 'alice');
    await page.getByRole('button', { name: 'Continue' }).waitFor();
    await page.getByRole('link', { name: '[ Cancel ]' }).click();
    await page.getByRole('heading', { name: 'Sign-in failed' }).waitFor();
    t.match(await page.locator('#message').textContent(), /^the provider refused the sign-in \(access_denied: End-User aborted interaction\) \(ACCESS_DENIED\)\. Nothing was stored\.$/);
    t.equal(await login.done, 1);
    t.equal(lastLine(login.err()), 'agentsvc: the provider refused the sign-in (access_denied: End-User aborted interaction) (ACCESS_DENIED)');
    t.notOk(existsSync(term.file), 'no credential file');
    const audit = await (await app.api('/api/admin/identity-audit?action=signin_failed')).json();
    t.match(audit.items[0], { action: 'signin_failed', detail: { reason: 'loopback_access_denied' } });
  });

  t.test('no browser to open, nobody comes back in time: said, then one line, exit 1, nothing stored', async (t) => {
    const term = terminal(t);
    const login = runCli(['login', '--browser', '--timeout', '1', '--url', app.url], { ...term.env, BROWSER: '/nonexistent/browser' });
    t.equal(await login.done, 1);
    const lines = login.err().trim().split('\n');
    t.match(lines[1], /^http:\/\/127\.0\.0\.1:\d+\/auth\?/, 'the URL is printed to open by hand');
    t.equal(lines[2], 'Could not open a browser (/nonexistent/browser: spawn /nonexistent/browser ENOENT): open the URL above yourself.');
    t.equal(lines.at(-1), 'agentsvc: no sign-in came back from the browser within 1 s; run agentsvc login again');
    t.notOk(existsSync(term.file), 'no credential file');
  });

  t.test('--port already taken: one line, exit 1', async (t) => {
    const busy = createServer();
    await new Promise<void>((done) => busy.listen(0, '127.0.0.1', done));
    t.teardown(() => busy.close());
    const port = (busy.address() as { port: number }).port;
    const term = terminal(t);
    const login = runCli(['login', '--browser', '--port', String(port), '--url', app.url], term.env);
    t.equal(await login.done, 1);
    t.equal(login.err().trim(), `agentsvc: port ${port} on 127.0.0.1 is in use; give another --port (or 0 for any)`);
  });
});
